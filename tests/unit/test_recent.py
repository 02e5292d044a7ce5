"""Recently bound pods: counted until the window shows them, then dropped, nodes included."""

from __future__ import annotations

from scheduler.backend.recent import RecentlyBound
from scheduler.framework import MetricStats, NodeLoad


def load(last_sample: float) -> NodeLoad:
    stats = MetricStats(avg=10, std=1, latest=10, state="fresh", age=0, last_sample=last_sample)
    return NodeLoad(metrics={"cpu": stats}, source="ballast")


def test_counts_until_a_sample_after_bind_plus_lag():
    r = RecentlyBound(provider_lag=10, max_age=300, prune_interval=0)
    r.record("u1", "n1", 1500, bound_at=100)
    r.record("u2", "n1", 500, bound_at=105)
    assert r.cpu_by_node({"n1": load(100)}, now=120) == {"n1": 2000}
    # a sample at 111 is after 100 + 10 but not after 105 + 10
    assert r.cpu_by_node({"n1": load(111)}, now=121) == {"n1": 500}
    assert r.cpu_by_node({"n1": load(116)}, now=122) == {}
    assert r.nodes() == set()  # the node's entry goes too (upstream #583 kept it forever)


def test_without_metrics_entries_expire_by_age():
    r = RecentlyBound(provider_lag=10, max_age=60, prune_interval=0)
    r.record("u1", "n1", 1000, bound_at=100)
    assert r.cpu_by_node({}, now=150) == {"n1": 1000}
    assert r.cpu_by_node({}, now=161) == {}
    assert len(r) == 0


def test_forget_and_rebind_move_the_sum():
    r = RecentlyBound(prune_interval=0)
    r.record("u1", "n1", 1000, bound_at=100)
    r.record("u1", "n2", 1000, bound_at=101)  # same pod recorded again: moves
    assert r.cpu_by_node({}, now=102) == {"n2": 1000}
    r.forget("u1")
    assert r.cpu_by_node({}, now=103) == {}


def test_pruning_is_skipped_within_the_interval_for_the_same_loads():
    r = RecentlyBound(provider_lag=0, max_age=300, prune_interval=5)
    loads = {"n1": load(50)}
    r.record("u1", "n1", 100, bound_at=100)
    assert r.cpu_by_node(loads, now=101) == {"n1": 100}
    fresh = {"n1": load(200)}
    assert r.cpu_by_node(fresh, now=102) == {}  # new loads object: pruned at once
