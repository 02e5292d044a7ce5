"""`make bench-placement`: where pods land and how hot nodes get, Ballast vs Trimaran vs default.

Per scenario and seed one fresh stack: the sandbox (etcd, kube-apiserver, kwok), the closed-loop
simulator, Prometheus, Redis and Ballast's watcher. The contenders run at the same time, each on
its own pool of identical nodes (same sizes, same seeded background load, pods pinned to the pool
by a nodeSelector), each pool getting the same pods in the same order, created interleaved, so
every scheduler sees the same cluster at the same moment on this shared machine. Within a pool
exactly one scheduler places pods; what the pools share is the real apiserver, Prometheus and
watcher, as schedulers in one cluster would. A run per contender in a stack of its own would
take five times as long (about 3.5 hours for the full matrix on 2 cores).

Contenders: Ballast with each score family in its default configuration (TargetLoadPacking,
LoadVariationRiskBalancing), upstream Trimaran (scheduler-plugins, the same two plugins,
`watcherAddress` = Ballast's /watcher, profiles as in their READMEs), upstream kube-scheduler
with its default profile, and Koordinator's koord-scheduler (LoadAwareScheduling with its own
defaults) reading the NodeMetric objects the simulator writes for its pool
(sandbox.load.nodemetric).
Measures come from the simulator's true demand (its seeded functions, unclamped), never from
what a scheduler saw: see `measure`. Results: bench/results/placement.json
(`--quick`: placement-quick.json) and one PNG per scenario (bench.placement.plots). The `trace`
scenario replays a production trace's VMs instead (bench.placement.trace, docs/trace.md).

`--source metrics-server`: the watcher reads metrics-server (15 s resolution, scraping kwok's
kubelets, which the simulator feeds the same seeded load) instead of Prometheus; results get a
`-metrics-server` suffix.
"""

from __future__ import annotations

import copy
import hashlib
import random
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import requests
from kubernetes import client

from bench.harness import chart, timescale
from bench.harness.common import RESULTS_DIR, BindTracker, PodMaker
from bench.harness.simulated_cluster import SimulatedCluster, ballast_argv
from bench.harness.timescale import Timing
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.kube_scheduler import start_kube_scheduler
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import NodeSpec
from sandbox.load import nodemetric
from sandbox.load.simulator import NodeCapacity, PodUse, SimulatorConfig, node_loads
from sandbox.peers.koordinator.scheduler import start_koord_scheduler
from sandbox.peers.trimaran import (
    LOAD_VARIATION_RISK_BALANCING,
    TARGET_LOAD_PACKING,
    missing_metrics_lines,
    start_trimaran,
    stop_scheduler,
)
from scheduler.plugins.peak_fit import NAME as PEAK_FIT
from tests.fixtures.loadwatcher import LoadWatcher

RESULTS = RESULTS_DIR
NAMESPACE = "placement"
POOL_LABEL = "ballast.dev/bench-pool"
TARGET = 40  # TargetLoadPacking's default target: "target + 10" is judged against it
NODES_PER_POOL = 50
SEEDS = (1, 2, 3, 4, 5)  # issue 44: at least 5 for the synthetic scenarios of the headline
REQUESTS_M = (200, 400, 600)
FACTOR = (0.3, 1.6)  # use / request, drawn per pod
IDLE_FACTOR = 0.02
BACKGROUND = (5.0, 55.0)
HOT_BACKGROUND = (70.0, 85.0)
RAMP_SECONDS = timescale.SYNTHETIC_RAMP
BIND_DEADLINE = 90.0  # after the last wave at most; pods still pending then count as pending
# ... or sooner, once no pod has bound for BIND_QUIET s after the last wave and the last bind:
# three times the schedulers' 10 s maximum backoff (waiting out the deadline was the longest part
# of every seed in which a contender left a pod pending).
BIND_QUIET = 30.0
# The synthetic scenarios' timing: every contender's deployed look-backs and paces over
# timescale.SYNTHETIC_SPEED (5x: Ballast's 300 s window is 60 s; docs/benchmarks.md's table);
# the trace's is bench.timescale's at trace time.
SYNTHETIC = timescale.synthetic_timing()
WATCHER_ENV = SYNTHETIC.watcher_env
CREATE_THREADS = 16
# Koordinator reads NodeMetric objects, which the simulator writes for its pools as koordlet
# would. Its main rows run on koordlet's defaults (a report every 60 s of 300-second means,
# aggregates over 5, 10 and 30 minutes) scaled alike (12 s reports of 60 s means, aggregates
# over 1, 2 and 6 minutes), warm as a koordlet that has run long before the pods come (no cold
# start of its aggregates). Before 2026-11-28 they ran at koordlet's real-time defaults.
NODE_METRICS = SYNTHETIC.node_metrics
# The `-fresh` rows, labelled: a report every 2 s of 15-second means, 60 s aggregates:
# Koordinator fresher than its scaled defaults.
FRESH_NODE_METRICS = nodemetric.NodeMetricConfig(
    report_seconds=2, aggregate_seconds=15, durations=(60,), warm_start=True
)
# The aggregated settings Koordinator's release notes show for production (v1.1: filter and score
# on a percentile of the aggregated usage instead of the mean), with p95 as issue 34 asks.
KOORDINATOR_P95 = {
    "aggregated": {
        "usageThresholds": {"cpu": 65, "memory": 95},
        "usageAggregationType": "p95",
        "scoreAggregationType": "p95",
    }
}
SOURCES = ("prometheus", "metrics-server")


