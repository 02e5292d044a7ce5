"""A PodScheduled=False patch never lands on a pod bound since it was queued: dropped at send
time when the pod was scheduled after it, refused by its resourceVersion when the binding beat
it to the API server."""

import json

import pytest
from kubernetes import client

from scheduler.kube import events
from scheduler.kube.events import EventRecorder
from scheduler.kube.kubeapi import Answer
from tests.unit.test_events import pod

MESSAGE = "0/3 nodes are available: 3 Insufficient cpu."


def versioned(rv="5"):
    p = pod()
    p.raw = {"metadata": {"uid": p.uid, "resourceVersion": rv}}
    return p


def patch_of(rec):
    writes = []
    while not rec._queue.empty():
        writes.append(rec._queue.get_nowait())
    (patch,) = [w for w in writes if w.method == "PATCH"]
    return patch


def test_the_patch_carries_the_version_the_scheduler_saw():
    rec = EventRecorder(client.ApiClient(), "me")
    rec.failed(versioned("5"), MESSAGE)
    assert patch_of(rec).body["metadata"] == {"resourceVersion": "5"}
    rec.failed(pod(uid="u2"), MESSAGE)  # no version known: no precondition
    assert "metadata" not in patch_of(rec).body


def test_a_patch_queued_before_the_pod_was_scheduled_is_dropped():
    rec = EventRecorder(client.ApiClient(), "me")
    rec.failed(versioned(), MESSAGE)
    stale = patch_of(rec)
    rec.scheduled(versioned(), "n1")
    assert rec._superseded(stale)
    rec.failed(versioned(), MESSAGE)  # a failure after the scheduling is written
    assert not rec._superseded(patch_of(rec))


@pytest.fixture
def api_answers(monkeypatch):
    """kubeapi.request answering from a script; the requests made are kept."""
    script, made = [], []

    def request(api, method, path, body=None, timeout=None, content_type=""):
        made.append((method, path, body))
        return script.pop(0)

    monkeypatch.setattr(events.kubeapi, "request", request)
    return script, made


def pod_json(node="", rv="9", uid="u1"):
    doc = {"metadata": {"uid": uid, "resourceVersion": rv}, "spec": {"nodeName": node}}
    return Answer(200, json.dumps(doc).encode())


@pytest.mark.parametrize("now", [pod_json(node="n1"), pod_json(uid="other")])
def test_refused_for_a_pod_bound_or_recreated_meanwhile(api_answers, now):
    script, made = api_answers
    script += [Answer(409, b"{}"), now]
    rec = EventRecorder(client.ApiClient(), "me")
    rec.failed(versioned(), MESSAGE)
    assert rec._send(patch_of(rec)).status == 409
    assert [m for m, _, _ in made] == ["PATCH", "GET"]


def test_refused_for_a_pod_changed_otherwise_then_patched_at_its_version(api_answers):
    script, made = api_answers
    script += [Answer(409, b"{}"), pod_json(rv="9"), Answer(200, b"{}")]
    rec = EventRecorder(client.ApiClient(), "me")
    rec.failed(versioned("5"), MESSAGE)
    assert rec._send(patch_of(rec)).ok
    (_, _, first), _, (_, _, second) = made
    assert first["metadata"]["resourceVersion"] == "5"
    assert second["metadata"]["resourceVersion"] == "9"
    assert second["status"] == first["status"]
