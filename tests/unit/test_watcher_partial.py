"""Partial answers from a distributed store: how they are read, what the poller makes of them."""

from __future__ import annotations

import json
import time

import pytest

from tests.unit.test_watcher_poller import Scripted
from watcher import snapshot
from watcher.config import load
from watcher.errors import ProviderError
from watcher.lacking import Lacking
from watcher.nodenames import NodeNamer
from watcher.poller import Poller
from watcher.providers.base import Fetch
from watcher.providers.prometheus import parse_answer, partial_note
from watcher.store import MemoryStore
from watcher.window import Frame, Window

CFG = load(env={"BALLAST_PROMETHEUS_URL": "http://p", "BALLAST_POLL_INTERVAL": "1"})
OK = {"status": "success", "data": {"resultType": "vector", "result": []}}


@pytest.mark.parametrize(
    ("extra", "partial"),
    [
        ({}, None),
        ({"isPartial": False}, None),
        ({"isPartial": True}, "isPartial: some storage nodes did not answer"),  # VictoriaMetrics
        ({"isPartial": "true"}, "isPartial: some storage nodes did not answer"),
        # Thanos's partial response, Prometheus's failed remote read
        ({"warnings": ["fetch series for store 10.0.0.7:10901: connection refused"]},
         "fetch series for store 10.0.0.7:10901: connection refused"),
        ({"warnings": "remote_read: dial tcp: connection refused"},
         "remote_read: dial tcp: connection refused"),
        # Notes about the query itself say nothing about missing data.
        ({"warnings": ['PromQL info: metric might not be a counter: "x"']}, None),
        ({"warnings": ["PromQL warning: encountered a mix of histograms and floats"]}, None),
        ({"warnings": []}, None),
        ({"isPartial": True, "warnings": ["PromQL info: x", "store b down"]},
         "isPartial: some storage nodes did not answer; store b down"),
    ],
)  # fmt: skip
def test_partial_note(extra, partial):
    assert partial_note({**OK, **extra}) == partial
    assert parse_answer("u", 200, "", {**OK, **extra}).partial == partial


def test_partial_note_is_short():
    note = partial_note({**OK, "warnings": ["x" * 2000]})
    assert note is not None and len(note) == 300


@pytest.mark.parametrize(
    ("status", "body", "doc", "reason", "words"),
    [
        (401, "Unauthorized", None, "http_401", "check the credentials"),
        (403, "forbidden", None, "http_403", "check the credentials"),
        (200, "<html>", None, "bad_json", "not JSON"),
        (200, "", [1], "bad_json", "JSON object"),
        (400, "", {"status": "error", "error": "parse error"}, "query_error", "parse error"),
        (503, "", {"status": "error", "error": "down"}, "http_error", "down"),
        (200, "", {"status": "success", "data": {}}, "bad_json", "data.result"),
    ],
)
def test_parse_answer_errors(status, body, doc, reason, words):
    with pytest.raises(ProviderError, match=words) as caught:
        parse_answer("http://p/api/v1/query", status, body, doc)
    assert caught.value.reason == reason


def frame(at: float, key: str, values: dict[str, float]) -> Frame:
    return Frame.build(at, {key: values})


