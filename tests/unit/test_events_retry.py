"""Event writes are tried again while the API server is unreachable or answers 5xx/429."""

import pytest
from kubernetes import client

from scheduler.kube import events
from scheduler.kube.events import EventRecorder, _Write
from scheduler.kube.kubeapi import Answer

WRITE = _Write("POST", "/apis/events.k8s.io/v1/namespaces/ns/events", {}, "event Scheduled")


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(events, "RETRY_FIRST_S", 0.0)


def recorder_answering(outcomes):
    """A recorder whose sends give `outcomes` in turn (an exception is raised)."""
    rec = EventRecorder(client.ApiClient(), "me")
    sent = []

    def send(write):
        outcome = outcomes[len(sent)]
        sent.append(write)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    rec._send = send
    return rec, sent


def test_outage_then_accepted():
    rec, sent = recorder_answering(
        [ConnectionRefusedError(), Answer(503, b""), Answer(429, b""), Answer(201, b"")]
    )
    assert rec._deliver(WRITE).status == 201
    assert len(sent) == 4


def test_client_errors_are_not_retried():
    rec, sent = recorder_answering([Answer(404, b""), Answer(201, b"")])
    assert rec._deliver(WRITE).status == 404
    assert len(sent) == 1


def test_gives_up_after_send_tries():
    rec, sent = recorder_answering([ConnectionRefusedError()] * events.SEND_TRIES)
    with pytest.raises(ConnectionRefusedError):
        rec._deliver(WRITE)
    assert len(sent) == events.SEND_TRIES


def test_a_stopping_recorder_tries_once():
    rec, sent = recorder_answering([Answer(503, b""), Answer(201, b"")])
    rec._stopping = True
    assert rec._deliver(WRITE).status == 503
    assert len(sent) == 1
