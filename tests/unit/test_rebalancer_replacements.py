"""A move's replacement stays booked on its target until it is bound (replacements.py): rounds
driven on a fake clock and a fake watcher, the judge and the actor real, the Eviction always
succeeding; the test binds the replacement in the cache when it wants it bound."""

from __future__ import annotations

import time
from typing import Any

import pytest

from scheduler.framework import MetricStats, NodeLoad, PodInfo
from scheduler.framework.clusterindex import REPLICA_SETS, STATEFUL_SETS
from scheduler.framework.resources import pod_info
from scheduler.framework.snapshot import snapshot_of
from scheduler.rebalancer.runtime import Options
from tests.unit.test_rebalancer import node, pod
from tests.unit.test_rebalancer_rest import wire
from tests.unit.test_rebalancer_safety import offline_rebalancer, replica_set

WINDOW = 60.0  # the watcher's window (its expiry)
INTERVAL = 2.0  # seconds between rounds; the watcher has a new sample each round
TRACE_LAG = 0.25  # the trace's --provider-lag: 15 s over 60 (docs/trace.md)


class Watcher:
    """Each node's CPU (window average and newest sample alike), set by the test; every sample
    one second old at each round."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.cpu = {"hot1": 90.0, "hot2": 60.0, "cold1": 40.0, "cold2": 44.0}

    def loads(self) -> dict[str, NodeLoad]:
        sample = self.clock[0] - 1.0
        return {
            n: NodeLoad({"cpu": MetricStats(v, 1.0, v, "fresh", 1.0, sample, expiry=WINDOW)},
                        "ballast")
            for n, v in self.cpu.items()
        }  # fmt: skip


class Scene:
    """Two nodes that turn hot one after the other, each with one movable pod (`a` on hot1,
    `b` on hot2, each of its own workload of `kind`), and two cold nodes, cold1 the cooler."""

    def __init__(self, monkeypatch: Any, lag: float, kind: str = "ReplicaSet") -> None:
        self.clock = [1_800_000_000.0]
        self.kind = kind
        self.r = r = offline_rebalancer(Options(provider_lag=lag))
        r.settings.interval = INTERVAL
        grace = {"terminationGracePeriodSeconds": 60} if kind == "StatefulSet" else {}
        self.a = pod("a", cpu="400m", owner=kind, **grace)
        self.b = pod("b", cpu="400m", owner=kind, **grace)
        snap = snapshot_of(
            [node(n) for n in ("hot1", "hot2", "cold1", "cold2")],
            [(self.a, "hot1"), (self.b, "hot2")],
        )
        objects = STATEFUL_SETS if kind == "StatefulSet" else REPLICA_SETS
        for name in ("a", "b"):
            snap.cluster.put(objects, f"app/{name}-owner", replica_set(f"{name}-owner", 3))
        self.watcher = Watcher(self.clock)
        wire(monkeypatch, r, snap, self.watcher, self.clock)

    def rounds(self, n: int) -> None:
        for _ in range(n):
            self.clock[0] += INTERVAL
            self.r.round()

    def targets(self) -> dict[str, str]:
        """pod name -> the target of its eviction."""
        return {
            d["pod"].split("/")[1]: d["target"]
            for d in self.r.decisions.latest()
            if d["action"] == "evict"
        }

    def bind(self, name: str, owner: str, node_name: str) -> PodInfo:
        """A replacement of `owner`'s bound to `node_name` now, as the cache would see it."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock[0]))
        raw = pod(name, cpu="400m", owner=self.kind).raw
        raw["metadata"]["ownerReferences"][0]["name"] = owner
        raw["spec"]["nodeName"] = node_name
        raw["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}
        ]
        replacement = pod_info(raw)
        self.r.cache.nodes[node_name].add_pod(replacement)
        self.r.cache.index.add_pod(replacement, node_name)
        return replacement


# The trace's lag, a ReplicaSet; the deployed lag, a StatefulSet whose replacement waits for its
# pod's 60 s grace period (20 s of rounds: still unbound past the 15 s lag).
@pytest.mark.parametrize(("lag", "kind", "wait"), [(TRACE_LAG, "ReplicaSet", 0),
                                                   (15.0, "StatefulSet", 10)])  # fmt: skip
def test_a_replacement_not_yet_bound_stays_booked_on_its_target(monkeypatch, lag, kind, wait):
    s = Scene(monkeypatch, lag, kind)
    s.rounds(3)  # hot1 confirmed: `a` goes to the cooler cold node
    assert s.targets() == {"a": "cold1"}
    s.rounds(wait)
    # hot2 turns hot while a's replacement is still unbound: cold1 is 40 % on its samples, but
    # a's replacement is on its way there. Read without it, cold1 looked the coolest and took
    # `b` too (two replacements on one node, each judged as though the other did not exist).
    s.watcher.cpu["hot2"] = 90.0
    s.rounds(3)
    assert s.targets() == {"a": "cold1", "b": "cold2"}


def test_the_booking_moves_to_where_the_replacement_was_bound_and_ends_on_a_later_sample(
    monkeypatch,
):
    s = Scene(monkeypatch, TRACE_LAG)
    s.rounds(3)
    assert s.targets() == {"a": "cold1"}
    replacements = s.r.memory.replacements
    [share] = replacements.cpu_by_node(s.watcher.loads(), s.clock[0]).values()
    s.rounds(5)  # 10 s unbound: still booked on its target
    assert replacements.cpu_by_node(s.watcher.loads(), s.clock[0]) == {"cold1": share}
    # The scheduler put it on cold2 instead: booked there from its bind, not on cold1.
    s.bind("a-x", "a-owner", "cold2")
    bound = s.clock[0]
    s.clock[0] += 0.1
    s.r.round()
    assert replacements.pending == {}
    # Samples from before the bind plus the lag do not show it yet.
    stale = {n: load for n, load in s.watcher.loads().items()}
    for load in stale.values():
        load.metrics["cpu"] = MetricStats(40.0, 1.0, 40.0, "fresh", 1.0, bound, expiry=WINDOW)
    assert replacements.cpu_by_node(stale, s.clock[0]) == {"cold2": share}
    s.rounds(1)  # a sample taken after the bind plus the lag: the node's figures show it
    assert replacements.cpu_by_node(s.watcher.loads(), s.clock[0]) == {}


def test_a_replacement_never_bound_is_booked_a_window_at_most(monkeypatch):
    s = Scene(monkeypatch, TRACE_LAG)
    s.rounds(3)
    evicted_at = s.clock[0]
    replacements = s.r.memory.replacements
    assert replacements.pending
    # Another workload's new pod and the victim itself (terminating) are no replacement.
    s.bind("other", "b-owner", "cold1")
    while s.clock[0] + INTERVAL < evicted_at + WINDOW:
        s.rounds(1)
        assert list(replacements.pending) == [s.a.uid]
    s.rounds(1)
    assert replacements.pending == {}


def test_a_stateful_set_s_replacement_is_expected_past_its_grace_period(monkeypatch):
    s = Scene(monkeypatch, 15.0, "StatefulSet")
    s.rounds(3)
    [pending] = s.r.memory.replacements.pending.values()
    assert pending.until == s.clock[0] + 60.0 + WINDOW  # its grace period, then a window
