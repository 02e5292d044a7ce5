"""The placement benchmark's `trace` scenario: a production trace's workloads arrive while the
trace plays, and every contender places them under the replayed load.

Each seed replays its own day of the trace (sandbox.load.trace_player.day_start: seed 1 the second
day, ...). A pool is NODES 4-CPU nodes (background 5-30 %); the VMs, a seeded choice as many as
fill FILL of the pool's CPU with requests, become Deployments of 1-3 replicas (the player's
mapping and scale: 200 m of use a VM core used, 50 m of request a VM core given, memory 1/16).
Replicas are bare pods owned by a stand-in ReplicaSet, as in the `learnable` scenario, so
Ballast's watcher learns a profile per Deployment from the replicas that run.

Arrival (a `Shape`: FULL, or QUICK for `--quick`): `waves` waves `gap` s apart from the replay's
start; replica k of a workload comes in wave first + k, the workloads' first waves spread over the
waves, so a later replica meets a profile learned from its siblings (a one-replica workload meets
none). The replay plays from the first wave until `after` s past the last (at
bench.harness.timescale's speed, whatever the shape: a quick window is shorter, never faster).

Warm start: Koordinator's node agent stand-in starts with its aggregates full
(sandbox.load.nodemetric's warm_start), and Ballast's watcher starts with what a watcher that
had run through the day before would hold of each workload: its history
(watcher/workloadhistory.py), the most one replica used per peak bucket over the 24 trace hours
before the window, from the trace player's own per-replica use (bench/placement/warm_history.py),
written where the watcher takes it over at start. The per-pod statistics and the workload
profiles start empty: the window's pods are new, as a rollout's are. The result's setup says so
(`warm_start`), each window how many workloads were given and how late its first wave came.

Measured from the simulator's true demand (unclamped), every second from the first wave to the
end: node-seconds over 100 % and over 90 %, the hottest node over time, and `measure`'s final
state at the end.
"""

from __future__ import annotations

import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from bench.harness import timescale
from bench.harness.common import BindTracker, PodMaker
from bench.placement import decisions
from bench.placement import run as pl
from bench.placement.warm_history import TRACE_HOURS, WarmStart
from sandbox.cluster.nodes import NodeSpec
from sandbox.load.simulator import PodUse, pod_use
from sandbox.load.trace import Trace
from sandbox.load.trace_player import PlayerConfig, TracePlayer, day_start, select, workload_name
from watcher import defaults as watcher_defaults

NODES = 10
NODE_CPU = 4
FILL = 0.9
BACKGROUND = (5.0, 30.0)
MAX_REPLICAS = 3  # a workload's replicas (sandbox.load.trace_player.replicas: 1, 2 or 3)


@dataclass(frozen=True)
class Shape:
    """When a window's workloads arrive and how long it plays (wall seconds)."""

    waves: int
    gap: float
    after: float  # from the last wave to the window's end

    def __post_init__(self) -> None:
        if self.waves < MAX_REPLICAS:  # a workload's replicas arrive one a wave
            raise ValueError(f"a window needs at least {MAX_REPLICAS} waves, got {self.waves}")

    @property
    def length(self) -> float:
        """Wall seconds from the first wave to the window's end."""
        return (self.waves - 1) * self.gap + self.after


FULL = Shape(waves=4, gap=30.0, after=120.0)
# `--quick`: 16 trace steps instead of 42, at the same speed. Three waves still bring a
# workload's three replicas one a wave, each meeting its siblings' profile four steps old.
QUICK = Shape(waves=3, gap=20.0, after=40.0)
# One trace step every STEP_WALL s, every contender's timing scaled to it (docs/trace.md).
PLAYER = PlayerConfig(step_seconds=timescale.STEP_WALL)
TIMING = timescale.trace_timing()
RAMP = timescale.setting("simulated pods", "ramp to their use after start").wall
# How often `Window.peak_after` looks at a node: once per trace step, the trace's resolution.
PEAK_SAMPLE = max(1, round(timescale.STEP_WALL))


def plan(
    trace: Trace, seed: int, shape: Shape = FULL
) -> tuple[list[pl.NodePlan], list[pl.PodPlan], list[int], list[tuple[str, int]]]:
    """Nodes, pods (PodPlan.deployment = the index of the VM in `chosen`), each pod's wave, and
    the chosen (VM, replicas)."""
    chosen = select(trace, FILL * NODES * NODE_CPU * 1000, PLAYER, seed)
    rng = random.Random(f"placement:trace:{seed}")
    nodes = [
        pl.NodePlan(NODE_CPU, rng.uniform(*BACKGROUND), rng.uniform(10.0, 30.0))
        for _ in range(NODES)
    ]
    pods, waves = [], []
    for v, (vm, n) in enumerate(chosen):
        cpu_m = round(trace.vms[vm].request_cores * PLAYER.cpu_m_per_core / PLAYER.overcommit)
        first = v % (shape.waves - n + 1)
        for k in range(n):
            pods.append(pl.PodPlan(cpu_m, 1.0, v))
            waves.append(first + k)
    return nodes, pods, waves, chosen