def timing_setup() -> dict[str, Any]:
    """For a result's setup: the synthetic scenarios' timing as every contender ran it, the
    compression and each setting (docs/benchmarks.md), and Koordinator's arguments."""
    return {
        "watcher": WATCHER_ENV,
        "timing": SYNTHETIC.record(),
        "compression": timescale.synthetic_record(),
        "fresh_node_metrics": asdict(FRESH_NODE_METRICS),
        "load_aware_args": {
            "koordinator": SYNTHETIC.load_aware_args,
            "koordinator-agg": SYNTHETIC.load_aware_args | KOORDINATOR_P95,
        },
    }


T = 10.0

DEFAULT_PROFILE = "ballast-lvrb"  # the chart's default profile, which the verdicts are about
AA = "ballast-lvrb-aa"
# name -> (schedulerName, how it is started); order = order in tables and plots.
CONTENDERS = {
    "ballast-tlp": "Ballast TargetLoadPacking",
    "ballast-lvrb": "Ballast LoadVariationRiskBalancing",
    "trimaran-tlp": "Trimaran TargetLoadPacking on paypal/load-watcher 0.2.4 as deployed",
    "trimaran-lvrb": "Trimaran LoadVariationRiskBalancing on paypal/load-watcher 0.2.4 as deployed",
    "kube-scheduler": "kube-scheduler default",
    "koordinator": "Koordinator LoadAwareScheduling, its defaults (koord-scheduler 1.8.0)",
    "koordinator-agg": "Koordinator LoadAwareScheduling on the p95 of its aggregates",
    # The A/A pair: Ballast's default profile again on a pool of its own. What differs between
    # it and ballast-lvrb is chance alone; no gap smaller than theirs is a difference.
    AA: "Ballast LoadVariationRiskBalancing again (A/A: the spread between two runs)",
    # The peak model (PeakFit, its defaults) in place of LoadVariationRiskBalancing, its maxima
    # and history in trace time (bench.harness.timescale); docs/placement.md's rule decides from
    # its rows whether it becomes the chart's default.
    "ballast-peak": "Ballast PeakFit (the peak model, its defaults)",
    # issue 45's online study's best policy (bench/placement/online.py, docs/peak-model.md):
    # each pod at its workload's last 3 buckets' most, the requests' share beside the predicted
    # peak; docs/placement.md's rule for it, written before the run, decides from its rows.
    "ballast-peak-recent": "Ballast PeakFit, lookBack recent with the requests' share "
    "(lookBack: recent, requestsTerm: true, nodePeak: false)",
}
PEAK = "ballast-peak"
PEAK_RECENT = "ballast-peak-recent"
COUNTERPART = {"ballast-tlp": "trimaran-tlp", "ballast-lvrb": "trimaran-lvrb"}
# Ballast contenders with one plugin argument changed, run only when named in --contenders, to
# weigh a setting side by side with the default in one run: name -> (base, plugin args).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ballast-tlp-always": ("ballast-tlp", {"orderSaturated": "always"}),
    "ballast-lvrb-always": ("ballast-lvrb", {"orderSaturated": "always"}),
    # The estimator's floor off: a scale-out of an idle workload predicted at ~0.
    "ballast-tlp-nofloor": ("ballast-tlp", {"usageEstimate": {"profileFloor": 0}}),
    "ballast-tlp-requests": ("ballast-tlp", {"usageEstimate": {"useProfiles": False}}),
    # Koordinator's idea beside Ballast's score: keep pods off nodes whose load, the
    # pod counted, would pass a threshold (LoadThreshold, its defaults: 80 % CPU).
    "ballast-lvrb-threshold": ("ballast-lvrb", {}),
    AA: ("ballast-lvrb", {}),
    PEAK_RECENT: (PEAK, {"lookBack": "recent", "requestsTerm": True, "nodePeak": False}),
}
EXTRA_FILTERS = {"ballast-lvrb-threshold": "LoadThreshold"}
DESCRIPTIONS = {
    **CONTENDERS,
    **{v: f"{CONTENDERS[b]}, {args}" for v, (b, args) in VARIANTS.items()},
    "ballast-gpu": "Ballast with GpuLoad (bench.placement.gpu's gpu-shared scenario)",
    "koordinator-fresh": "Koordinator LoadAwareScheduling, NodeMetrics every 2 s of 15 s means "
    "(fresher than koordlet's defaults; labelled)",
    "koordinator-agg-fresh": "Koordinator LoadAwareScheduling on the p95 of 60 s aggregates "
    "reported every 2 s (labelled)",
    # Trimaran on Ballast's /watcher (load-watcher's metrics, Ballast's window): a second row.
    "trimaran-tlp-ballast": "Trimaran TargetLoadPacking on Ballast's /watcher",
    "trimaran-lvrb-ballast": "Trimaran LoadVariationRiskBalancing on Ballast's /watcher",
    "ballast-lvrb-threshold": "Ballast LoadVariationRiskBalancing with the LoadThreshold filter "
    "(80 % CPU, the pod counted)",
    AA: CONTENDERS[AA],
    PEAK_RECENT: CONTENDERS[PEAK_RECENT],
}
# What the verdicts (bench.verdict: ahead, tie or behind, against the A/A spread) compare in the
# synthetic scenarios; lower is better for each.
VERDICT_MEASURES = ("nodes_over_100", "max_cpu", "std_cpu", "pending")


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    waves: int = 4
    per_wave: int = 50
    gap: float = 20.0
    node_cpus: tuple[int, ...] = (4,)
    hot_fraction: float = 0.0
    misleading: bool = False
    # Pods are replicas of this many Deployments per pool, each Deployment's replicas sharing
    # one use factor (0: bare pods, each with its own factor).
    deployments: int = 0
    idle: bool = False  # every replica uses IDLE_FACTOR of its request


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("steady", "4 waves of 50 pods, 20 s apart, 4-CPU nodes"),
        Scenario("burst", "200 pods at once", waves=1, per_wave=200),
        Scenario("heterogeneous", "steady waves on nodes of 2/4/8/16 CPUs",
                 node_cpus=(2, 4, 8, 16)),
        # 4 x 35 pods: a mean true demand of about 75 % (94-95 % with 4 x 50 before), which a
        # perfect placement holds under 100 % (see perfect_fit and results' `feasibility`).
        Scenario("misleading", "steady waves; half the pods use 3x their request, half 0.2x",
                 per_wave=35, misleading=True),
        Scenario("learnable", "waves of replicas of 16 Deployments, 40 s apart; half the "
                 "Deployments use 3x their request, half 0.2x", per_wave=32, gap=40.0,
                 misleading=True, deployments=16),
        Scenario("hot-nodes", "steady waves; 20 % of nodes start at 70-85 % CPU", hot_fraction=0.2),
        # The second wave is predicted from the first's profile (~0 without the
        # estimator's floor); compare pods_per_node_max with the request rule's (Trimaran).
        Scenario("idle-scale-out", "an idle Deployment's 12 replicas, then 12 more 40 s later "
                 "(a scale-out), every replica at 2 % of its request", waves=2, per_wave=12,
                 gap=40.0, deployments=1, idle=True),
        # Its own plan and run (bench.placement.trace, --trace PATH): these fields go unused.
        Scenario("trace", "Bitbrains VMs as Deployments arriving in 4 waves while a day plays"),
    )
}  # fmt: skip
# `--quick`: one seed of every scenario, each in a shorter shape that still does what it is about.
# The pods and nodes are the full run's (the same plan), brought in fewer waves at the same gaps:
# 20 s lets a wave's load show before the next comes, 40 s lets the replicas' profiles form. The
# trace plays a shorter window at the same speed (bench.placement.trace.QUICK).
QUICK = {
    "steady": replace(SCENARIOS["steady"], about="2 waves of 100 pods, 20 s apart, 4-CPU nodes",
                      waves=2, per_wave=100),
    "burst": SCENARIOS["burst"],
    "heterogeneous": replace(SCENARIOS["heterogeneous"], about="2 waves of 100 pods, 20 s "
                             "apart, on nodes of 2/4/8/16 CPUs", waves=2, per_wave=100),
    "misleading": replace(SCENARIOS["misleading"], about="2 waves of 70 pods, 20 s apart; half "
                          "the pods use 3x their request, half 0.2x", waves=2, per_wave=70),
    "learnable": replace(SCENARIOS["learnable"], about="2 waves of replicas of 16 Deployments, "
                         "40 s apart; half the Deployments use 3x their request, half 0.2x",
                         waves=2, per_wave=64),
    "hot-nodes": replace(SCENARIOS["hot-nodes"], about="2 waves of 100 pods, 20 s apart; 20 % of "
                         "nodes start at 70-85 % CPU", waves=2, per_wave=100),
    "idle-scale-out": SCENARIOS["idle-scale-out"],
    "trace": replace(SCENARIOS["trace"], about="Bitbrains VMs as Deployments arriving in 3 waves "
                     "while 80 trace minutes of a day play"),
}  # fmt: skip
# Every contender but Koordinator's p95 mode, which leaves pods pending in several scenarios (a
# seed then waits out BIND_QUIET), and the two PeakFit rows, candidates only a full run decides
# on (one seed decides nothing, and an eighth pool would take the quick run's worst case past
# its 15 minutes: tests/unit/test_bench_quick.py): every pair the goals compare, every peer's
# main row and the A/A pair stay.
QUICK_CONTENDERS = tuple(c for c in CONTENDERS if c not in ("koordinator-agg", PEAK, PEAK_RECENT))


