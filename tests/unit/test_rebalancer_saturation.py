"""A node whose CPU is pinned at capacity is hot at once (saturation.py): the setting, the
detection on fresh samples, the plan sized past the clamp, the rest that one saturated sample
ends, and the rounds end to end on a fake clock and a fake watcher (test_rebalancer_rest.py's)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.errors import ConfigError
from scheduler.rebalancer import saturation, settings
from scheduler.rebalancer.classify import HOT, NORMAL, Classification, classify
from scheduler.rebalancer.rest import GONE_KEPT, HOT_AGAIN, STILL_SATURATED, Cooldowns
from scheduler.rebalancer.runtime import Options
from scheduler.rebalancer.saturation import SATURATED, Saturation
from tests.unit.test_rebalancer import RULES, judge, pod, scene
from tests.unit.test_rebalancer_rest import Scene


# --- the setting ----------------------------------------------------------------------------
def section(**keys: Any) -> settings.RebalancerSettings:
    return settings.parse_section(keys)


def test_saturated_is_off_by_default_and_above_cpu_s_high_when_on():
    assert section().saturated == 0.0
    assert section(saturated=None).saturated == 0.0
    assert section(saturated=95).saturated == 95.0
    with pytest.raises(ConfigError, match=r"rebalancer.saturated: must be above cpu's high \(80\)"):
        section(saturated=80)
    with pytest.raises(ConfigError, match="reads the CPU"):
        section(saturated=95, resources=[{"name": "memory", "high": 80, "low": 50}])
    with pytest.raises(ConfigError, match="rebalancer.saturated: must be 0..100"):
        section(saturated=101)
    # Deviation mode: high is points over the mean, saturation stays percent of the node.
    assert section(saturated=95, thresholds="deviation").saturated == 95.0


# --- detection ------------------------------------------------------------------------------
def view(latest: dict[str, float | None], sample: float, avg: float = 60.0) -> Classification:
    """Every node's window average `avg` (under high) and its newest sample, taken at `sample`;
    None: no fresh figures."""
    out = Classification(high={"cpu": 80.0}, low={"cpu": 50.0})
    for node, figure in latest.items():
        if figure is None:
            out.state[node] = "unknown"
            continue
        out.state[node] = NORMAL
        out.usage[node] = {"cpu": avg}
        out.latest[node] = {"cpu": figure}
        out.sample_time[node] = sample
    return out


def test_consecutive_fresh_samples_at_the_level_make_a_node_saturated():
    s = Saturation()
    assert s.observe(view({"n": 100.0}, 1.0), 95.0, 3) == {}
    assert s.observe(view({"n": 96.0}, 2.0), 95.0, 3) == {}
    assert s.observe(view({"n": 99.0}, 3.0), 95.0, 3) == {"n": 96.0}  # the least of the three
    assert s.observe(view({"n": 100.0}, 4.0), 95.0, 3) == {"n": 96.0}
    assert s.observe(view({"n": 100.0}, 5.0), 95.0, 3) == {"n": 99.0}  # the last three only


def test_the_same_sample_read_again_or_a_break_is_no_saturation():
    s = Saturation()
    for _ in range(5):  # one sample, read every round: one observation
        assert s.observe(view({"n": 100.0}, 1.0), 95.0, 3) == {}
    s.observe(view({"n": 100.0}, 2.0), 95.0, 3)
    s.observe(view({"n": 94.9}, 3.0), 95.0, 3)  # under the level: over high, still a break
    s.observe(view({"n": 100.0}, 4.0), 95.0, 3)
    assert s.observe(view({"n": 100.0}, 5.0), 95.0, 3) == {}
    s.observe(view({"n": None}, 6.0), 95.0, 3)  # no fresh figures: the run starts over
    s.observe(view({"n": 100.0}, 7.0), 95.0, 3)
    assert s.observe(view({"n": 100.0}, 8.0), 95.0, 3) == {}
    assert s.observe(view({"n": 100.0}, 9.0), 95.0, 3) == {"n": 100.0}
    assert s.observe(view({"n": 100.0}, 10.0), 0.0, 3) == {}  # off


def test_a_saturated_node_is_judged_on_its_samples_not_its_window():
    v = view({"pinned": 100.0, "busy": 90.0}, 1.0, avg=60.0)  # both under high by the average
    saturation.mark(v, {"pinned": 97.0})
    assert v.state == {"pinned": HOT, "busy": NORMAL}
    assert v.usage["pinned"]["cpu"] == 97.0 and v.saturated == {"pinned": 97.0}
    assert v.excess("pinned") == {"cpu": 17.0}
    # A window average over the samples' least stays (the larger of the two).
    v = view({"n": 100.0}, 1.0, avg=99.0)
    saturation.mark(v, {"n": 96.0})
    assert v.usage["n"]["cpu"] == 99.0


# --- the plan -------------------------------------------------------------------------------
def test_a_saturated_node_is_planned_past_the_clamp():
    # Measured at 100 % (the clamp), excess 20 points. "a" relieves 22.5 (600m predicted at
    # 900m of 4 CPUs) and covers that alone; planned at 105 % (saturated: 95), the excess is 25
    # and "b" (7.5) must go too.
    a, b = pod("a", cpu="600m"), pod("b", cpu="200m")
    loads = {"hot": 100, "cold1": 20, "cold2": 25, "mid": 70}
    snap, v = scene(loads, [(a, "hot"), (b, "hot")])
    plan = judge(max_per_node=2, saturated=95.0).plan(v, ["hot"], snap)
    assert [m.pod.name for m in plan.moves] == ["a"] and plan.moves[0].reason == ""
    snap, v = scene(loads, [(a, "hot"), (b, "hot")])
    saturation.mark(v, {"hot": 100.0})
    plan = judge(max_per_node=2, saturated=95.0).plan(v, ["hot"], snap)
    assert sorted(m.pod.name for m in plan.moves) == ["a", "b"]
    assert {m.reason for m in plan.moves} == {SATURATED}
    assert plan.moves[0].source_usage["cpu"] == 105.0
    assert plan.moves[0].source_after["cpu"] == pytest.approx(75.0)
    assert plan.moves[0].note().startswith("hot cpu saturated, planned at 105.0% > high 80.0%")
    assert saturation.planned_use(99.0) == 101.0


# --- the rest -------------------------------------------------------------------------------
def pinned_view(sample: float, latest: float) -> Classification:
    v = classify(["n"], {}, RULES, settings.ABSOLUTE)
    v.state, v.usage = {"n": HOT}, {"n": {"cpu": 90.0}}
    v.latest, v.sample_time = {"n": {"cpu": latest}}, {"n": sample}
    return v


@pytest.mark.parametrize(("saturated", "ends_at"), [(True, 18.0), (False, 22.0)])
def test_one_saturated_sample_after_the_move_ends_the_rest_of_a_saturated_node(saturated, ends_at):
    rests = Cooldowns(lag=15.0)
    rests.start("n", 0.0, 75.0, "uid-1", saturated=saturated)
    assert rests.observe(pinned_view(1.0, 100.0), 2.0, set(), 3, 95.0) == {}  # gone: after 17
    assert rests.observe(pinned_view(16.0, 100.0), 16.5, set(), 3, 95.0) == {}  # too early
    ended = {}
    for t in (18.0, 20.0, 22.0):
        ended = rests.observe(pinned_view(t, 100.0), t + 0.5, set(), 3, 95.0)
        if ended:
            assert t == ends_at
            break
    assert list(ended) == ["n"] and not rests.active("n", ends_at + 1.0)
    assert rests.reason("n") == (STILL_SATURATED if saturated else HOT_AGAIN)
    assert rests.saturated() == ({"n": 100.0} if saturated else {})
    if saturated:
        assert ended["n"].startswith("still saturated after the move: a sample since ")


def test_a_post_move_sample_under_the_level_ends_no_rest_at_once():
    rests = Cooldowns(lag=15.0)
    rests.start("n", 0.0, 75.0, "uid-1", saturated=True)
    rests.observe(pinned_view(1.0, 100.0), 2.0, set(), 3, 95.0)
    assert rests.observe(pinned_view(18.0, 90.0), 18.5, set(), 3, 95.0) == {}  # hot, not pinned
    assert list(rests.observe(pinned_view(20.0, 100.0), 20.5, set(), 3, 95.0)) == ["n"]
    # Saturation off: the same samples end it on `consecutive` of them above high.
    rests = Cooldowns(lag=15.0)
    rests.start("n", 0.0, 75.0, "uid-1", saturated=True)
    rests.observe(pinned_view(1.0, 100.0), 2.0, set(), 3, 0.0)
    for t in (18.0, 20.0):
        assert rests.observe(pinned_view(t, 100.0), t + 0.5, set(), 3, 0.0) == {}
    assert list(rests.observe(pinned_view(22.0, 100.0), 22.5, set(), 3, 0.0)) == ["n"]
    assert rests.saturated() == {}


def test_post_move_samples_count_from_the_victim_s_going_as_the_cache_saw_it():
    # --provider-lag 3, rounds 2 s apart. The pod went 0.2 s after the eviction (the cache's
    # watch event); the round that finds it gone runs at 3.1. A sample taken 3.3 s after the
    # going shows the node without it: still pinned, it ends the rest. Before, the samples
    # counted from the round that found the pod gone (3.1 + 3: none before 6.1).
    rests = Cooldowns(lag=3.0)
    rests.start("n", 0.0, 63.0, "uid-1", saturated=True)
    rests.gone("uid-0", 0.1)  # another pod's going says nothing of this one
    assert rests.observe(pinned_view(1.0, 100.0), 2.0, {"uid-1"}, 1, 95.0) == {}
    rests.gone("uid-1", 0.2)
    assert rests.observe(pinned_view(3.0, 100.0), 3.1, set(), 1, 95.0) == {}  # 2.8 s after
    assert list(rests.observe(pinned_view(3.5, 100.0), 4.0, set(), 1, 95.0)) == ["n"]
    assert "a sample since " in rests.ended()["n"]


def test_a_going_the_cache_did_not_report_counts_from_the_round_that_found_it():
    # Two victims: the later going counts; one the cache did not report (its record dropped,
    # or the watch behind) went by the round that found it gone at the latest.
    rests = Cooldowns(lag=3.0)
    rests.start("n", 0.0, 63.0, "uid-1", saturated=True)
    rests.start("n", 0.5, 63.0, "uid-2", saturated=True)
    rests.gone("uid-1", 0.2)
    rests.gone("uid-2", 1.5)
    assert rests.observe(pinned_view(4.4, 100.0), 4.5, set(), 1, 95.0) == {}  # after 1.5 + 3
    assert list(rests.observe(pinned_view(4.6, 100.0), 5.0, set(), 1, 95.0)) == ["n"]
    rests = Cooldowns(lag=3.0)
    rests.start("n", 0.0, 63.0, "uid-1", saturated=True)
    rests.gone("uid-1", 9.0)  # reported after the round found it gone: that round is the bound
    assert rests.observe(pinned_view(1.0, 100.0), 2.0, set(), 1, 95.0) == {}
    assert list(rests.observe(pinned_view(5.5, 100.0), 6.0, set(), 1, 95.0)) == ["n"]
    for i in range(GONE_KEPT + 1):  # the oldest goings are forgotten, not the newest
        rests.gone(f"other-{i}", 10.0)
    assert rests.went(["other-0"], 20.0) == 20.0 and rests.went([f"other-{i}"], 20.0) == 10.0


# --- the rounds -----------------------------------------------------------------------------
def test_a_node_pinned_at_capacity_is_relieved_before_its_average_is_hot(monkeypatch):
    # The window's average 60 % (under high), every sample since 100 %.
    off = Scene(monkeypatch)
    off.watcher.avg, off.watcher.latest = 60.0, 100.0
    off.rounds(10)
    assert off.evicted == []
    s = Scene(monkeypatch, saturated=95.0)
    s.watcher.avg, s.watcher.latest = 60.0, 100.0
    s.rounds(2)
    assert s.evicted == [] and s.r.last["saturated"] == {}
    s.rounds(1)  # the third fresh sample at capacity
    assert [name for _, name in s.evicted] == ["a"]
    [first] = [d for d in s.r.decisions.latest() if d["action"] == "evict"]
    assert first["reason"] == SATURATED and "saturated, planned at 105.0%" in first["detail"]
    at = s.evicted[0][0]
    s.gone("a")
    s.rounds(12)  # seen gone at +2 s; the first sample after +17 s is still at capacity
    assert [name for _, name in s.evicted] == ["a", "b"]
    assert s.evicted[1][0] == at + 20.0
    [ended] = s.rest_ended()
    assert ended["reason"] == STILL_SATURATED


def test_a_saturated_node_s_next_move_counts_from_its_victim_s_going(monkeypatch):
    # On the first saturated sample (consecutive 1), the benchmark's lag (3 s) and rounds (2 s),
    # a sample a second old each round. The cache reports the victim's going at the eviction:
    # samples after +3 s count, the round at +6 s reads one (+5 s) still at capacity and moves
    # the next pod. Found gone by the round at +2 s instead (no report): samples after +5 s,
    # the next move at +8 s, a round later.
    for told, second in ((True, 6.0), (False, 8.0)):
        s = Scene(monkeypatch, Options(provider_lag=3.0), saturated=95.0, consecutive=1)
        s.watcher.avg, s.watcher.latest = 60.0, 100.0
        s.rounds(1)
        assert [name for _, name in s.evicted] == ["a"]
        at = s.evicted[0][0]
        s.deleted("a") if told else s.gone("a")
        s.rounds(4)
        assert [(t - at, name) for t, name in s.evicted] == [(0.0, "a"), (second, "b")]
        assert [d["reason"] for d in s.rest_ended()] == [STILL_SATURATED]
