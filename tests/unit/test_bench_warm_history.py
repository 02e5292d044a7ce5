"""The trace scenario's warm start of Ballast's watcher (bench/placement/warm_history.py): the
workload history it seeds holds, per peak bucket ending at the window's start, the most one
replica of the workload used in the trace, as the simulator will replay it."""

from __future__ import annotations

import numpy as np

from bench.placement import trace as scenario
from bench.placement.run import PodPlan
from bench.placement.warm_history import history
from sandbox.load.trace import Trace, VmSeries
from sandbox.load.trace_player import PlayerConfig, TracePlayer, deployment_of
from watcher.rows import HOURS
from watcher.workloadhistory import WorkloadHistory

STEPS = 3 * 288  # three days; the window starts on day 1
BUCKET = 60.0  # an hour of trace at 60x: 12 steps of 5 s
END = 1000 * BUCKET  # the window's first wave, at a bucket's start


def synthetic() -> Trace:
    rng = np.random.default_rng(3)
    vms = {
        vm: VmSeries(vm, np.full(STEPS, 4.0), rng.gamma(1.0, 0.5, STEPS), np.full(STEPS, 4e6),
                     rng.uniform(1e5, 4e6, STEPS))
        for vm in ("a", "b")
    }  # fmt: skip
    return Trace(0.0, STEPS, vms, "synthetic")


def player(trace: Trace, noise: float) -> TracePlayer:
    config = PlayerConfig(step_seconds=5.0, noise=noise)
    return TracePlayer(trace, {"web": "a", "db": "b"}, config, first_step=288,
                       workload_of=deployment_of)  # fmt: skip


REPLICAS = {"ns/Deployment/web": ["ns/web-h-1", "ns/web-h-2"], "ns/Deployment/db": ["ns/db-h-1"]}


def test_the_seeded_buckets_are_the_traces_per_replica_maxima_of_the_day_before():
    trace = synthetic()
    found = history(player(trace, noise=0.0), REPLICAS, END, BUCKET)
    doc = found.doc(END - 1)  # just before the window: all 24 trace hours are in the day
    for workload, vm in (("ns/Deployment/web", "a"), ("ns/Deployment/db", "b")):
        i = doc["workloads"].index(workload)
        series = trace.vms[vm]
        day = slice(0, 288)  # the 24 trace hours before step 288
        assert doc["held"][i] == HOURS
        # kept as float32, as the watcher keeps every figure
        cpu = np.float32(series.cpu_used[day].max() * 200)
        assert doc["cpu"]["max"][i] == round(float(cpu), 1)
        memory = np.float32((series.memory_used_kb[day] * 1024 / 16).max())
        assert doc["memory"]["max"][i] == round(float(memory))
        # bucket by bucket: hour k of the day before is the k-th of the 24 buckets before END
        row = found.slots[workload]
        for k in range(HOURS):
            bucket = int(END // BUCKET) - HOURS + k
            slot = bucket % HOURS
            assert found.stamps[row, slot] == bucket % 65536
            hour = series.cpu_used[12 * k : 12 * (k + 1)] * 200
            assert found.maxima[row, 0, slot] == np.float32(hour.max())
    # at the first wave, the watcher's day is the last 24 buckets, the current one included:
    # the oldest trace hour has just left it
    i = found.doc(END)["workloads"].index("ns/Deployment/web")
    assert found.doc(END)["held"][i] == HOURS - 1


def test_each_replica_has_its_noise_and_the_most_of_them_is_kept():
    trace = synthetic()
    play = player(trace, noise=0.1)
    found = history(play, REPLICAS, END, BUCKET)
    steps = np.arange(0, 288)
    uses = [play.step_use(key, steps)[0] for key in REPLICAS["ns/Deployment/web"]]
    assert not np.array_equal(uses[0], uses[1])  # each replica its own noise
    # what the simulator plays for a replica at a whole step (a replay from step 0)
    replay = TracePlayer(trace, {"web": "a"}, play.config, workload_of=deployment_of)
    replay.start(0.0)
    for s in (5, 100, 287):
        assert replay.use("ns/web-h-2", 5.0 * s)[0] == np.float64(uses[1][s])
    i = found.doc(END - 1)["workloads"].index("ns/Deployment/web")
    most = np.float32(np.maximum(*uses).max())
    assert found.doc(END - 1)["cpu"]["max"][i] == round(float(most), 1)


def test_what_the_watcher_takes_over_is_what_was_seeded():
    found = history(player(synthetic(), noise=0.1), REPLICAS, END, BUCKET)
    again = WorkloadHistory(BUCKET)
    again.load(found.encode())
    assert again.doc(END) == found.doc(END)


def test_the_window_seeds_every_pools_workload_with_its_replicas():
    pods = [PodPlan(100, 1.0, 0), PodPlan(100, 1.0, 0), PodPlan(50, 1.0, 1)]
    found = scenario.replicas_of(["x", "y"], pods)
    assert found["placement/Deployment/x-d00"] == ["placement/x-p000", "placement/x-p001"]
    assert found["placement/Deployment/y-d01"] == ["placement/y-p002"]
    assert len(found) == 4