# -- the plan: nodes and pods, a pure function of scenario and seed -----------------------------
@dataclass(frozen=True)
class NodePlan:
    cpu: int
    background_cpu: float
    background_memory: float


@dataclass(frozen=True)
class PodPlan:
    cpu_m: int
    factor: float
    deployment: int | None = None  # index of the Deployment the pod is a replica of


def plan(scenario: Scenario, seed: int, nodes: int) -> tuple[list[NodePlan], list[PodPlan]]:
    """The same nodes and pods for every pool: sizes, background, requests, use factors."""
    rng = random.Random(f"placement:{scenario.name}:{seed}")
    hot = set(rng.sample(range(nodes), round(scenario.hot_fraction * nodes)))
    node_plans = []
    for i in range(nodes):
        cpu_range = HOT_BACKGROUND if i in hot else BACKGROUND
        node_plans.append(
            NodePlan(
                scenario.node_cpus[i % len(scenario.node_cpus)],
                rng.uniform(*cpu_range),
                rng.uniform(10.0, 30.0),
            )
        )
    count = scenario.waves * scenario.per_wave
    if scenario.deployments:
        return node_plans, _replicas(scenario, rng, count)
    heavy = set(rng.sample(range(count), count // 2)) if scenario.misleading else set()
    pod_plans = []
    for j in range(count):
        if scenario.misleading:
            factor = 3.0 if j in heavy else 0.2
        else:
            factor = rng.uniform(*FACTOR)
        pod_plans.append(PodPlan(REQUESTS_M[j % len(REQUESTS_M)], factor))
    return node_plans, pod_plans


def _replicas(scenario: Scenario, rng: random.Random, count: int) -> list[PodPlan]:
    """Every wave has the same number of replicas of each Deployment; a Deployment's request
    and use factor are its own (half of them 3x, half 0.2x, drawn per seed)."""
    k = scenario.deployments
    heavy = set(rng.sample(range(k), k // 2))
    return [
        PodPlan(
            REQUESTS_M[d % len(REQUESTS_M)],
            IDLE_FACTOR if scenario.idle else 3.0 if d in heavy else 0.2,
            d,
        )
        for j in range(count)
        for d in (j % k,)
    ]


def deployment_name(contender: str, d: int) -> str:
    return f"{contender}-d{d:02d}"


def template_hash(name: str) -> str:
    """A stand-in pod-template-hash: stable per Deployment, as the controller's is per template."""
    return hashlib.sha256(name.encode()).hexdigest()[:10]


def mean_demand(nodes: list[NodePlan], pods: list[PodPlan]) -> float:
    """The pool's true CPU demand with every pod at full use, in % of the pool's CPUs."""
    total = sum(n.cpu * 1000 for n in nodes)
    used = sum(n.background_cpu * n.cpu * 10 for n in nodes) + sum(p.cpu_m * p.factor for p in pods)
    return 100.0 * used / total


def perfect_fit(nodes: list[NodePlan], pods: list[PodPlan], wobble: float = 0.1) -> float | None:
    """The hottest node of one placement that knows every pod's true use: first fit, biggest
    pods first, onto the node with the most room, backgrounds at the top of their wobble. A
    result under 100 shows a placement under 100 % exists; None: every pod could not be placed
    under 100 % this way (which proves nothing either way)."""
    room = [n.cpu * 1000 * (1 - n.background_cpu * (1 + wobble) / 100) for n in nodes]
    for use in sorted((p.cpu_m * p.factor for p in pods), reverse=True):
        best = max(range(len(room)), key=room.__getitem__)
        if room[best] < use:
            return None
        room[best] -= use
    return max(100.0 * (1 - r / (n.cpu * 1000)) for r, n in zip(room, nodes, strict=True))


def node_name(contender: str, i: int) -> str:
    return f"{contender}-{i:02d}"


def pod_name(contender: str, j: int) -> str:
    return f"{contender}-p{j:03d}"


def simulator_config(seed: int, nodes: list[NodePlan], pods: list[PodPlan]) -> SimulatorConfig:
    """Background and factors fixed per index, so pool A's node 7 is pool B's node 7."""
    background, factors = {}, {}
    for c in DESCRIPTIONS:
        for i, n in enumerate(nodes):
            background[node_name(c, i)] = (n.background_cpu, n.background_memory)
        for j, p in enumerate(pods):
            factors[f"{NAMESPACE}/{pod_name(c, j)}"] = p.factor
    return SimulatorConfig(
        seed=seed, ramp_seconds=RAMP_SECONDS, background=background, pod_factors=factors
    )


# -- measures: pure functions of the placement and the simulator's config -----------------------
def true_cpu(
    contender: str,
    nodes: list[NodePlan],
    pods: list[PodPlan],
    placed: dict[str, tuple[str, float]],
    config: SimulatorConfig,
    at: float,
) -> list[float]:
    """CPU % of the pool's nodes at wall time `at`, as the simulator computes it, unclamped.
    `placed`: pod name -> (node, wall time it was bound)."""
    caps = {
        node_name(contender, i): NodeCapacity(n.cpu * 1000, n.cpu * 4 * 1024**3)
        for i, n in enumerate(nodes)
    }
    uses = []
    for j, p in enumerate(pods):
        name = pod_name(contender, j)
        if name in placed:
            node, started = placed[name]
            uses.append(PodUse(f"{NAMESPACE}/{name}", node, p.cpu_m, 256 * 1024**2, started))
    loads = node_loads(caps, uses, at, config, clamp=False)
    return [loads[node_name(contender, i)][0] for i in range(len(nodes))]


def measure(cpu: list[float], placed: dict[str, tuple[str, float]], pods: int) -> dict[str, Any]:
    """The final state of one pool: how hot, how packed, how much is left pending."""
    per_node: dict[str, int] = {}
    for node, _ in placed.values():
        per_node[node] = per_node.get(node, 0) + 1
    ordered = sorted(cpu)
    return {
        "nodes_over_100": sum(c > 100 for c in cpu),
        "nodes_over_90": sum(c > 90 for c in cpu),
        "nodes_over_target_10": sum(c > TARGET + 10 for c in cpu),
        "max_cpu": round(max(cpu), 1),
        "p90_cpu": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1),
        "mean_cpu": round(statistics.fmean(cpu), 1),
        "std_cpu": round(statistics.pstdev(cpu), 1),
        "nodes_used": len(per_node),
        "pods_per_node_max": max(per_node.values(), default=0),
        "pending": pods - len(placed),
    }


MEASURES = (
    "nodes_over_100",
    "nodes_over_90",
    "nodes_over_target_10",
    "max_cpu",
    "p90_cpu",
    "mean_cpu",
    "std_cpu",
    "nodes_used",
    "pods_per_node_max",
    "last_wave_pods_per_node_max",
    "last_wave_nodes_used",
    "pending",
    "bind_seconds",
)


def last_wave_spread(scenario: Scenario, placed: dict[str, tuple[str, float]]) -> dict[str, int]:
    """How the last wave's pods spread (a scale-out, in idle-scale-out): the most on one node
    and the nodes they went to."""
    first = (scenario.waves - 1) * scenario.per_wave
    nodes = [node for name, (node, _) in placed.items() if int(name.rsplit("-p", 1)[1]) >= first]
    counts = {n: nodes.count(n) for n in set(nodes)}
    return {
        "last_wave_pods_per_node_max": max(counts.values(), default=0),
        "last_wave_nodes_used": len(counts),
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """scenario -> contender -> measure -> median, min, max over the seeds."""
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for run in runs:
        for c, result in run["contenders"].items():
            slot = out.setdefault(run["scenario"], {}).setdefault(c, {})
            for m in MEASURES:
                if result.get(m) is not None:
                    slot.setdefault(m, []).append(result[m])  # type: ignore[arg-type]
    for per_c in out.values():
        for c, values in per_c.items():
            per_c[c] = {
                m: {"median": statistics.median(v), "min": min(v), "max": max(v)}
                for m, v in values.items()
            }
    return out


def goals(summary: dict[str, Any]) -> dict[str, dict[str, bool | None]]:
    """The placement goals per scenario (docs/placement.md), on medians; None when a
    contender has no value."""
    out: dict[str, dict[str, bool | None]] = {}
    for scenario, per_c in summary.items():

        def med(c: str, m: str, per_c: dict = per_c) -> float | None:
            return (per_c.get(c, {}).get(m) or {}).get("median")

        result: dict[str, bool | None] = {}
        for ours, theirs in COUNTERPART.items():
            result[f"{ours}: 0 nodes over 100 %"] = _cmp(med(ours, "nodes_over_100"), 0, "==")
            # No goal on "fewer nodes over target + 10" (withdrawn, docs/placement.md): with
            # mean demand far above the target it rewards piling up. An even spread is what keeps
            # hot spots away.
            result[f"{ours}: lower std of node CPU than {theirs}"] = _cmp(
                med(ours, "std_cpu"), med(theirs, "std_cpu"), "<"
            )
            result[f"{ours}: lower max than {theirs}"] = _cmp(
                med(ours, "max_cpu"), med(theirs, "max_cpu"), "<"
            )
            result[f"{ours}: no more pending than kube-scheduler"] = _cmp(
                med(ours, "pending"), med("kube-scheduler", "pending"), "<="
            )
            limit = med("kube-scheduler", "bind_seconds")
            result[f"{ours}: all bound within kube-scheduler + 10 %"] = _cmp(
                med(ours, "bind_seconds"), None if limit is None else 1.1 * limit, "<="
            )
        if scenario == "learnable":
            others = [c for c in per_c if not c.startswith("ballast-")]
            best = min(
                (med(c, "nodes_over_90") for c in others if med(c, "nodes_over_90") is not None),
                default=None,
            )
            for ours in COUNTERPART:
                result[f"{ours}: max at most 95 %"] = _cmp(med(ours, "max_cpu"), 95.0, "<=")
                result[f"{ours}: at most half the nodes over 90 % of the best other"] = _cmp(
                    med(ours, "nodes_over_90"), None if best is None else best / 2, "<="
                )
        out[scenario] = result
    return out


def feasibility(
    names: list[str], seeds: list[int], nodes: int, shapes: dict[str, Scenario] = SCENARIOS
) -> dict[str, Any]:
    """Per scenario and seed: the mean true demand and the hottest node of perfect_fit's
    placement (None when it found none under 100 %)."""
    out: dict[str, Any] = {}
    for name in names:
        for seed in seeds:
            node_plans, pod_plans = plan(shapes[name], seed, nodes)
            fit = perfect_fit(node_plans, pod_plans)
            out.setdefault(name, {})[str(seed)] = {
                "mean_demand": round(mean_demand(node_plans, pod_plans), 1),
                "perfect_fit_max": None if fit is None else round(fit, 1),
            }
    return out


def _cmp(a: float | None, b: float | None, op: str) -> bool | None:
    if a is None or b is None:
        return None
    return {"==": a == b, "<": a < b, "<=": a <= b}[op]


# -- one run: a fresh stack, all contenders, the same pods -------------------------------------
def ballast_profile(contender: str) -> dict[str, Any]:
    """A Ballast contender's profile: the chart's (bench.harness.chart) under the contender's
    name, so that the default and its A/A twin are Ballast as deployed and a change of the
    chart's default moves them; the others are variants of it, one difference each: another
    load score in place of the chart's (TargetLoadPacking, PeakFit), a plugin argument
    (VARIANTS), a filter (EXTRA_FILTERS) or GpuLoad added (bench.placement.gpu)."""
    profile = copy.deepcopy(chart.profile())
    profile["schedulerName"] = contender
    base, args = VARIANTS.get(contender, (contender, {}))
    score = {"ballast-tlp": TARGET_LOAD_PACKING, PEAK: PEAK_FIT}.get(base)
    plugins = profile.setdefault("plugins", {})
    if score is not None:  # the chart's load score(s) out, this one in at their weight
        section = plugins.setdefault("score", {})
        loads = {LOAD_VARIATION_RISK_BALANCING, TARGET_LOAD_PACKING, PEAK_FIT}
        enabled = section.get("enabled", [])
        weight = max((r.get("weight", 1) for r in enabled if r["name"] in loads), default=1)
        section["enabled"] = [r for r in enabled if r["name"] not in loads]
        section["enabled"].append({"name": score, "weight": weight})
        section["disabled"] = [r for r in section.get("disabled", []) if r["name"] not in loads]
        section["disabled"] += [{"name": n} for n in sorted(loads - {score})]
    if args:
        plugin = {"ballast-tlp": TARGET_LOAD_PACKING, PEAK: PEAK_FIT}.get(
            base, LOAD_VARIATION_RISK_BALANCING
        )
        configs = profile.setdefault("pluginConfig", [])
        config = next((c for c in configs if c["name"] == plugin), None)
        if config is None:
            configs.append(config := {"name": plugin, "args": {}})
        config["args"] = {**config.get("args", {}), **args}
    if base == "ballast-gpu":  # bench.placement.gpu: GPU pods placed by GPU load (docs/gpu.md)
        plugins.setdefault("filter", {}).setdefault("enabled", []).append({"name": "GpuLoad"})
        plugins.setdefault("score", {}).setdefault("enabled", []).append(
            {"name": "GpuLoad", "weight": 5}
        )
    if contender in EXTRA_FILTERS:
        filters = plugins.setdefault("filter", {}).setdefault("enabled", [])
        filters.append({"name": EXTRA_FILTERS[contender]})
    return profile


def _ballast_config(contender: str, watcher_url: str) -> dict[str, Any]:
    """The chart's scheduler file with the benchmarks' overlays and the contender's profile."""
    return chart.scheduler_config(watcher_url, [ballast_profile(contender)])


def _start_ballast(
    plane: ControlPlane, contender: str, watcher_url: str, work: Path, flags: tuple[str, ...] = ()
) -> int:
    """Starts a Ballast contender; returns its status port (/metrics, /api/v1/decisions)."""
    config = _ballast_config(contender, watcher_url)
    argv, port = ballast_argv(plane, work, contender, "scheduler", config, "--metrics-listen")
    argv += ["--log-level", "WARNING", *flags]
    if contender == "ballast-gpu":
        # GPU figures are refused on only while fresh: this bench's 2 s polls keep them so for
        # 4 s, less than the default 5 s between fetches (a 15 s poll keeps them 30 s)
        argv += ["--watcher-interval", "1"]
    plane.spawn(contender, argv)

    def has_load_data() -> bool:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
        for line in text.splitlines():
            if line.startswith("ballast_scheduler_watcher_snapshot_age_seconds "):
                return float(line.split()[1]) >= 0
        return False

    # Pods submitted before its first snapshot would be placed from allocation alone.
    plane.wait_until(contender, has_load_data, 60)
    return port


def _aggregated(contenders: list[str]) -> bool:
    return any(c.startswith("koordinator-agg") for c in contenders)


def uses_load_watcher(contender: str) -> bool:
    return contender.startswith("trimaran-") and not contender.endswith("-ballast")


def scheduler_name(contender: str) -> str:
    return "default-scheduler" if contender == "kube-scheduler" else contender


def start_contender(
    plane: ControlPlane,
    contender: str,
    watcher_url: str,
    work: Path,
    timing: Timing | None = None,
    load_watcher_url: str = "",
) -> int | None:
    """`load_watcher_url`: paypal/load-watcher's, which the Trimaran rows read as deployed (the
    `-ballast` ones read Ballast's watcher). Returns a Ballast contender's status port."""
    timing = timing or SYNTHETIC
    if contender.startswith("ballast-"):
        return _start_ballast(plane, contender, watcher_url, work, timing.scheduler_flags)
    if contender.startswith("trimaran-"):
        tlp = contender.startswith("trimaran-tlp")
        plugin = TARGET_LOAD_PACKING if tlp else LOAD_VARIATION_RISK_BALANCING
        upstream = uses_load_watcher(contender) and load_watcher_url
        address = load_watcher_url if upstream else watcher_url
        start_trimaran(plane, address, plugin, scheduler_name=contender, name=contender)
    elif contender.startswith("koordinator"):
        p95 = KOORDINATOR_P95 if contender.startswith("koordinator-agg") else {}
        args = timing.load_aware_args | p95
        start_koord_scheduler(plane, scheduler_name=contender, args=args or None, name=contender)
    else:
        start_kube_scheduler(plane, name=contender)
    return None


def pod_body(contender: str, j: int, p: PodPlan) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": pod_name(contender, j), "labels": {POOL_LABEL: contender}}
    if p.deployment is not None:
        # A replica as a Deployment's ReplicaSet makes it (no controllers run here: nothing
        # else reads the owner, which need not exist).
        name = deployment_name(contender, p.deployment)
        digest = template_hash(name)
        metadata["labels"]["pod-template-hash"] = digest
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-{digest}",
             "uid": f"00000000-0000-4000-8000-{digest[:10]:0>12}", "controller": True}
        ]  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": scheduler_name(contender),
            "nodeSelector": {POOL_LABEL: contender},
            "containers": [
                {
                    "name": "app",
                    "image": "example.invalid/app:1",
                    "resources": {"requests": {"cpu": f"{p.cpu_m}m", "memory": "256Mi"}},
                }
            ],
        },
    }