def over_time(
    contender: str,
    nodes: list[pl.NodePlan],
    pods: list[pl.PodPlan],
    placed: dict[str, tuple[str, float]],
    config: Any,
    start: float,
    end: float,
) -> list[list[float]]:
    """The pool's true CPU % per node, each second from `start` to `end` (wall times)."""
    return [
        pl.true_cpu(contender, nodes, pods, placed, config, start + s)
        for s in range(int(end - start) + 1)
    ]


def measure_over_time(series: list[list[float]]) -> dict[str, Any]:
    hottest = sorted(max(cpus) for cpus in series)
    return {
        "node_seconds_over_100": sum(c > 100.0 for cpus in series for c in cpus),
        "node_seconds_over_90": sum(c > 90.0 for cpus in series for c in cpus),
        "hottest_p99": round(hottest[min(len(hottest) - 1, int(0.99 * len(hottest)))], 1),
        "max_cpu_over_time": [round(max(cpus), 1) for cpus in series],
    }


def pod_seconds_pending(created: list[float], bound: list[float | None], end: float) -> float:
    """Seconds each pod waited, summed: from its wave's creation to its binding, or to the end
    of the window when it was never bound (issue 45's trace goal weighs them against the best
    peer's). Every pool's pods are created interleaved, so each pool pays the creation alike."""
    waits = (max((end if b is None else b) - c, 0.0) for c, b in zip(created, bound, strict=True))
    return round(sum(waits), 1)


@dataclass
class Setup:
    """One window's plan and the simulator that plays it (the player not started yet)."""

    nodes: list[pl.NodePlan]
    pods: list[pl.PodPlan]
    waves: list[int]
    chosen: list[tuple[str, int]]
    first_step: int
    player: TracePlayer
    config: Any
    shape: Shape = field(default=FULL)


def setup_window(trace: Trace, seed: int, contenders: list[str], shape: Shape = FULL) -> Setup:
    node_plans, pod_plans, waves, chosen = plan(trace, seed, shape)
    first_step = day_start(trace, seed)
    workload_of = {
        f"{pl.NAMESPACE}/{pl.pod_name(c, j)}": workload_name(chosen[p.deployment][0])
        for c in contenders
        for j, p in enumerate(pod_plans)
    }
    player = TracePlayer(
        trace,
        {workload_name(vm): vm for vm, _ in chosen},
        PLAYER,
        first_step,
        workload_of=workload_of.get,
    )
    config = replace(
        pl.simulator_config(seed, node_plans, pod_plans), trace=player, ramp_seconds=RAMP
    )
    return Setup(node_plans, pod_plans, waves, chosen, first_step, player, config, shape)


def replicas_of(contenders: list[str], pods: list[pl.PodPlan]) -> dict[str, list[str]]:
    """Workload key (shared.workloads, as the watcher keys it) -> its replicas' pod keys, per
    contender's pool."""
    out: dict[str, list[str]] = {}
    for c in contenders:
        for j, p in enumerate(pods):
            key = f"{pl.NAMESPACE}/Deployment/{pl.deployment_name(c, p.deployment)}"
            out.setdefault(key, []).append(f"{pl.NAMESPACE}/{pl.pod_name(c, j)}")
    return out


def warm_start(w: Setup, contenders: list[str]) -> WarmStart:
    """The watcher's warm start for this window (bench/placement/warm_history.py)."""
    env = {**os.environ, **TIMING.watcher_env}  # as SimulatedCluster starts the watcher
    bucket = float(env["BALLAST_PEAK_BUCKET_SECONDS"])
    prefix = env.get("BALLAST_KEY_PREFIX", watcher_defaults.KEY_PREFIX)
    return WarmStart(w.player, replicas_of(contenders, w.pods), bucket, prefix)


def shape_of(doc: dict[str, Any]) -> Shape:
    """The shape a placement result's windows played (FULL for results that did not say)."""
    setup = doc.get("setup", {}).get("trace", {})
    if "waves" not in setup:
        return FULL
    return Shape(setup["waves"], setup["gap_seconds"], setup["after_seconds"])


