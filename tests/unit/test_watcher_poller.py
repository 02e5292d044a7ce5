"""The poller's logic on the in-memory store with a scripted provider (our own interface)."""

from __future__ import annotations

import json
import time

from watcher.config import load
from watcher.errors import ProviderError
from watcher.nodenames import NodeNamer
from watcher.poller import Poller
from watcher.providers.base import Fetch
from watcher.store import MemoryStore

CFG = load(env={"BALLAST_PROMETHEUS_URL": "http://p", "BALLAST_POLL_INTERVAL": "1"})


class Scripted:
    source = "Prometheus"

    def __init__(self, answers: list[Fetch], history: list[Fetch] | None = None) -> None:
        self.answers = answers
        self.past = history or []

    def fetch(self) -> Fetch:
        return self.answers.pop(0)

    def history(self, start: float, end: float, step: float) -> list[Fetch]:
        return self.past

    def close(self) -> None:
        pass


def snapshot(store: MemoryStore) -> dict:
    return json.loads(store.load_snapshot())


def test_partial_answer_updates_what_it_covers():
    now = time.time()
    good = Fetch(now - 1, {"cpu": [("a", "10")], "memory": [("a", "20")]})
    partial = Fetch(
        now,
        {"memory": [("a", "30"), ("b", "NaN")]},
        {"cpu": ProviderError("timeout", "slow")},
    )
    store = MemoryStore(CFG.window)
    poller = Poller(CFG, Scripted([good, partial]), store, NodeNamer(), "me")
    poller.tick()
    poller.tick()
    doc = snapshot(store)
    a = doc["nodes"]["a"]
    assert a["cpu"][5] == 10.0 and a["cpu"][6] == 1  # latest, count: kept from the first poll
    assert a["memory"][5] == 30.0 and a["memory"][6] == 2
    assert "b" not in doc["nodes"]
    assert doc["lastPoll"]["ok"] is False and doc["lastPoll"]["error"] == "cpu: slow"
    assert doc["counters"]["pollErrors"] == {"timeout": 1}
    assert doc["counters"]["rejected"] == {"nan": 1}
    assert doc["lastSuccess"] == now


def test_warm_start_backfills_an_empty_window_and_stores_it():
    now = time.time()
    past = [Fetch(now - 30 + i, {"cpu": [("a", str(i))], "memory": [("a", "5")]}) for i in range(3)]
    store = MemoryStore(CFG.window)
    poller = Poller(
        CFG, Scripted([Fetch(now, {"cpu": [("a", "9")]})], past), store, NodeNamer(), "me"
    )
    poller.tick()
    assert snapshot(store)["nodes"]["a"]["cpu"][6] == 4  # three past samples + this poll
    assert len(store.load_frames(now - 60)) == 4


def test_a_total_failure_still_publishes_status_without_data():
    store = MemoryStore(CFG.window)
    error = ProviderError("unreachable", "connection refused")
    fetch = Fetch(time.time(), {}, {"cpu": error, "memory": error})
    poller = Poller(CFG, Scripted([fetch]), store, NodeNamer(), "me")
    poller.tick()
    doc = snapshot(store)
    assert doc["nodes"] == {} and doc["lastSuccess"] is None
    assert doc["counters"]["pollErrors"] == {"unreachable": 2}