class Services(SimulatedCluster):
    """One run's simulated cluster (its watcher on Prometheus or metrics-server) and the
    contenders' schedulers; `stop` ends whatever of it started."""

    def __init__(
        self,
        prefix: str,
        specs: list[NodeSpec],
        config: SimulatorConfig,
        contenders: list[str],
        source: str = "prometheus",
        timing: Timing | None = None,
        before_watcher: Callable[[str], Any] | None = None,
    ) -> None:
        """`timing`: the replayed trace's (bench.timescale), else the synthetic scenarios';
        `before_watcher`: the trace's warm start of the watcher (SimulatedCluster)."""

        def pools(fresh: bool) -> set[str]:
            chosen = {c for c in contenders
                      if c.startswith("koordinator") and c.endswith("-fresh") == fresh}  # fmt: skip
            return {s.name for s in specs if s.labels.get(POOL_LABEL) in chosen}

        self.timing = timing or SYNTHETIC
        super().__init__(
            prefix,
            specs,
            config,
            self.timing.watcher_env,
            metrics_server=source == "metrics-server",
            node_metrics=self.timing.node_metrics,
            node_metrics_for=pools(fresh=False),
            more_node_metrics={FRESH_NODE_METRICS: pools(fresh=True)},
            before_watcher=before_watcher,
        )
        self.contenders = contenders
        self.load_watcher: LoadWatcher | None = None
        self.status_ports: dict[str, int] = {}  # Ballast contenders' decision APIs

    def start(self) -> Any:
        """The API client, every contender running and the watcher reporting every node."""
        api = self.start_cluster()
        ensure_namespace(api, NAMESPACE)
        self._wait_node_metrics()
        upstream = ""
        # From Prometheus only: with --source metrics-server the Trimaran rows read Ballast's
        # watcher, which then answers what load-watcher answers from metrics-server (Latest).
        if self.prom_url and any(uses_load_watcher(c) for c in self.contenders):
            upstream = self._start_load_watcher()
        for c in self.contenders:
            port = start_contender(
                self.plane, c, self.watcher_url, self.work, self.timing, upstream
            )
            if port is not None:
                self.status_ports[c] = port
        return api

    def _start_load_watcher(self) -> str:
        """paypal/load-watcher on this run's Prometheus (through RangeProxy in a replayed
        trace), once it serves every node: Trimaran reads it at start."""
        nodes = [s.name for s in self.specs]
        self.load_watcher = LoadWatcher(
            self.work / "load-watcher", self.prom_url, self.timing.load_watcher_speed
        )
        self.load_watcher.start().wait_nodes(nodes, timeout=180)
        return self.load_watcher.url

    def _wait_node_metrics(self, timeout: float = 60.0) -> None:
        """Until every Koordinator node has a reported NodeMetric: as Ballast waits for its
        first snapshot, pods must not meet a node without figures (the writers start warm and
        report at once)."""
        if not self.node_metrics:
            return
        custom = client.CustomObjectsApi(self.api)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = custom.list_cluster_custom_object(
                nodemetric.GROUP, nodemetric.VERSION, nodemetric.PLURAL, _request_timeout=T
            )
            # The p95 contenders read the aggregates: they appear after half their duration.
            field = "aggregatedNodeUsages" if _aggregated(self.contenders) else "nodeUsage"
            reported = {
                m["metadata"]["name"]
                for m in listed["items"]
                if field in ((m.get("status") or {}).get("nodeMetric") or {})
            }
            if self.node_metrics_for <= reported:
                return
            time.sleep(0.5)
        raise TimeoutError(f"no NodeMetric status for every Koordinator node in {timeout:.0f} s")

    def stop(self) -> None:
        # The schedulers first, while the apiserver still answers their last calls.
        for c in self.contenders:
            stop_scheduler(self.plane, c)
        if self.load_watcher is not None:
            self.load_watcher.stop()
        super().stop()