def run_one(
    seed: int, contenders: list[str], trace: Trace, say=print, shape: Shape = FULL
) -> dict[str, Any]:
    w = setup_window(trace, seed, contenders, shape)
    node_plans, pod_plans, waves, chosen = w.nodes, w.pods, w.waves, w.chosen
    first_step, player, config = w.first_step, w.player, w.config
    memory = {v: player.requests(vm)[1] for v, (vm, _) in enumerate(chosen)}
    warm = warm_start(w, contenders)
    specs = [
        NodeSpec(pl.node_name(c, i), cpu=str(n.cpu), memory=f"{4 * n.cpu}Gi",
                 labels={pl.POOL_LABEL: c})
        for c in contenders
        for i, n in enumerate(node_plans)
    ]  # fmt: skip
    services = pl.Services(
        f"ballast-placement-trace-{seed}-", specs, config, contenders, timing=TIMING,
        before_watcher=warm,
    )  # fmt: skip
    ok = False
    try:
        started = time.monotonic()
        api = services.start()
        say(f"  stack and {len(contenders)} schedulers up in {time.monotonic() - started:.0f} s;"
            f" {len(chosen)} workloads, {len(pod_plans)} pods a pool")  # fmt: skip
        tracker = BindTracker(api, pl.NAMESPACE)
        tracker.start()
        wall_offset = time.time() - time.monotonic()
        maker = PodMaker(services.plane)
        # the first wave where the watcher's seeded history ends, unless the stack came up late
        first = max(time.monotonic(), (warm.end or 0.0) - wall_offset)
        pl._sleep_until(first)
        player.start(first + wall_offset)
        for w in range(shape.waves):
            pl._sleep_until(first + w * shape.gap)
            bodies = [
                _body(c, j, p, memory[p.deployment])
                for j, p in enumerate(pod_plans)
                if waves[j] == w
                for c in contenders
            ]
            with ThreadPoolExecutor(pl.CREATE_THREADS) as pool:
                list(pool.map(lambda b: maker.create(pl.NAMESPACE, b), bodies))
        pl._sleep_until(first + shape.length)
        final_at = time.time()
        tracker.stop()
        placed_all = pl._placements(services.plane, tracker, wall_offset)
        say(f"  replay over after {time.monotonic() - first:.0f} s")
        results: dict[str, Any] = {}
        for c in contenders:
            placed = {n: v for n, v in placed_all.items() if n.startswith(f"{c}-p")}
            cpu = pl.true_cpu(c, node_plans, pod_plans, placed, config, final_at)
            result = pl.measure(cpu, placed, len(pod_plans))
            result["final_cpu"] = [round(x, 1) for x in cpu]
            series = over_time(c, node_plans, pod_plans, placed, config, first + wall_offset,
                               final_at)  # fmt: skip
            result.update(measure_over_time(series))
            created = [first + wall_offset + waves[j] * shape.gap for j in range(len(pod_plans))]
            bound = [(placed.get(pl.pod_name(c, j)) or (None, None))[1]
                     for j in range(len(pod_plans))]  # fmt: skip
            result["pod_seconds_pending"] = pod_seconds_pending(created, bound, final_at)
            result["bind_seconds"] = None  # arrivals spread over the replay: not comparable
            if c in services.status_ports:
                found = decisions.fetch(
                    services.status_ports[c], pl.NAMESPACE, [pl.pod_name(c, j) for j in
                                                             range(len(pod_plans))]
                )  # fmt: skip
                window = Window(c, node_plans, pod_plans, placed, config, first + wall_offset,
                                series)  # fmt: skip
                result["decisions"] = window.attribute(found)
            results[c] = result
        ok = True
        return {
            "scenario": "trace",
            "seed": seed,
            "trace": {"source": trace.source, "first_step": first_step, "workloads": len(chosen),
                      "pods_per_pool": len(pod_plans),
                      "started_at": round(first + wall_offset, 3),
                      "warm_start": warm.record(first + wall_offset)},
            "contenders": results,
        }  # fmt: skip
    finally:
        services.close(ok, say)