def test_lacking_tracks_nodes_a_partial_answer_left_out_until_they_return():
    lacking = Lacking()
    lacking.known({"a": {"cpu": []}, "b": {"cpu": []}, "c": {"memory": []}})
    # A complete answer without b: b just ages (no news that data is missing).
    lacking.update(Fetch(1.0), frame(1.0, "cpu", {"a": 1.0}))
    assert lacking.nodes == {}
    # A partial cpu answer without b: b lacks cpu; c never had cpu, so it lacks nothing.
    lacking.update(Fetch(2.0, partial={"cpu": "store down"}), frame(2.0, "cpu", {"a": 1.0}))
    assert lacking.nodes == {"cpu": {"b"}} and lacking.counts() == {"cpu": 1}
    # A NaN is no answer either.
    lacking.update(
        Fetch(3.0, partial={"cpu": "store down"}),
        frame(3.0, "cpu", {"a": float("nan"), "b": float("nan")}),
    )
    assert lacking.nodes == {"cpu": {"a", "b"}}
    # Back in a (still partial) answer: no longer lacking.
    lacking.update(Fetch(4.0, partial={"cpu": "x"}), frame(4.0, "cpu", {"a": 1.0}))
    assert lacking.nodes == {"cpu": {"b"}}
    # A complete answer that still leaves b out keeps it lacking: it never came back.
    lacking.update(Fetch(5.0), frame(5.0, "cpu", {"a": 1.0}))
    assert lacking.nodes == {"cpu": {"b"}}
    # b leaves the window: nothing to track.
    lacking.known({"a": {"cpu": []}})
    assert lacking.nodes == {} and lacking.counts() == {}


def test_lacking_nodes_get_the_shortest_horizon():
    window = Window(300.0)
    now = time.time()
    for i in range(5):  # flat load: the adaptive horizon would trust it for the whole expiry
        window.add(Frame.build(now - 10 + i, {"cpu": {"a": 50.0, "b": 80.0}}))
    specs = [s for s in CFG.metric_specs() if s.key == "cpu"]
    low, high = CFG.horizon_bounds
    horizon = snapshot.STAT_FIELDS.index("horizon")
    plain = snapshot.node_stats(window, specs, CFG)
    assert plain["a"]["cpu"][horizon] == plain["b"]["cpu"][horizon] == high
    cut = snapshot.node_stats(window, specs, CFG, {"cpu": {"b", "gone"}, "memory": {"a"}})
    assert cut["a"]["cpu"][horizon] == high
    assert cut["b"]["cpu"][horizon] == low
    assert cut["b"]["cpu"][:horizon] == plain["b"]["cpu"][:horizon]  # the values are kept


def poll_doc(store: MemoryStore) -> dict:
    return json.loads(store.load_snapshot())


def test_poller_keeps_left_out_nodes_at_their_last_window_and_marks_the_poll():
    now = time.time()
    full = Fetch(now - 2, {"cpu": [("a", "20"), ("b", "90")], "memory": [("a", "5"), ("b", "6")]})
    partial = Fetch(
        now - 1,
        {"cpu": [("a", "25")], "memory": [("a", "5"), ("b", "6")]},
        partial={"cpu": "isPartial: some storage nodes did not answer"},
    )
    back = Fetch(now, {"cpu": [("a", "30"), ("b", "91")], "memory": [("a", "5"), ("b", "6")]})
    store = MemoryStore(CFG.window)
    poller = Poller(CFG, Scripted([full, partial, back]), store, NodeNamer(), "me")
    poller.tick()
    poller.tick()
    doc = poll_doc(store)
    latest, horizon = snapshot.STAT_FIELDS.index("latest"), snapshot.STAT_FIELDS.index("horizon")
    low, high = CFG.horizon_bounds
    b = doc["nodes"]["b"]
    assert b["cpu"][latest] == 90.0  # busy, never read as idle
    assert b["cpu"][horizon] == low and b["memory"][horizon] > low
    assert doc["nodes"]["a"]["cpu"][latest] == 25.0
    last = doc["lastPoll"]
    assert last["ok"] is True
    assert last["partial"] == {"cpu": "isPartial: some storage nodes did not answer"}
    assert last["lacking"] == {"cpu": 1}
    assert doc["counters"]["partialAnswers"] == {"cpu": 1}

    poller.tick()
    doc = poll_doc(store)
    assert doc["nodes"]["b"]["cpu"][latest] == 91.0
    assert doc["nodes"]["b"]["cpu"][horizon] > low
    assert doc["lastPoll"]["partial"] is None and doc["lastPoll"]["lacking"] is None
    assert doc["counters"]["partialAnswers"] == {"cpu": 1}
