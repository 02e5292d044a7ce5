"""A store that loses one of its parts answers partially: the nodes it lacks keep their last
window and turn stale (never idle), the others stay fresh, and all is fresh again once the part
is back. The store is real: a Prometheus front over two Prometheus shards (store_support.py)."""

from __future__ import annotations

import re
import time

import pytest
import requests

from scheduler.backend.metrics_client import MetricsClient
from scheduler.framework import CycleState, Snapshot
from scheduler.plugins.helpers import loadview
from scheduler.rebalancer.classify import COLD, HOT, UNKNOWN, classify
from scheduler.rebalancer.settings import ResourceRule
from shared import wire
from tests.fixtures.ports import wait_for
from tests.fixtures.thanos import Shard, start_sidecar, thanos_querier, thanos_sidecar
from tests.fixtures.watcher import TEST_SETTINGS
from tests.integration.store_support import Front
from tests.integration.test_dashboard import chromium
from tests.unit.plugin_helpers import make_node
from watcher.config import load

LOAD = {  # node -> (cpu %, memory %), shard a's nodes and shard b's
    "part-a-busy": (85.0, 60.0),
    "part-a-idle": (10.0, 20.0),
    "part-b-busy": (90.0, 70.0),
    "part-b-idle": (5.0, 10.0),
}
ON_B = {"part-b-busy", "part-b-idle"}
ON_A = set(LOAD) - ON_B
# Fresh for as long as the expiry when the load is still (the adaptive horizon's upper bound),
# two polls (horizon_min) once the store says it lacks the node.
TIMING = {"window": 60.0, "expiry": 40.0, "warm_start": False}


class Sharded:
    """Two shards of nodes behind one query endpoint, and how to take shard b away."""

    def __init__(self, kind: str, url: str, stop_b, start_b) -> None:  # noqa: ANN001
        self.kind = kind
        self.url = url
        self.stop_b = stop_b
        self.start_b = start_b


@pytest.fixture(params=["prometheus-front", "thanos"])
def sharded(request, make_exporter, tmp_path):
    """A Prometheus front reading both shards remotely (shard b's Prometheus stopped), or a
    Thanos querier over a sidecar per shard (shard b's sidecar stopped)."""
    exporters = {"a": make_exporter(), "b": make_exporter()}
    for node, (cpu, memory) in LOAD.items():
        exporters["b" if node in ON_B else "a"].set(node, cpu=cpu, memory=memory)
    shards = [Shard(tmp_path / f"shard-{n}", n, [e.target]) for n, e in exporters.items()]
    started = []
    try:
        for shard in shards:
            started.append(shard.start())
        if request.param == "thanos":
            sidecars = [thanos_sidecar(tmp_path / f"sidecar-{s.name}", s) for s in shards]
            started += sidecars
            front = thanos_querier(tmp_path / "querier", sidecars)
            started.append(front)
            back = lambda: start_sidecar(sidecars[1])  # noqa: E731
            yield Sharded(request.param, front.url, sidecars[1].stop, back)
        else:
            front = Front(tmp_path / "front", shards)
            started.append(front.start())
            yield Sharded(request.param, front.url, shards[1].stop, shards[1].start)
    finally:
        for server in reversed(started):
            server.stop()


def serves_b(url: str) -> bool:
    """The store answers the watcher's queries (TEST_SETTINGS' rate range) with every node of
    shard b and no warning."""
    config = load(
        env={}, overrides={"prometheus_url": url, "rate_range": TEST_SETTINGS["rate_range"]}
    )
    for spec in config.metric_specs():
        params = {"query": spec.query}
        doc = requests.get(f"{url}/api/v1/query", params=params, timeout=10).json()
        nodes = {item["metric"].get("instance") for item in doc["data"]["result"]}
        if doc.get("warnings") or not ON_B <= nodes:
            return False
    return True


def states(watcher) -> dict[str, dict]:
    return watcher.json("/api/v1/nodes")["nodes"]


def check_never_idle(nodes: dict[str, dict]) -> None:
    """Every value the watcher gives is the node's true load, kept or new, never a zero."""
    for node, doc in nodes.items():
        for key, true in zip(("cpu", "memory"), LOAD[node], strict=True):
            metric = doc["metrics"][key]
            assert abs(metric["latest"] - true) < 3 and abs(metric["avg"] - true) < 3, (node, doc)


def complete_polls_until(watcher, done, timeout: float) -> list[float]:  # noqa: ANN001
    """The times of the complete polls (ok, not partial) the watcher made before `done()`."""
    complete: list[float] = []
    seen: set[float] = set()

    def record() -> None:
        last = watcher.status()["lastPoll"]
        if last["time"] not in seen:
            seen.add(last["time"])
            if last["ok"] and not last["partial"]:
                complete.append(last["time"])

    def look() -> bool:
        record()
        return done()

    wait_for(look, timeout=timeout, interval=0.1, what="shard b's nodes fresh again")
    record()  # the poll that made them fresh counts too
    return complete


