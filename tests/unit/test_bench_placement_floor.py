"""The floor of node-seconds over 100 % no placement avoids (bench/placement/floor.py), on plans
small enough to work out by hand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bench.placement import floor as fl
from bench.placement import run as pl
from bench.placement import trace as pt
from sandbox.load.trace import Trace, VmSeries
from sandbox.load.trace_player import PlayerConfig, TracePlayer, workload_name


def test_a_second_counts_when_the_pools_demand_passes_its_cpu():
    # demands 1100, 950, 900 m against 1000: one second over 100 %, two over 90 %
    got = fl.floor(1000, [500, 500, 500], [[300, 300], [300, 150], [200, 200]])
    assert (got.over_100, got.over_90, got.seconds) == (1, 2, 3)
    assert got.peak == pytest.approx(110.0)


def test_pending_pods_are_taken_out_as_the_largest():
    # one pod pending: 1100 - 300 and 950 - 300, neither over 90 %
    got = fl.floor(1000, [500, 500], [[300, 300], [300, 150]], pending=1)
    assert (got.over_100, got.over_90) == (0, 0)


def test_seconds_must_match():
    with pytest.raises(ValueError, match="2 backgrounds for 1 seconds"):
        fl.floor(1000, [500, 500], [[300]])


def _vm(vm_id: str, used: list[float]) -> VmSeries:
    steps = len(used)
    return VmSeries(vm_id, np.full(steps, 8.0), np.array(used), np.full(steps, 1e6),
                    np.full(steps, 1e5))  # fmt: skip


def test_a_window_from_the_simulators_own_functions():
    """Two 1-CPU nodes at 50 % background (1000 m) hold VM a's pod (2 cores used: 400 m) and
    VM b's (1 core, then 6 from step 2: 200 m, then 1200 m, linear over step 1 to 2, 10 s).
    The pool's 2000 m is passed when b passes 600 m, after t = 14 s: seconds 15-29, 15 of them;
    90 % (1800 m) when b passes 400 m, seconds 13-29, 17 of them."""
    trace = Trace(0.0, 4, {"a": _vm("a", [2, 2, 2, 2]), "b": _vm("b", [1, 1, 6, 6])}, "test")
    nodes = [pl.NodePlan(1, 50.0, 10.0), pl.NodePlan(1, 50.0, 10.0)]
    pods = [pl.PodPlan(100, 1.0, 0), pl.PodPlan(100, 1.0, 1)]
    chosen = [("a", 1), ("b", 1)]
    keys = {f"{pl.NAMESPACE}/{pl.pod_name('kube-scheduler', j)}": workload_name(vm)
            for j, (vm, _) in enumerate(chosen)}  # fmt: skip
    player = TracePlayer(trace, {workload_name(vm): vm for vm, _ in chosen},
                         PlayerConfig(step_seconds=10.0, noise=0.0), 0, keys.get)  # fmt: skip
    config = replace(pl.simulator_config(1, nodes, pods), trace=player, ramp_seconds=0.0,
                     wobble=0.0)  # fmt: skip
    setup = pt.Setup(nodes, pods, [0, 0], chosen, 0, player, config, pt.Shape(3, 10.0, 10.0))
    run = {
        "trace": {"started_at": 1000.0},
        "contenders": {"kube-scheduler": {"max_cpu_over_time": [0.0] * 30, "pending": 0}},
    }
    got, placed = fl.window(run, setup)["kube-scheduler"]
    assert (got.seconds, got.over_100, got.over_90) == (30, 15, 17)
    assert got.peak == pytest.approx(100.0 * (1000 + 400 + 1200) / 2000)  # b at 6 cores
    # in hindsight b goes first (the larger peak), a to the other node (500 + 400 m, never
    # over); b's node passes its 1000 m once b passes 500 m, after t = 13: seconds 14-29
    assert (placed.over_100, placed.unplaced) == (16, 0)
    assert placed.hottest == pytest.approx(170.0)


def test_a_later_bind_lowers_the_floor():
    """With the simulator's ramp, a pod bound later uses less: the slack never raises it."""
    trace = Trace(0.0, 4, {"a": _vm("a", [10, 10, 10, 10])}, "test")
    nodes = [pl.NodePlan(1, 10.0, 10.0)]
    pods = [pl.PodPlan(100, 1.0, 0)]
    keys = {f"{pl.NAMESPACE}/{pl.pod_name('kube-scheduler', 0)}": workload_name("a")}
    player = TracePlayer(trace, {workload_name("a"): "a"},
                         PlayerConfig(step_seconds=10.0, noise=0.0), 0, keys.get)  # fmt: skip
    config = replace(pl.simulator_config(1, nodes, pods), trace=player, ramp_seconds=4.0,
                     wobble=0.0)  # fmt: skip
    setup = pt.Setup(nodes, pods, [0], [("a", 1)], 0, player, config, pt.Shape(3, 10.0, 10.0))
    run = {
        "trace": {"started_at": 1000.0},
        "contenders": {"kube-scheduler": {"max_cpu_over_time": [0.0] * 10, "pending": 0}},
    }
    # 100 m background + 2000 m of use, ramped over 4 s from the bind: over 1000 m once past
    # 900 m of use, 1.8 s after the bind
    assert fl.window(run, setup)["kube-scheduler"][0].over_100 == 8  # seconds 2-9
    assert fl.window(run, setup, slack=5.0)["kube-scheduler"][0].over_100 == 3  # seconds 7-9


def test_hindsight_spreads_what_peaks_together_and_keeps_requests():
    """Two 1000 m nodes at 200 m background; pods a and b peak together (600 m in the second
    second), c is flat at 300 m. Largest peak first: a to node 0, b to node 1 (on node 0 both
    would pass 1000 m), then c passes it in the second second on either node: one node-second."""
    allocatable = [(1000.0, 1e9), (1000.0, 1e9)]
    background = [[200.0, 200.0], [200.0, 200.0]]
    use = [[100.0, 100.0, 300.0], [600.0, 600.0, 300.0]]
    got = fl.hindsight(allocatable, background, use, [(100, 0), (100, 0), (100, 0)])
    assert got.unplaced == 0
    assert got.over_100 == 1
    # with requests that let only one pod a node, the third is left unplaced
    got = fl.hindsight(allocatable, background, use, [(600, 0), (600, 0), (600, 0)])
    assert (got.over_100, got.unplaced) == (0, 1)
    assert got.hottest == pytest.approx(80.0)