def run_one(
    scenario: Scenario,
    seed: int,
    contenders: list[str],
    nodes: int,
    say=print,
    source: str = "prometheus",
) -> dict[str, Any]:
    node_plans, pod_plans = plan(scenario, seed, nodes)
    config = simulator_config(seed, node_plans, pod_plans)
    specs = [
        NodeSpec(node_name(c, i), cpu=str(n.cpu), memory=f"{4 * n.cpu}Gi", labels={POOL_LABEL: c})
        for c in contenders
        for i, n in enumerate(node_plans)
    ]
    services = Services(
        f"ballast-placement-{scenario.name}-{seed}-", specs, config, contenders, source
    )
    plane = services.plane
    ok = False
    try:
        started = time.monotonic()
        api = services.start()
        say(f"  stack and {len(contenders)} schedulers up in {time.monotonic() - started:.0f} s")

        tracker = BindTracker(api, NAMESPACE)
        tracker.start()
        wall_offset = time.time() - time.monotonic()
        maker = PodMaker(plane)
        first = time.monotonic()
        for w in range(scenario.waves):
            _sleep_until(first + w * scenario.gap)
            js = range(w * scenario.per_wave, (w + 1) * scenario.per_wave)
            bodies = [pod_body(c, j, pod_plans[j]) for j in js for c in contenders]
            with ThreadPoolExecutor(CREATE_THREADS) as pool:
                list(pool.map(lambda b: maker.create(NAMESPACE, b), bodies))
        last_wave = first + (scenario.waves - 1) * scenario.gap
        total = len(pod_plans) * len(contenders)
        while not binding_over(
            time.monotonic(), last_wave, max(tracker.bound.values(), default=first),
            len(tracker.bound), total,
        ):  # fmt: skip
            time.sleep(0.2)
        last_bind = max(tracker.bound.values(), default=first)
        # Every pod at full use: the final state is judged after the ramp.
        _sleep_until(max(last_bind, last_wave) + RAMP_SECONDS + 1.0)
        final_at = time.time()
        tracker.stop()
        placed_all = _placements(plane, tracker, wall_offset)

        say(f"  all pods placed and settled after {time.monotonic() - first:.0f} s")
        results: dict[str, Any] = {}
        for c in contenders:
            placed = {n: v for n, v in placed_all.items() if n.startswith(f"{c}-p")}
            cpu = true_cpu(c, node_plans, pod_plans, placed, config, final_at)
            result = measure(cpu, placed, len(pod_plans)) | last_wave_spread(scenario, placed)
            binds = [tracker.bound[n] for n in placed if n in tracker.bound]
            done = result["pending"] == 0 and binds
            result["bind_seconds"] = round(max(binds) - first, 2) if done else None
            result["final_cpu"] = [round(x, 1) for x in cpu]
            t0 = first + wall_offset
            seconds = int(final_at - t0) + 1
            result["max_cpu_over_time"] = [
                round(max(true_cpu(c, node_plans, pod_plans, placed, config, t0 + s)), 1)
                for s in range(seconds)
            ]
            if c.startswith("trimaran-"):
                result["missing_metrics_log_lines"] = len(missing_metrics_lines(plane, c))
            results[c] = result
        ok = True
        return {"scenario": scenario.name, "seed": seed, "contenders": results}
    finally:
        stopping = time.monotonic()
        services.close(ok, say)
        say(f"  stack stopped in {time.monotonic() - stopping:.0f} s")


def _placements(
    plane: ControlPlane, tracker: BindTracker, wall_offset: float
) -> dict[str, tuple[str, float]]:
    """pod -> (node, wall time bound), from one list: the watch's times, the list's nodes."""
    with plane.session() as s:
        url = f"{plane.base_url}/api/v1/namespaces/{NAMESPACE}/pods"
        items = s.get(url, timeout=T).json()["items"]
    out = {}
    for pod in items:
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
        if node:
            out[name] = (node, tracker.bound.get(name, time.monotonic()) + wall_offset)
    return out


def binding_over(now: float, last_wave: float, last_bind: float, bound: int, total: int) -> bool:
    """Whether a run stops waiting for bindings: every pod bound, BIND_DEADLINE after the last
    wave, or BIND_QUIET without a binding since the last wave and the last bind."""
    if bound >= total or now >= last_wave + BIND_DEADLINE:
        return True
    return now >= max(last_wave, last_bind) + BIND_QUIET


def _sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)
