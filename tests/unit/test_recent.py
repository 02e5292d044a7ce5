"""Recently bound pods: counted in full until the window shows them, then as much as the
window's average still lacks, then dropped, nodes included."""

from __future__ import annotations

from scheduler.backend.recent import RecentlyBound
from scheduler.framework import MetricStats, NodeLoad


def load(last_sample: float) -> NodeLoad:
    stats = MetricStats(avg=10, std=1, latest=10, state="fresh", age=0, last_sample=last_sample)
    return NodeLoad(metrics={"cpu": stats}, source="ballast")


def test_counts_in_full_until_seen_then_as_much_as_the_average_lacks():
    r = RecentlyBound(provider_lag=10, max_age=1000, prune_interval=0)
    r.record("u1", "n1", 1500, bound_at=100)
    r.record("u2", "n1", 600, bound_at=105)
    assert r.cpu_by_node({"n1": load(100)}, now=120) == {"n1": 2100}
    # a sample at 140 is 30 s past 100 + 10 (a tenth of a 300 s window holds u1) and 25 s
    # past 105 + 10
    assert r.cpu_by_node({"n1": load(140)}, now=141) == {"n1": round(1500 * 0.9 + 600 * 275 / 300)}
    assert r.cpu_by_node({"n1": load(410)}, now=411) == {"n1": round(600 * 5 / 300)}
    assert r.cpu_by_node({"n1": load(416)}, now=417) == {}
    assert r.nodes() == set()  # the node's entry goes too (upstream #583 kept it forever)


def test_the_decay_follows_the_windows_expiry_and_forget_stops_it():
    r = RecentlyBound(provider_lag=0, max_age=1000, prune_interval=0)
    stats = MetricStats(avg=10, std=1, latest=10, state="fresh", age=0, last_sample=160, expiry=120)
    r.record("u1", "n1", 1200, bound_at=100)
    loads = {"n1": NodeLoad(metrics={"cpu": stats}, source="ballast")}
    assert r.cpu_by_node(loads, now=161) == {"n1": 600}  # 60 s of a 120 s window
    r.record("u1", "n1", 1200, bound_at=170)  # recorded again: the old entry goes
    assert r.cpu_by_node(loads, now=171) == {"n1": 1200}
    r.forget("u1")
    assert r.cpu_by_node(loads, now=172) == {} and len(r) == 0


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
    # new loads object: pruned at once (100 s of the 300 s window hold it)
    assert r.cpu_by_node(fresh, now=102) == {"n1": 67}