class Window:
    """The truth of one pool over a replayed window, as `decisions.attribute` asks for it."""

    def __init__(
        self,
        contender: str,
        nodes: list[pl.NodePlan],
        pods: list[pl.PodPlan],
        placed: dict[str, tuple[str, float]],
        config: Any,
        start: float,
        series: list[list[float]],
    ) -> None:
        self.contender, self.nodes, self.pods, self.placed = contender, nodes, pods, placed
        self.config, self.start, self.series = config, start, series
        self.index = {pl.node_name(contender, i): i for i in range(len(nodes))}

    def truth_at(self, node: str, at: float) -> float:
        before = {p: v for p, v in self.placed.items() if v[1] < at}
        cpus = pl.true_cpu(self.contender, self.nodes, self.pods, before, self.config, at)
        return cpus[self.index[node]]

    def peak_after(self, node: str, at: float) -> float:
        """The node's highest true CPU % from `at` on, counting only the pods bound by then:
        pods placed later have decisions of their own (sampled once per trace step)."""
        i = self.index[node]
        by_then = {p: v for p, v in self.placed.items() if v[0] == node and v[1] <= at}
        seconds = range(max(0, int(at - self.start)), len(self.series), PEAK_SAMPLE)
        return max(
            (
                pl.true_cpu(self.contender, self.nodes, self.pods, by_then, self.config,
                            self.start + s)[i]
                for s in seconds
            ),
            default=0.0,
        )  # fmt: skip

    def use_after(self, pod: str, at: float) -> float:
        node, started = self.placed[pod]
        j = int(pod.rsplit("-p", 1)[1])
        use = PodUse(f"{pl.NAMESPACE}/{pod}", node, self.pods[j].cpu_m, 256 * 1024**2, started)
        capacity = self.nodes[self.index[node]].cpu * 1000
        seconds = range(max(0, int(at - self.start)), len(self.series))
        highest = max((pod_use(use, self.start + s, self.config)[0] for s in seconds), default=0)
        return 100.0 * highest / capacity

    def attribute(self, found: list[decisions.Decision]) -> dict[str, Any]:
        over = {
            node: sum(cpus[i] > 100.0 for cpus in self.series) for node, i in self.index.items()
        }
        known = [d for d in found if d.pod in self.placed]
        out = decisions.attribute(known, self.truth_at, self.peak_after, self.use_after, over)
        out["records"] = decisions.as_records(known)
        return out


def why_hot(attributed: dict[str, Any]) -> str:
    """One line: the pods placed on nodes that went over 100 % and the mean of each gap."""
    hot = attributed["hot_nodes"]
    if not hot["pods"]:
        return "no pod placed on a node that went over 100 %"
    return (
        f"{hot['pods']} pods on nodes over 100 %: view {hot['view_gap']:+.1f}, prediction "
        f"{hot['prediction_gap']:+.1f}, later rise {hot['rise']:+.1f} points (cause: "
        f"{attributed['cause']}; estimates {hot['sources']}"
        + (f"; PeakFit's figures {hot['peak_sources']}" if hot.get("peak_sources") else "")
        + ")"
    )


def _body(contender: str, j: int, p: pl.PodPlan, memory: int) -> dict[str, Any]:
    body = pl.pod_body(contender, j, p)
    body["spec"]["containers"][0]["resources"]["requests"]["memory"] = str(memory)
    return body


# What the verdicts compare on the trace (bench.placement.run's all_verdicts); lower is better.
VERDICT_MEASURES = ("node_seconds_over_100", "node_seconds_over_90", "pending")
# The trace table's columns (key, heading), drawn by bench.harness.common.scenario_table.
COLUMNS = (
    ("node_seconds_over_100", "node-s > 100 %"),
    ("node_seconds_over_90", "node-s > 90 %"),
    ("hottest_p99", "hottest node p99 %"),
    ("max_cpu", "max at end %"),
    ("std_cpu", "std at end"),
    ("pending", "pending"),
)


def setup(trace: Trace, shape: Shape = FULL) -> dict[str, Any]:
    return {
        "source": trace.source,
        "nodes_per_pool": NODES,
        "node_cpu": NODE_CPU,
        "fill": FILL,
        "background_cpu": BACKGROUND,
        "waves": shape.waves,
        "gap_seconds": shape.gap,
        "after_seconds": shape.after,
        "cpu_m_per_core": PLAYER.cpu_m_per_core,
        "overcommit": PLAYER.overcommit,
        "memory_scale": PLAYER.memory_scale,
        "step_seconds": PLAYER.step_seconds,
        "noise": PLAYER.noise,
        "timing": TIMING.record(),
        # Koordinator's node agent starts with its aggregates full; Ballast's watcher with each
        # workload's history of the trace hours before the window (bench/placement/warm_history.py)
        "warm_start": {
            "koordinator_node_metrics": TIMING.node_metrics.warm_start,
            "ballast_workload_history": True,
            "ballast_trace_hours": TRACE_HOURS,
        },
        "settings_in_trace_time": timescale.record(),
    }
