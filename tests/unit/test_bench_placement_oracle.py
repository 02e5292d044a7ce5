"""What any placement could reach on the trace (bench/placement/oracle.py): its bounds on pools
small enough to work out by hand, and its count against the benchmark's own."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bench.placement import online
from bench.placement import oracle as orc
from bench.placement import run as pl
from bench.placement import trace as pt
from sandbox.load.trace import Trace, VmSeries
from sandbox.load.trace_player import PlayerConfig, TracePlayer, workload_name


def _demand(
    background: list[list[float]], use: list[list[float]], cpu: list[float],
    capacity: float = 1000.0, arrival: list[float] | None = None,
) -> orc.Demand:  # fmt: skip
    n, m = len(background), len(use)
    return orc.Demand(
        capacity=np.full(n, capacity),
        memory=np.full(n, 4e9),
        background=np.array(background, dtype=float),
        use=np.array(use, dtype=float),
        requests=np.array([[c, 1e6] for c in cpu], dtype=float),
        arrival=np.array(arrival if arrival is not None else [0.0] * m),
    )


def test_the_lower_bound_counts_every_node_the_requests_force_over():
    """Three 1000 m nodes, no background; six pods of 500 m requests, so two a node. Second 0:
    each uses 700 m (4200 m against 3000 m): one node takes at most 1400 m, two 2800 m, so all
    three pass 100 %. Second 1: 300 m each, none has to."""
    demand = _demand([[0.0, 0.0]] * 3, [[700.0, 300.0]] * 6, [500.0] * 6)
    assert orc.lower_bound(demand).tolist() == [3, 0]
    # and it is tight: any placement that fits the requests has exactly those
    plan = orc.foresight(demand)
    assert orc.in_arrival_order(demand, plan)
    assert demand.over_100(plan) == 3


def test_with_room_in_the_requests_one_node_takes_the_whole_excess():
    """Six pods of 100 m requests, 700 m each in second 0, 100 m in second 1: one node can hold
    four of them (2800 m) and the others one each, so one node over 100 % is all the pool forces
    in second 0, and foresight reaches it."""
    demand = _demand([[0.0, 0.0]] * 3, [[700.0, 100.0]] * 6, [100.0] * 6)
    assert orc.lower_bound(demand).tolist() == [1, 0]
    assert demand.over_100(orc.foresight(demand)) == 1


def test_each_second_is_bounded_alone():
    """At 300 m each in second 1, a node holding four pods passes 1000 m then too (1200 m), and
    with three a node at most, two nodes pass it in second 0 (2100 and 1400 m, or worse): every
    placement has 2 node-seconds. The bound takes each second alone and says 1."""
    demand = _demand([[0.0, 0.0]] * 3, [[700.0, 300.0]] * 6, [100.0] * 6)
    assert orc.lower_bound(demand).tolist() == [1, 0]
    assert demand.over_100(orc.foresight(demand)) == 2


def test_a_pod_alone_past_every_nodes_room_forces_one():
    # 1200 m used on 1000 m nodes: whatever the pool's total, its node is over
    demand = _demand([[100.0], [100.0]], [[1200.0]], [100.0])
    assert orc.lower_bound(demand).tolist() == [1]


def test_below_the_pools_cpu_the_bound_is_zero_and_proves_nothing():
    """floor's case: pods a and b peak together (600 m), c flat at 300 m, 200 m backgrounds
    on two 1000 m nodes. 1900 m against 2000 m: no second forced, yet two of the three share a
    node and pass it in the second second: the best is 1, the bound 0 (it is low, never
    high)."""
    demand = _demand([[200.0, 200.0]] * 2, [[100.0, 600.0], [100.0, 600.0], [300.0, 300.0]],
                     [100.0] * 3)  # fmt: skip
    assert orc.lower_bound(demand).sum() == 0
    assert demand.over_100(orc.foresight(demand)) == 1


def test_foresight_beats_a_placement_that_knows_only_the_means():
    """Two 1000 m nodes. A is flat at 250 m (mean 250); B and C are idle but burst together in
    the last second, to 900 and 700 m (means 225 and 175). By the means, B goes beside nothing
    and C beside B (175 + 225 < 250 + 175): 1600 m, one node-second over. Knowing the shapes,
    C goes beside A (950 m) and B alone: none."""
    demand = _demand([[0.0] * 4] * 2,
                     [[250.0] * 4, [0.0, 0.0, 0.0, 900.0], [0.0, 0.0, 0.0, 700.0]],
                     [100.0] * 3)  # fmt: skip
    means = orc.by_summary(demand)
    assert means.tolist() == [0, 1, 1]
    assert demand.over_100(means) == 1
    # by their peaks (250, 900, 700) C goes beside A too
    assert demand.over_100(orc.by_summary(demand, peak=True)) == 0
    plan = orc.foresight(demand)
    assert demand.over_100(plan) == 0
    assert plan[0] == plan[2] != plan[1]


def test_the_search_mends_what_largest_first_gets_wrong():
    """Two 1000 m nodes, flat pods of 600, 500, 350, 250 and 250 m. Largest first: 600 and 500
    apart, 350 beside 500 (850, under 90 % where 950 is not), a 250 beside 600, and the last
    250 passes 1000 m wherever it goes. Moving pods finds {600, 350} and {500, 250, 250}."""
    demand = _demand([[0.0]] * 2, [[600.0], [500.0], [350.0], [250.0], [250.0]], [100.0] * 5)
    start = orc.floor.hindsight([(1000.0, 4e9)] * 2, demand.background.T, demand.use.T,
                                [(100.0, 1e6)] * 5).node_of  # fmt: skip
    assert demand.over_100(start) == 1
    plan = orc.foresight(demand)
    assert demand.over_100(plan) == 0
    assert sorted(demand.load(plan)[:, 0].tolist()) == [950.0, 1000.0]


def test_searches_keep_requests_and_the_pod_limit():
    # one pod a node by requests: nothing can move, whatever the load
    demand = _demand([[0.0]] * 2, [[900.0], [900.0]], [600.0] * 2)
    assert orc.improve(demand, [0, 1]).tolist() == [0, 1]
    # the pod limit: a node with max_pods pods takes no more
    assert orc.improve(_demand([[0.0]] * 2, [[10.0], [990.0]], [1.0] * 2), [0, 0],
                       orc.over_cost, max_pods=1).tolist() == [0, 0]  # fmt: skip
    assert not orc.in_arrival_order(demand, [0, 0])


def test_the_lowest_peak_search_lowers_the_hottest_node_without_adding_node_seconds():
    demand = _demand([[0.0]] * 2, [[600.0], [300.0], [300.0]], [100.0] * 3)
    plan = orc.improve(demand, [0, 0, 1], orc.peak_cost)
    assert demand.hottest(plan) == pytest.approx(60.0)  # {600}, {300, 300}
    assert demand.over_100(plan) == 0


def _vm(vm_id: str, used: list[float]) -> VmSeries:
    steps = len(used)
    return VmSeries(vm_id, np.full(steps, 8.0), np.array(used), np.full(steps, 1e6),
                    np.full(steps, 1e5))  # fmt: skip


def test_a_placement_counts_as_the_benchmark_counts_it():
    """Two 1-CPU nodes at 40 % background (with the simulator's wobble), VM a's pod and VM
    b's (b rising to 6 cores, 1200 m, from step 2), with the player's noise and ramp: the
    oracle's count of a placement equals bench.placement.trace's measure of the same placement
    from the simulator's own functions, and the recorded placement's too."""
    contender = "ballast-lvrb"
    # the window starts at step 300: the pool reads the day before it (the watcher's history)
    first = 300
    trace = Trace(0.0, first + 6, {"a": _vm("a", [2] * first + [2, 2, 3, 3, 2, 2]),
                                   "b": _vm("b", [1] * first + [1, 1, 6, 6, 6, 1])},
                  "test")  # fmt: skip
    nodes = [pl.NodePlan(1, 40.0, 10.0), pl.NodePlan(1, 40.0, 10.0)]
    pods = [pl.PodPlan(100, 1.0, 0), pl.PodPlan(100, 1.0, 1), pl.PodPlan(100, 1.0, 0)]
    chosen = [("a", 2), ("b", 1)]
    keys = {f"{pl.NAMESPACE}/{pl.pod_name(contender, j)}": workload_name(chosen[p.deployment][0])
            for j, p in enumerate(pods)}  # fmt: skip
    player = TracePlayer(trace, {workload_name(vm): vm for vm, _ in chosen},
                         PlayerConfig(step_seconds=10.0), first, keys.get)  # fmt: skip
    config = replace(pl.simulator_config(3, nodes, pods), trace=player, ramp_seconds=4.0)
    setup = pt.Setup(nodes, pods, [0, 0, 1], chosen, first, player, config,
                     pt.Shape(3, 10.0, 10.0))  # fmt: skip
    start, seconds = 1000.0, 40
    placed = {pl.pod_name(contender, 0): (pl.node_name(contender, 0), start),
              pl.pod_name(contender, 1): (pl.node_name(contender, 0), start),
              pl.pod_name(contender, 2): (pl.node_name(contender, 1), start + 10.0)}  # fmt: skip
    player.start(start)
    series = pt.over_time(contender, nodes, pods, placed, config, start, start + seconds - 1)
    measured = pt.measure_over_time(series)
    assert measured["node_seconds_over_100"] > 0  # the case says something
    run = {
        "trace": {"started_at": start},
        "contenders": {contender: {
            "max_cpu_over_time": measured["max_cpu_over_time"],
            "node_seconds_over_100": measured["node_seconds_over_100"],
            "decisions": {"records": [{"pod": p, "node": n, "time": t}
                                      for p, (n, t) in placed.items()]},
        }},
    }  # fmt: skip
    pool = online.pool_of(run, setup, contender)
    demand = orc.Demand.of(pool)
    assert demand.over_100([0, 0, 1]) == measured["node_seconds_over_100"]
    figures, _, _ = orc.study_pool(run, contender, pool, moves=20)
    assert (figures.recorded, figures.measured) == (measured["node_seconds_over_100"],) * 2
    assert figures.series_match == 1.0
    assert figures.foresight <= min(figures.means_only, figures.peaks_only)
    assert figures.lower_bound <= figures.foresight


def test_the_goal_is_half_the_best_peers_mean():
    runs = [{"contenders": {"koordinator": {"node_seconds_over_100": a},
                            "kube-scheduler": {"node_seconds_over_100": b},
                            "ballast-lvrb": {"node_seconds_over_100": 0}}}
            for a, b in ((10, 30), (30, 20))]  # fmt: skip
    assert orc.goal(runs) == ("koordinator", 10.0)