def scheduler_view(watcher) -> dict[str, tuple[str, str, float]]:
    """node -> (rebalancer's class, the cpu fallback's reason, its weight), through the
    scheduler's own client and helpers."""
    client = MetricsClient(watcher.url, timeout=10)
    assert client.refresh()
    loads = client.loads()
    snap = Snapshot(nodes={}, loads=loads, now=time.time())
    rules = (ResourceRule("cpu", high=80.0, low=50.0), ResourceRule("memory", high=80.0, low=50.0))
    view = classify(LOAD, loads, rules, "absolute")
    out = {}
    for node in LOAD:
        used = loadview.usage(CycleState(), make_node(node, cpu="4", memory="16Gi"), snap, "cpu")
        out[node] = (view.state[node], used.reason, used.weight)
    return out


def test_a_lost_shard_leaves_its_nodes_stale_never_idle(sharded, make_watcher, tmp_path):
    dashboard = sharded.kind == "prometheus-front"
    watcher = make_watcher(sharded.url, **TIMING)
    watcher.wait_nodes(sorted(LOAD), timeout=60)
    wait_for(
        lambda: {n["state"] for n in states(watcher).values()} == {"fresh"},
        timeout=30,
        what="every node fresh",
    )
    check_never_idle(states(watcher))
    before = scheduler_view(watcher)
    assert before["part-a-busy"][:2] == (HOT, loadview.FRESH)
    assert before["part-b-busy"][:2] == (HOT, loadview.FRESH)

    sharded.stop_b()
    status = wait_for(
        lambda: (s := watcher.status())["lastPoll"].get("partial") and s,
        timeout=20,
        what="a poll marked partial",
    )
    assert status["lastPoll"]["ok"] is True
    assert set(status["lastPoll"]["partial"]) == {"cpu", "memory"}

    def b_stale() -> dict | None:
        nodes = states(watcher)
        check_never_idle(nodes)  # at every look while the shard is away
        assert all(nodes[n]["state"] == "fresh" for n in ON_A), nodes
        return nodes if all(nodes[n]["state"] == "stale" for n in ON_B) else None

    wait_for(b_stale, timeout=20, what="shard b's nodes stale")
    status = watcher.status()
    assert status["lastPoll"]["lacking"] == {"cpu": 2, "memory": 2}
    assert status["counters"]["partialAnswers"]["cpu"] >= 1
    metrics = watcher.get("/metrics").text
    assert "ballast_watcher_poll_partial 1.0" in metrics
    assert 'ballast_watcher_partial_answers_total{metric="cpu"}' in metrics
    # load-watcher's envelope still carries them, at their last values.
    asked = "/watcher?host=part-b-busy&operators=AVG,Latest"
    envelope = watcher.json(asked)["data"]["NodeMetricsMap"]["part-b-busy"]
    cpu = {m["operator"]: m["value"] for m in envelope["metrics"] if m["type"] == wire.CPU}
    assert cpu[wire.AVG] > 85 and cpu[wire.LATEST] > 85

    if dashboard:  # the poll line says so (one store is enough: the page reads lastPoll)
        dom = chromium("--virtual-time-budget=5000", "--dump-dom", watcher.url, tmp_path=tmp_path)
        poll = re.search(r'<b id="poll"[^>]*>[^<]*</b>', dom.stdout)
        assert poll and 'data-partial="true"' in poll.group() and "partial: " in poll.group(), poll

    # The scheduler falls back for shard b's nodes only; the rebalancer leaves them unknown.
    view = scheduler_view(watcher)
    for node in ON_B:
        rebalancer, reason, weight = view[node]
        assert (rebalancer, reason) == (UNKNOWN, loadview.STALE) and weight < 1.0, view
    assert view["part-a-busy"] == (HOT, loadview.FRESH, 1.0)
    assert view["part-a-idle"] == (COLD, loadview.FRESH, 1.0)

    # The shard comes back: fresh within two polls of the store having the data again.
    sharded.start_b()
    # The store has the data again once the watcher's own queries return shard b's nodes, with
    # no warning, twice a second apart: a shard just restarted answers a moment from the samples
    # it had before stopping, then not until it has scraped twice.
    wait_for(
        lambda: serves_b(sharded.url) and (time.sleep(1.0) or serves_b(sharded.url)),
        timeout=30,
        what="the store answering for shard b again",
    )
    # Counted in polls whose answer was complete: on a loaded machine the front's remote read
    # of a shard still replaying its WAL can time out again, and such a poll is partial.
    complete = complete_polls_until(watcher, lambda: all(
        states(watcher)[n]["state"] == "fresh" for n in ON_B), timeout=30)  # fmt: skip
    assert len(complete) <= 2, complete
    status = watcher.status()
    assert status["lastPoll"]["partial"] is None and status["lastPoll"]["lacking"] is None
    check_never_idle(states(watcher))
