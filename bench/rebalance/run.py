"""`make bench-rebalance`: after placement goes wrong, who cools the hot nodes, at what cost.

Per scenario and seed one fresh stack: the sandbox with its controllers (Deployments recreate
evicted pods), the closed-loop simulator, Prometheus, Redis, Ballast's watcher and Ballast's
scheduler, which places every replacement in every pool. Ballast's scheduler and rebalancers run
as the chart deploys them (its scheduler profile and its rebalancer section), with only the
overlays bench.harness.chart lists. One pool of identical nodes (same sizes, seeded background
per node index) per contender run at the same time, each with the same
Deployments (pods pinned to the pool by a nodeSelector, one namespace per pool, a PDB of
maxUnavailable 1 per Deployment). Paired: every pool starts from one placement, the first
pool's as Ballast's scheduler made it, copied into the others by binding each workload's pods
to the nodes of the same indexes (`place_paired`); only the rebalancer differs:

- none: nothing moves pods after binding;
- ballast: `ballast rebalancer` as the chart deploys it, restricted to its pool by nodeSelector;
- ballast-saturated: the chart's with `saturated: 95` (a node whose 3 newest fresh CPU samples
  are at or above 95 % is hot at once: scheduler/rebalancer/saturation.py);
- ballast-saturated-n1: the same on 1 fresh observation (`consecutive: 1`);
- ballast-saturated-n1-warm: that with `targetsMustBeCold: false` (a target need only stay under
  high with the pod, the judge's check, not be under low);
- ballast-saturated (only when named since 5729630), ballast-n1, ballast-latest, ballast-p95,
  ballast-n5, ballast-h70, ballast-h90, ballast-saturated-m3, ballast-saturated-n1-m3,
  ballast-saturated-n1-m3-rn: the other
  candidates for the defaults (docs/rebalancer.md: `consecutive: 1`; statistic latest;
  statistic p95; 5 observations; hot above 70 % or 90 %; saturated with `maxPerNode: 3`, on 3
  fresh samples or on 1, and with a round on each of the watcher's polls), only when named;
- descheduler: upstream descheduler's LowNodeUtilization on Prometheus (`metricsUtilization`,
  the watcher's CPU query as a 0..1 vector per `instance`), restricted to its pool's nodes and
  namespace, with the same thresholds.
- koord-descheduler: Koordinator's LowNodeLoad with DefaultEvictor (the Eviction API) on the
  NodeMetric objects the simulator writes for its pool (koordlet's defaults, a report every 60 s
  of 300-second means, scaled as every contender's: bench.harness.timescale), the same CPU
  thresholds, its own anomaly count (5 rounds).
- koord-descheduler-migration: the same LowNodeLoad evicting through Koordinator's
  MigrationController, as its own configuration does, in EvictDirectly mode (a PodMigrationJob
  per eviction, under its per-node and per-workload limits), in the full run, not --quick:
  ReservationFirst, its default, would have koord-scheduler place the replacement
  (docs/rebalancer.md).

Scenarios: drift (some workloads' use triples), hot-start (some nodes' background load jumps to
80-90 %), stable (nothing changes: every eviction is a false one), trace (a day of a production
trace's VMs as workloads: bench.rebalance.trace, docs/trace.md). Measures come from the
simulator's true demand (its seeded functions, unclamped), sampled every second, and from the
pods as listed every second: see `measure`; why each Ballast pool moved what it did, from its
rebalancer's decision records (bench.rebalance.decisions). Results:
bench/results/rebalance.json and rebalance-<scenario>.png (hottest node over time, eviction
marks); `--quick` (one seed, every scenario shortened, five contenders): rebalance-quick.json.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import requests
import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from bench.harness import chart, timescale
from bench.harness.common import RESULTS_DIR
from bench.harness.provenance import write_result
from bench.harness.simulated_cluster import SimulatedCluster, ballast_argv
from bench.harness.timescale import Timing
from bench.harness.verdict import all_verdicts
from bench.rebalance import decisions
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import NodeSpec
from sandbox.load.simulator import Simulator, SimulatorConfig, node_loads
from sandbox.peers import descheduler
from sandbox.peers.koordinator import descheduler as koord_descheduler
from sandbox.peers.trimaran import stop_scheduler
from watcher import defaults as watcher_defaults

RESULTS = RESULTS_DIR
# ballast-saturated's level: a CPU this close to its capacity on 3 fresh samples is pinned.
SATURATED = 95.0
POOL_LABEL = "ballast.dev/bench-pool"
AA = "ballast-aa"
CONTENDERS = {
    "none": "no rebalancer",
    "ballast": "Ballast rebalancer as the chart deploys it (avg of the watcher's window, 3 fresh "
    "observations, judged by the chart's profile)",
    "ballast-n1": "Ballast rebalancer, hot on 1 fresh observation (consecutive: 1)",
    "ballast-latest": "Ballast rebalancer on the window's latest sample, 3 fresh observations",
    "ballast-p95": "Ballast rebalancer on the window's 95th percentile, 3 fresh observations",
    "ballast-n5": "Ballast rebalancer, hot on 5 fresh observations (consecutive: 5)",
    "ballast-h70": "Ballast rebalancer, hot above 70 % (avg, 3 fresh observations)",
    "ballast-h90": "Ballast rebalancer, hot above 90 % (avg, 3 fresh observations)",
    "ballast-saturated": "Ballast rebalancer, also hot at once on 3 fresh samples at or above "
    f"{SATURATED:g} % (saturated: {SATURATED:g})",
    "ballast-saturated-n1": "ballast-saturated on 1 fresh observation (consecutive: 1): a "
    "pinned node hot on its first saturated sample, as the descheduler reads one",
    "ballast-saturated-m3": "ballast-saturated with maxPerNode 3: a saturated node's planned "
    "set of moves in one round",
    "ballast-saturated-n1-m3": "ballast-saturated on 1 fresh observation with maxPerNode 3: "
    "a pinned node's planned set of moves in the round of its first saturated sample",
    "ballast-saturated-n1-warm": "ballast-saturated-n1 with targetsMustBeCold off: a target "
    "need only be under high with the pod, not under low",
    "ballast-saturated-n1-m3-rn": "ballast-saturated-n1-m3 with roundOnNewSamples: a round as "
    "soon as the watcher's client has a newer sample, not up to an interval later",
    "descheduler": "descheduler LowNodeUtilization, metricsUtilization from Prometheus",
    "koord-descheduler": "Koordinator LowNodeLoad (DefaultEvictor) on NodeMetrics, 5 rounds hot",
    "koord-descheduler-migration": "Koordinator LowNodeLoad through its MigrationController "
    "(EvictDirectly), 5 rounds hot",
    # The A/A pair: Ballast's default again on a pool of its own; no gap smaller than theirs
    # is a difference.
    AA: "Ballast rebalancer again, its defaults (A/A: the spread between two runs)",
}
# Ballast's rebalancer as the chart deploys it (bench.harness.chart): its CPU thresholds are
# every rebalancer's here (% CPU: hot above HIGH, a target below LOW), its interval every
# rebalancer's round period in the synthetic scenarios.
DEPLOYED = chart.rebalancer_settings()
HIGH, LOW = next((r.high, r.low) for r in DEPLOYED.rules if r.resource == "cpu")
# Ballast rebalancer contenders: each one's keys of the `rebalancer:` section that differ from
# the chart's (rebalancer_config; docs/rebalancer.md's table of contenders says why).
REBALANCERS: dict[str, dict[str, Any]] = {
    "ballast": {},
    AA: {},
    "ballast-n1": {"consecutive": 1},
    "ballast-latest": {
        "resources": [{"name": "cpu", "statistic": "latest", "high": HIGH, "low": LOW}]
    },
    "ballast-p95": {"resources": [{"name": "cpu", "statistic": "p95", "high": HIGH, "low": LOW}]},
    "ballast-n5": {"consecutive": 5},
    "ballast-h70": {"resources": [{"name": "cpu", "statistic": "avg", "high": 70.0, "low": LOW}]},
    "ballast-h90": {"resources": [{"name": "cpu", "statistic": "avg", "high": 90.0, "low": LOW}]},
    "ballast-saturated": {"saturated": SATURATED},
    "ballast-saturated-n1": {"saturated": SATURATED, "consecutive": 1},
    "ballast-saturated-m3": {"saturated": SATURATED, "maxPerNode": 3},
    "ballast-saturated-n1-m3": {"saturated": SATURATED, "consecutive": 1, "maxPerNode": 3},
    # When no node is under low (hot-start seed 2 at 691f861: no Ballast or Koordinator pool
    # moved a pod, the descheduler twice), a target under high that stays so with the pod.
    "ballast-saturated-n1-warm": {
        "saturated": SATURATED,
        "consecutive": 1,
        "targetsMustBeCold": False,
    },
    "ballast-saturated-n1-m3-rn": {
        "saturated": SATURATED,
        "consecutive": 1,
        "maxPerNode": 3,
        "roundOnNewSamples": True,
    },
}
# The contenders a run has unless --contenders names others: the defaults' candidates the
# last measurements left standing (ballast-saturated-n1: hot-start at 53bc346, 13.8 node-s over
# 100 % against the chart's 106.8; -saturated-n1-warm: drift seed 1 of the pilot at 050e544, 7
# against its 157, docs/rebalancer.md); ballast-saturated (21.6 at 53bc346, behind -n1 there)
# gave its pool to -warm, inside the full run's budget of eight pools; it, ballast-n1, -latest,
# -p95, -n5, -h70, -h90, -saturated-m3, -saturated-n1-m3 and -saturated-n1-m3-rn only when
# asked for.
# koord-descheduler-migration is Koordinator as its own configuration evicts, so the full run
# has it; --quick keeps to the pairs every scenario's verdicts need.
DEFAULT_CONTENDERS = (
    "none", "ballast", AA, "ballast-saturated-n1", "ballast-saturated-n1-warm", "descheduler",
    "koord-descheduler", "koord-descheduler-migration",
)  # fmt: skip
QUICK_CONTENDERS = ("none", "ballast", AA, "descheduler", "koord-descheduler")
# What the verdicts (bench.verdict, against the A/A spread) compare; lower is better for each.
VERDICT_MEASURES = {
    "stable": ("evictions",),
    "*": ("node_seconds_over_100", "node_seconds_over_high", "evictions"),
}
NODES = 8
NODE_CPU = 2
WORKLOADS = 8
REPLICAS = 3
REQUESTS_M = (200, 300, 400)
BASE_FACTOR = (0.5, 0.9)
BACKGROUND = (5.0, 30.0)
HOT_BACKGROUND = (80.0, 90.0)
DRIFT_FACTOR = 3.0
DRIFTING = 2  # workloads whose use triples in "drift"
HOT_NODES = 2  # nodes whose background jumps in "hot-start"
RAMP_SECONDS = timescale.SYNTHETIC_RAMP
SETTLE_SECONDS = 45.0  # after the last pod is bound, before the rebalancers start
BEFORE_CHANGE = 30.0  # rebalancers running on the settled cluster before the change
PLACE_TIMEOUT = 120.0  # seconds for a pool's pods to be placed
INTERVAL = DEPLOYED.interval  # Ballast's round period as the chart deploys it (real time)
# The synthetic scenarios' timing: every contender's deployed look-backs and paces over
# timescale.SYNTHETIC_SPEED (5x: Ballast's 300 s window is 60 s), Koordinator's NodeMetrics and
# koord-descheduler's too; the trace's is bench.timescale's at trace time.
SYNTHETIC = timescale.synthetic_timing()
WATCHER_ENV = SYNTHETIC.watcher_env
ROUNDS = SYNTHETIC.rounds or INTERVAL  # every rebalancer's round period here: INTERVAL over 5
CPU_QUERY = '1 - avg by (instance) (irate(node_cpu_seconds_total{mode="idle"}[$range]))'
SEEDS = (1, 2, 3, 4, 5)  # issue 44: at least 5 for the synthetic scenarios of the headline
KOORD = "koord-descheduler"
KOORD_MIGRATION = "koord-descheduler-migration"
KOORDS = (KOORD, KOORD_MIGRATION)  # LowNodeLoad's pools, each read from NodeMetrics
# Ballast's scheduler places every pod of every pool: the descheduler's and Koordinator's
# replacements too (the Deployments name it; no other scheduler runs).
REPLACEMENTS_PLACED_BY = "Ballast's scheduler, in every pool"
# NodeMetrics for Koordinator's pool as koordlet's defaults write them (a report every 60 s of
# 300-second means), scaled alike: 12 s reports of 60 s means here.
NODE_METRICS = SYNTHETIC.node_metrics
T = 10.0
SCRAPE = 1.0  # s: the sandbox's Prometheus scrapes the simulator's exporter every second


def synthetic_differences() -> list[tuple[str, str, str, str]]:
    """The synthetic scenarios' settings that differ from the deployed ones: (setting,
    deployed, here, why). Every contender's look-backs and paces are compressed alike
    (timescale.SYNTHETIC_SPEED; docs/benchmarks.md has each); the trace scales them to trace
    time instead (docs/trace.md)."""
    env, speed = WATCHER_ENV, timescale.SYNTHETIC_SPEED
    window = float(env["BALLAST_WINDOW"])
    deployed_poll = float(chart.values()["watcher"]["pollInterval"])
    # When a node stepping from LOW to DRIFT_TARGET has its window's average cross HIGH.
    crossing = (HIGH - LOW) / (DRIFT_TARGET - LOW)
    scrape = timescale.setting("Prometheus", "scrape interval", timescale.SYNTHETIC_SETTINGS)
    return [
        ("every contender's look-backs and paces (docs/benchmarks.md's table): the watcher's "
         "window, poll and rate range, the rebalancers' rounds, fetches and eviction rate, "
         "koordlet's reports and means, koord-descheduler's anomaly timeout and detector cache, "
         "the scheduler's runtime settings",
         f"deployed (the chart's: poll {deployed_poll:g} s, window "
         f"{watcher_defaults.WINDOW:g} s, rounds {INTERVAL:g} s, "
         f"{DEPLOYED.evictions_per_minute:g} evictions a minute)",
         f"deployed / {speed:g} (poll {env['BALLAST_POLL_INTERVAL']} s, window {window:g} s, "
         f"rate range {env['BALLAST_RATE_RANGE']}, rounds {ROUNDS:g} s, "
         f"{SYNTHETIC.evictions_per_minute:g} evictions a wall minute)",
         f"a node stepping from {LOW:g} to {DRIFT_TARGET:g} % has its average over high "
         f"{crossing * watcher_defaults.WINDOW:g} s later with the deployed window, after the "
         f"{SCENARIOS['drift'].observe:g} s observed; {crossing * window:g} s here. One "
         "compression for every contender: none looks back further than another does deployed"),
        ("watcher poll jitter", f"{watcher_defaults.POLL_JITTER:g} s",
         f"{env['BALLAST_POLL_JITTER']} s", "polls on a fixed beat, the same in every seed"),
        ("Prometheus scrape interval", f"{timescale.SCRAPE:g} s (kube-prometheus)",
         f"{scrape.wall:g} s", f"not {timescale.SCRAPE / speed:g} s: {scrape.fixed}"),
        ("the pods' ramp to their use", "a container's start",
         f"{RAMP_SECONDS:g} s ({RAMP_SECONDS * speed:g} s deployed)",
         "the scenarios' own; their settle times are built on it"),
    ]  # fmt: skip


def synthetic_table() -> str:
    """docs/rebalancer.md's table of synthetic_differences."""
    rows = ["| setting | deployed | here | why |", "| --- | --- | --- | --- |"]
    rows += [f"| {' | '.join(row)} |" for row in synthetic_differences()]
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    observe: float = 180.0  # seconds after the change
    settle: float = SETTLE_SECONDS
    before: float = BEFORE_CHANGE


def trace_settle() -> float:
    """Seconds the trace's pools settle: the pods' ramp, then the longest look-back a rebalancer
    reads at the trace's scale (the watcher's window over its rate range; koordlet's mean; the
    descheduler's rate range), so every first round reads ramped load only."""
    ramp = timescale.setting("simulated pods", "ramp to their use after start").wall
    koordlet = timescale.setting("Koordinator (koordlet)", "aggregateDurationSeconds").wall
    rate = timescale.RATE_RANGE_WALL
    return ramp + max(rate + timescale.WINDOW_WALL, koordlet, rate)


# Stable's load is steady but for the background's wobble (SimulatorConfig.wobble_period, 60 s),
# so each rebalancer's inputs repeat once its longest look-back holds steady load (the watcher's
# 60 s window, from 70 s after the last bind); koordlet's 300 s means never pass the true peak,
# checked under high. 30 s before and 150 after the nominal change: rebalancers run 180 s a seed
# (18 rounds), 155 of them on steady inputs, over two wobble periods and a 3-round streak; issue
# 44's 150-minute budget paid for it (600 s until then).
STABLE_OBSERVE = 150.0
SCENARIOS = {
    s.name: s
    for s in (
        Scenario("drift", f"{DRIFTING} of {WORKLOADS} workloads' use triples"),
        Scenario("hot-start", f"{HOT_NODES} of {NODES} nodes' background jumps to 80-90 %"),
        Scenario(
            "stable", "nothing changes: every eviction is a false one", observe=STABLE_OBSERVE
        ),
        # Six trace hours, 72 steps of 5 minutes at 5 s each (bench.rebalance.trace, --trace);
        # the hours stay: a day's hot hours fall late in some windows (docs/rebalancer.md).
        Scenario(
            "trace",
            "6 hours of a day of the Bitbrains trace's VMs as workloads",
            observe=360.0,
            settle=trace_settle(),
        ),
    )
}
# `--quick`: every scenario once, shorter (a rebalancer acts within about a minute of a node
# going hot: its window's average rising over high, then three fresh observations or
# koord-descheduler's five 2 s rounds).
QUICK_TIMES = {"drift": 80.0, "hot-start": 80.0, "stable": 60.0, "trace": 100.0}
QUICK_SETTLE, QUICK_BEFORE = 10.0, 10.0
QUICK = {
    n: replace(s, observe=QUICK_TIMES[n], settle=QUICK_SETTLE, before=QUICK_BEFORE)
    for n, s in SCENARIOS.items()
}


# -- the plan: a pure function of scenario and seed ---------------------------------------------
@dataclass(frozen=True)
class Plan:
    background: list[float]  # per node index, % CPU
    requests_m: list[int]  # per workload
    factors: list[float]  # per workload, before the change
    drifting: list[int]  # workload indexes whose factor triples at the change
    heating: list[int]  # node indexes whose background jumps at the change
    hot_background: list[float]  # per heating node


def plan(scenario: Scenario, seed: int) -> Plan:
    rng = random.Random(f"rebalance:{scenario.name}:{seed}")
    background = [rng.uniform(*BACKGROUND) for _ in range(NODES)]
    requests_m = [REQUESTS_M[i % len(REQUESTS_M)] for i in range(WORKLOADS)]
    factors = [rng.uniform(*BASE_FACTOR) for _ in range(WORKLOADS)]
    drifting = sorted(rng.sample(range(WORKLOADS), DRIFTING)) if scenario.name == "drift" else []
    heating = sorted(rng.sample(range(NODES), HOT_NODES)) if scenario.name == "hot-start" else []
    hot = [rng.uniform(*HOT_BACKGROUND) for _ in heating]
    return Plan(background, requests_m, factors, drifting, heating, hot)


# -- scenarios that can fail (issue 44): chosen on the placement, checked on the truth -------
STABLE_TARGET = HIGH - 5.0  # stable: the hottest node peaks here, within 10 points of high
# The simulator's background wobbles by this share of itself (a sine, SimulatorConfig), so a
# node's peak is its pods' use plus its background at the top of the wobble.
WOBBLE = SimulatorConfig().wobble
DRIFT_TARGET = HIGH + 10.0  # drift: the drifting workloads are chosen to heat a node this far


class ScenarioFailed(RuntimeError):
    """A seed whose scenario did not happen (stable not near high, drift heating no node): a
    failed run, never a zero."""


def pool_cpu(
    p: Plan, placed: dict[str, int], drifting: frozenset[int] = frozenset()
) -> list[float]:
    """Each node's CPU % from its background and the pods on it (`placed`: pod name -> node
    index), the `drifting` workloads' use multiplied by DRIFT_FACTOR."""
    cpu = list(p.background)
    for pod, idx in placed.items():
        w = int(workload_of(pod)[1:])
        factor = p.factors[w] * (DRIFT_FACTOR if w in drifting else 1.0)
        cpu[idx] += 100.0 * p.requests_m[w] * factor / (NODE_CPU * 1000)
    return cpu


def stable_background(p: Plan, placed: dict[str, int]) -> tuple[int, float]:
    """(node index, background %) that puts the pool's hottest node's peak at STABLE_TARGET.
    The peak, not the mean: at 53bc346 a node with few pods was given a 53.6 % background for
    a 75 % mean, its wobble took it to 80.4 %, above high, and stable's check failed the seed."""
    cpu = pool_cpu(p, placed)
    idx = max(range(len(cpu)), key=cpu.__getitem__)
    pods = cpu[idx] - p.background[idx]
    return idx, max(0.0, (STABLE_TARGET - pods) / (1.0 + WOBBLE))


def drifting_workloads(p: Plan, placed: dict[str, int], seed: int) -> list[int]:
    """DRIFTING workloads whose use, multiplied, heats a node to DRIFT_TARGET: the first such
    set in a seeded order, else the one that heats the hottest."""
    pairs = list(itertools.combinations(range(WORKLOADS), DRIFTING))
    random.Random(f"rebalance:drift:{seed}").shuffle(pairs)
    heat = {pair: max(pool_cpu(p, placed, frozenset(pair))) for pair in pairs}
    hot_enough = [pair for pair in pairs if heat[pair] >= DRIFT_TARGET]
    return sorted(hot_enough[0] if hot_enough else max(pairs, key=heat.__getitem__))


def check_stable(samples: list[tuple[float, list[float]]], since: float) -> float:
    """The hottest node's peak from `since`: within 10 points under HIGH, or ScenarioFailed."""
    peak = max(max(cpus) for t, cpus in samples if t >= since)
    if not HIGH - 10.0 <= peak < HIGH:
        raise ScenarioFailed(f"stable: the hottest node peaked at {peak:.1f} %, not within "
                             f"10 points under high ({HIGH:g} %)")  # fmt: skip
    return peak


def check_drift(samples: list[tuple[float, list[float]]], change: float) -> float:
    """The hottest node's peak after the change: above HIGH, or ScenarioFailed."""
    peak = max((max(cpus) for t, cpus in samples if t >= change), default=0.0)
    if peak <= HIGH:
        raise ScenarioFailed(f"drift: no node rose above high ({HIGH:g} %): peak {peak:.1f} %")
    return peak


def node_name(contender: str, i: int) -> str:
    return f"{contender}-{i}"


def namespace(contender: str) -> str:
    return f"rb-{contender}"


def workload_name(w: int) -> str:
    return f"w{w}"


def node_index(node: str) -> int:
    """A pool's node (`<contender>-<i>`) by its index in the pool; -1 for none (a pod never
    bound, a decision without a target)."""
    return int(node.rsplit("-", 1)[1]) if node else -1


def workload_of(pod_name: str) -> str:
    """A Deployment's pod is <deployment>-<replicaset hash>-<suffix>."""
    return pod_name.rsplit("-", 2)[0]


# -- measures: pure functions of the samples ----------------------------------------------------
def measure(
    samples: list[tuple[float, list[float]]],
    change: float,
    evictions: list[dict[str, Any]],
    unavailable_max: dict[str, int],
    lost: int,
) -> dict[str, Any]:
    """`samples`: (time, CPU % per node of the pool), one a second; `evictions`: dicts with
    time, workload and the node the replacement was bound to (or "")."""
    after = [(t, cpus) for t, cpus in samples if t >= change]
    over_100 = sum(sum(c > 100.0 for c in cpus) for _, cpus in after)
    over_high = sum(sum(c > HIGH for c in cpus) for _, cpus in after)
    last_hot = max((t for t, cpus in after if max(cpus) > HIGH), default=None)
    last_over_100 = max((t for t, cpus in after if max(cpus) > 100.0), default=None)
    tail = [cpus for t, cpus in after if t >= after[-1][0] - 10.0] if after else []
    end = [statistics.fmean(c[i] for c in tail) for i in range(len(tail[0]))] if tail else []
    end_t = after[-1][0] if after else change

    def cooled_at(last: float | None) -> float | None:
        if last is None:
            return 0.0
        return None if last >= end_t - 10.0 else round(last - change, 1)

    bounced = 0
    for ev in evictions:
        node = ev.get("replacement_node")
        if not node:
            continue
        idx = ev["replacement_index"]
        window = [cpus[idx] for t, cpus in after if ev["bound_at"] <= t <= ev["bound_at"] + 60.0]
        if window and max(window) > HIGH:
            bounced += 1
    per_workload: dict[str, int] = {}
    for ev in evictions:
        per_workload[ev["workload"]] = per_workload.get(ev["workload"], 0) + 1
    return {
        "node_seconds_over_100": over_100,
        "node_seconds_over_high": over_high,
        "hot_nodes_at_end": sum(c > HIGH for c in end),
        "max_cpu_at_end": round(max(end), 1) if end else None,
        "seconds_until_cool": cooled_at(last_hot),
        "seconds_until_below_100": cooled_at(last_over_100),
        "evictions": len(evictions),
        "evictions_per_workload": per_workload,
        "bounced": bounced,
        "max_unavailable": max(unavailable_max.values(), default=0),
        "pdb_violations": sum(v > 1 for v in unavailable_max.values()),
        "pods_lost": lost,
    }


MEASURES = (
    "node_seconds_over_100",
    "node_seconds_over_high",
    "hot_nodes_at_end",
    "max_cpu_at_end",
    "seconds_until_cool",
    "seconds_until_below_100",
    "evictions",
    "bounced",
    "max_unavailable",
    "pdb_violations",
    "pods_lost",
)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """scenario -> contender -> measure -> median, min, max over the seeds (None: never)."""
    out: dict[str, Any] = {}
    for run in runs:
        for c, r in run["contenders"].items():
            slot = out.setdefault(run["scenario"], {}).setdefault(c, {})
            for m in MEASURES:
                slot.setdefault(m, []).append(r.get(m))
    for per_c in out.values():
        for c, values in per_c.items():
            per_c[c] = {m: _spread(v) for m, v in values.items()}
    return out


def _spread(values: list[Any]) -> dict[str, Any]:
    known = [v for v in values if v is not None]
    if not known:
        return {"median": None, "min": None, "max": None, "never": len(values)}
    # A run where it never happened is later than any where it did: it counts in the median as
    # infinity, and a median that lands on it is never (None).
    ranked = sorted(known) + [math.inf] * (len(values) - len(known))
    median = statistics.median(ranked)
    spread = {
        "median": None if math.isinf(median) else median,
        "min": min(known),
        "max": max(known),
    }
    if len(known) < len(values):
        spread["never"] = len(values) - len(known)  # runs where it never happened
    return spread


# -- one run ----------------------------------------------------------------------------------
def deployment(w: int, contender: str, cpu_m: int) -> dict[str, Any]:
    name = workload_name(w)
    container = {
        "name": "app",
        "image": "example.invalid/app:1",
        "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": "128Mi"}},
    }
    spec = {
        "schedulerName": "ballast",
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": {POOL_LABEL: contender},
        "containers": [container],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def pdb(w: int) -> dict[str, Any]:
    name = workload_name(w)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": name}}},
    }


def _start_process(plane: ControlPlane, name: str, argv: list[str], port: int) -> None:
    plane.spawn(name, argv)
    url = f"http://127.0.0.1:{port}/healthz"
    plane.wait_until(name, lambda: requests.get(url, timeout=2).status_code == 200, 60)


def _start_scheduler(
    plane: ControlPlane, watcher_url: str, work: Path, flags: tuple[str, ...] = ()
) -> None:
    doc = scheduler_config(watcher_url)
    argv, port = ballast_argv(plane, work, "scheduler", "scheduler", doc, "--metrics-listen")
    _start_process(plane, "scheduler", argv + ["--log-level", "WARNING", *flags], port)


def scheduler_config(watcher_url: str) -> dict[str, Any]:
    """The config file of the scheduler that places every pool's pods: the chart's, with the
    benchmarks' overlays (bench.harness.chart.OVERLAYS)."""
    return chart.scheduler_config(watcher_url)


def rebalancer_config(
    watcher_url: str, contender: str = "ballast", timing: Timing = SYNTHETIC
) -> dict[str, Any]:
    """A Ballast contender's config file: the chart's, with the benchmarks' overlays
    (bench.harness.chart.OVERLAYS: its pool's nodeSelector, `timing`'s rounds and eviction rate)
    and the contender's own keys (REBALANCERS)."""
    return chart.rebalancer_config(
        watcher_url,
        {POOL_LABEL: contender},
        timing.rounds or INTERVAL,
        REBALANCERS[contender],
        timing.evictions_per_minute,
    )


def ballast_setup(timing: Timing = SYNTHETIC) -> dict[str, Any]:
    """For a result's setup: Ballast's scheduler and rebalancer files as they ran (the chart's
    with the overlays, bench.harness.chart; the variants' keys are `rebalancer_variants`)."""
    return {
        "scheduler_config": scheduler_config("http://watcher"),
        "rebalancer_config": rebalancer_config("http://watcher", timing=timing),
        "overlays": chart.OVERLAYS,
    }


def _start_rebalancer(
    plane: ControlPlane, watcher_url: str, work: Path, contender: str, timing: Timing
) -> int:
    doc = rebalancer_config(watcher_url, contender, timing)
    argv, port = ballast_argv(plane, work, contender, "rebalancer", doc, "--listen")
    _start_process(plane, _process(contender), [*argv, *timing.rebalancer_flags], port)
    return port


class Recorder:
    """Every second: each node's true CPU (the simulator's state, unclamped) and each pool's
    pods; evictions are pods of a pool that disappear."""

    def __init__(
        self, sim: Simulator, api: client.ApiClient, contenders: list[str], p: Plan
    ) -> None:
        self.sim, self.core, self.contenders, self.plan = (
            sim,
            client.CoreV1Api(api),
            contenders,
            p,
        )
        self.samples: dict[str, list[tuple[float, list[float]]]] = {c: [] for c in contenders}
        self.evictions: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
        self.unavailable: dict[str, dict[str, int]] = {c: {} for c in contenders}
        self.pods: dict[str, dict[str, tuple[str, str]]] = {c: {} for c in contenders}
        # workload -> replicas it should have (the trace scenario has its own workloads)
        self.replicas = {workload_name(w): REPLICAS for w in range(WORKLOADS)}
        self.drift_on = False
        self.measuring = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recorder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._tick()
            except Exception as exc:  # noqa: BLE001 - a missed second must not end the run
                print(f"  recorder: {type(exc).__name__}: {exc}", flush=True)

    def _factor(self, workload: str) -> float:
        w = int(workload[1:])
        base = self.plan.factors[w]
        return base * DRIFT_FACTOR if self.drift_on and w in self.plan.drifting else base

    def _set_factors(self, uses: list) -> None:
        factors = self.sim.config.pod_factors
        for use in uses:
            factors[use.key] = self._factor(workload_of(use.key.split("/", 1)[1]))

    def _tick(self) -> None:
        now = time.time()
        with self.sim._lock:  # the simulator's own state: the loads it is serving now
            nodes = dict(self.sim._nodes)
            uses = list(self.sim._pods.values())
        self._set_factors(uses)
        loads = node_loads(nodes, uses, now, self.sim.config, clamp=False)
        for c in self.contenders:
            cpus = [loads.get(node_name(c, i), (0.0, 0.0))[0] for i in range(NODES)]
            self.samples[c].append((now, cpus))
            self._pods(c, now)

    def _pods(self, c: str, now: float) -> None:
        items = self.core.list_namespaced_pod(namespace(c), _request_timeout=T).items
        seen: dict[str, tuple[str, str]] = {}
        ready: dict[str, int] = {}
        for p in items:
            name, node = p.metadata.name, p.spec.node_name or ""
            seen[p.metadata.uid] = (name, node)
            if node and not p.metadata.deletion_timestamp:
                w = workload_of(name)
                ready[w] = ready.get(w, 0) + 1
        known = self.pods[c]
        if self.measuring:
            for uid, (name, node) in known.items():
                if uid not in seen:
                    ev = {"time": now, "workload": workload_of(name), "from": node, "uid": uid}
                    ev["pod"] = name
                    ev.update(replacement_node="", replacement_index=-1, bound_at=0.0)
                    self.evictions[c].append(ev)
            for uid, (name, node) in seen.items():
                if node and known.get(uid, ("", ""))[1] != node:
                    self._replacement(c, workload_of(name), node, now)
            slot = self.unavailable[c]
            for w, want in self.replicas.items():
                slot[w] = max(slot.get(w, 0), want - ready.get(w, 0))
        self.pods[c] = seen

    def _replacement(self, c: str, workload: str, node: str, now: float) -> None:
        for ev in self.evictions[c]:
            if ev["workload"] == workload and not ev["replacement_node"]:
                ev["replacement_node"] = node
                ev["replacement_index"] = int(node.rsplit("-", 1)[1])
                ev["bound_at"] = now
                return

    def lost(self, c: str) -> int:
        per: dict[str, int] = {}
        for name, node in self.pods[c].values():
            if node:
                per[workload_of(name)] = per.get(workload_of(name), 0) + 1
        return sum(max(0, want - per.get(w, 0)) for w, want in self.replicas.items())


class Services(SimulatedCluster):
    """One run's simulated cluster (the sandbox with its controllers) and Ballast's scheduler;
    `stop` also ends the rebalancers, whatever of it started."""

    def __init__(
        self,
        prefix: str,
        specs: list[NodeSpec],
        config: SimulatorConfig,
        timing: Timing | None = None,
    ) -> None:
        """`timing`: the replayed trace's (bench.timescale), else the synthetic scenarios'."""
        koord = {s.name for s in specs if s.labels.get(POOL_LABEL) in KOORDS}
        self.timing = timing or SYNTHETIC
        super().__init__(
            prefix,
            specs,
            config,
            self.timing.watcher_env,
            controllers=True,
            node_metrics=self.timing.node_metrics,
            node_metrics_for=koord,
        )

    def start(self) -> tuple[client.ApiClient, Simulator, str, str]:
        """(API client, simulator, Prometheus URL, watcher URL), the scheduler running."""
        api = self.start_cluster()
        self.start_scheduler()
        return api, self.simulator, self.prom_url, self.watcher_url

    def start_scheduler(self) -> None:
        """Ballast's scheduler, which places every pool's pods and replacements."""
        _start_scheduler(self.plane, self.watcher_url, self.work, self.timing.scheduler_flags)

    def start_rebalancers(self, contenders: list[str]) -> dict[str, int]:
        """Each pool's rebalancer; Ballast's pools' status ports (bench.rebalance.decisions)."""
        return start_rebalancers(
            self.plane, self.prom_url, self.watcher_url, self.work, contenders, self.timing
        )

    def stop(self) -> None:
        for name in [*map(_process, REBALANCERS), "descheduler", *KOORDS, "scheduler"]:
            stop_scheduler(self.plane, name)
        super().stop()


def run_one(scenario: Scenario, seed: int, contenders: list[str], say=print) -> dict[str, Any]:
    p = plan(scenario, seed)
    background = {
        node_name(c, i): (p.background[i], 20.0) for c in contenders for i in range(NODES)
    }
    config = SimulatorConfig(
        seed=seed,
        factor_min=1.0,
        factor_max=1.0,
        ramp_seconds=RAMP_SECONDS,
        background=background,
        pod_factors={},
    )
    specs = [
        NodeSpec(node_name(c, i), cpu=str(NODE_CPU), memory="16Gi", labels={POOL_LABEL: c})
        for c in contenders
        for i in range(NODES)
    ]
    services = Services(f"ballast-rebalance-{scenario.name}-{seed}-", specs, config)
    plane = services.plane
    recorder = None
    reader = decisions.Reader({})
    ok = False
    try:
        started = time.monotonic()
        api, sim, prom, watcher_url = services.start()
        recorder = Recorder(sim, api, contenders, p)
        recorder.start()
        apps, policy = client.AppsV1Api(api), client.PolicyV1Api(api)

        def create_pool(c: str) -> None:
            ensure_namespace(api, namespace(c))
            for w in range(WORKLOADS):
                body = deployment(w, c, p.requests_m[w])
                apps.create_namespaced_deployment(namespace(c), body, _request_timeout=T)
                policy.create_namespaced_pod_disruption_budget(
                    namespace(c), pdb(w), _request_timeout=T
                )

        place_paired(services, watcher_url, contenders, create_pool, recorder.replicas)
        total = WORKLOADS * REPLICAS * len(contenders)
        _wait(lambda: sum(recorder.lost(c) == 0 for c in contenders) == len(contenders), 120,
              f"{total} pods bound")  # fmt: skip
        placed = {name: int(node.rsplit("-", 1)[1])
                  for name, node in recorder.pods[contenders[0]].values() if node}  # fmt: skip
        if scenario.name == "stable":
            idx, warm = stable_background(p, placed)
            for c in contenders:
                background[node_name(c, idx)] = (warm, 20.0)
            say(f"  stable: node {idx}'s background to {warm:.1f} %, its peak to "
                f"{STABLE_TARGET:g} % (high {HIGH:g} %)")  # fmt: skip
        if scenario.name == "drift":
            p = replace(p, drifting=drifting_workloads(p, placed, seed))
            recorder.plan = p
            heat = max(pool_cpu(p, placed, frozenset(p.drifting)))
            say(f"  drift: workloads {p.drifting} triple, the hottest node to {heat:.0f} %")
        time.sleep(scenario.settle)
        settled_at = time.time()
        say(f"  stack up, {total} pods placed and settled in {time.monotonic() - started:.0f} s")
        reader = decisions.Reader(services.start_rebalancers(contenders))
        reader.start()
        recorder.measuring = True
        time.sleep(scenario.before)
        change = time.time()
        recorder.drift_on = True
        for idx, hot in zip(p.heating, p.hot_background, strict=True):
            for c in contenders:
                background[node_name(c, idx)] = (hot, 20.0)
        say(f"  change at +{time.monotonic() - started:.0f} s; observing {scenario.observe:.0f} s")
        time.sleep(scenario.observe)
        recorder.stop()
        reader.stop()
        # The scenario happened, or the seed is a failed run: in the pool nothing moves pods
        # in ("none"), else in the reference pool up to its first eviction.
        judged = "none" if "none" in contenders else contenders[0]
        first_eviction = min((e["time"] for e in recorder.evictions[judged]), default=math.inf)
        truth = [(t, cpus) for t, cpus in recorder.samples[judged] if t < first_eviction]
        scenario_check: dict[str, Any] = {"pool": judged}
        if scenario.name == "stable":
            scenario_check["hottest_peak"] = round(check_stable(truth, settled_at), 1)
        if scenario.name == "drift":
            scenario_check["hottest_peak"] = round(check_drift(truth, change), 1)
            scenario_check["drifting"] = p.drifting
        if len(scenario_check) > 1:
            say(f"  {scenario.name} checked in pool {judged}: hottest node peaked at "
                f"{scenario_check['hottest_peak']} % (high {HIGH:g} %)")  # fmt: skip
        results = {}
        for c in contenders:
            samples = recorder.samples[c]
            r = measure(
                samples,
                change,
                recorder.evictions[c],
                recorder.unavailable[c],
                recorder.lost(c),
            )
            r["hottest_over_time"] = [
                [round(t - change, 1), round(max(cpus), 1)] for t, cpus in samples
            ]
            r["eviction_times"] = [round(e["time"] - change, 1) for e in recorder.evictions[c]]
            r["eviction_nodes"] = [node_index(e["from"]) for e in recorder.evictions[c]]
            if c in reader.logs:
                r["decisions"] = decisions.summarise(reader.logs[c], change, node_index)
            r["false_evictions_before_change"] = sum(
                1 for e in recorder.evictions[c] if e["time"] < change
            )
            results[c] = r
        peer_records(plane, api, results)
        ok = True
        return {
            "scenario": scenario.name,
            "seed": seed,
            "check": scenario_check,
            "contenders": results,
        }
    finally:
        if recorder is not None:
            recorder.stop()
        reader.stop()
        services.close(ok, say)


# -- the paired start: one placement, copied into every pool -----------------------------------
def paired_bindings(
    reference: dict[str, list[int]], pending: dict[str, list[str]]
) -> dict[str, int]:
    """Pod name -> node index: each workload's pods (by name) on the node indexes of that
    workload's replicas in the reference pool. A workload with more pods than placed replicas
    in the reference keeps the rest pending, for the scheduler."""
    out: dict[str, int] = {}
    for w, pods in pending.items():
        out.update(zip(sorted(pods), sorted(reference.get(w, [])), strict=False))
    return out


def _pool_pods(core: client.CoreV1Api, c: str) -> tuple[dict[str, list[int]], dict[str, list[str]]]:
    """(workload -> node indexes of its bound pods, workload -> names of its pending pods)."""
    placed: dict[str, list[int]] = {}
    pending: dict[str, list[str]] = {}
    for pod in core.list_namespaced_pod(namespace(c), _request_timeout=T).items:
        if pod.metadata.deletion_timestamp:
            continue
        w, node = workload_of(pod.metadata.name), pod.spec.node_name
        if node:
            placed.setdefault(w, []).append(int(node.rsplit("-", 1)[1]))
        else:
            pending.setdefault(w, []).append(pod.metadata.name)
    return placed, pending


def _bind(core: client.CoreV1Api, ns: str, pod: str, node: str) -> None:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    # Not preloaded: the client cannot parse the Status a Binding answers with.
    core.create_namespaced_binding(ns, body, _request_timeout=T, _preload_content=False)


def place_paired(
    services: Services,
    watcher_url: str,
    contenders: list[str],
    create_pool: Callable[[str], None],
    replicas: dict[str, int],
) -> None:
    """Every pool starts from one placement (a paired design), so what differs between
    pools afterwards is their rebalancer's doing: the first pool is placed by Ballast's scheduler;
    then, the scheduler stopped, every other pool's pods are bound to the nodes of the same
    indexes, and the scheduler starts again to place the replacements."""
    core = client.CoreV1Api(services.api)
    reference, *others = contenders
    create_pool(reference)
    want = sum(replicas.values())

    def reference_placed() -> bool:
        placed, _ = _pool_pods(core, reference)
        return sum(min(len(placed.get(w, [])), n) for w, n in replicas.items()) == want

    # Not fatal: a pod the scheduler cannot place stays pending in every pool, as it would.
    deadline = time.monotonic() + PLACE_TIMEOUT
    while not reference_placed() and time.monotonic() < deadline:
        time.sleep(0.5)
    if not others:
        return
    stop_scheduler(services.plane, "scheduler")
    placed, _ = _pool_pods(core, reference)
    for c in others:
        create_pool(c)

        def created(c: str = c) -> bool:
            bound, pending = _pool_pods(core, c)
            return all(len(pending.get(w, [])) == n for w, n in replicas.items()) and not bound

        _wait(created, PLACE_TIMEOUT, f"pool {c}'s pods created")
        for pod, idx in paired_bindings(placed, _pool_pods(core, c)[1]).items():
            _bind(core, namespace(c), pod, node_name(c, idx))
    services.start_scheduler()


def start_rebalancers(
    plane: ControlPlane,
    prom: str,
    watcher_url: str,
    work: Path,
    contenders: list[str],
    timing: Timing | None = None,
) -> dict[str, int]:
    """Each pool's rebalancer: Ballast's variants, the descheduler and koord-descheduler's, on
    their own pools. Returns each Ballast pool's status port (/decisions)."""
    timing = timing or SYNTHETIC
    interval = timing.rounds or INTERVAL
    ports = {
        c: _start_rebalancer(plane, watcher_url, work, c, timing)
        for c in contenders
        if c in REBALANCERS
    }
    if "descheduler" in contenders:
        doc = descheduler.policy(
            descheduler_query(timing),
            LOW,
            HIGH,
            prom,
            exclude_namespaces=[namespace(c) for c in contenders if c != "descheduler"],
            node_selector=f"{POOL_LABEL}=descheduler",
        )
        descheduler.start_descheduler(plane, prom, doc, interval)
    for c in KOORDS:
        if c in contenders:
            doc = koord_config(plane.kubeconfig, c, timing)
            koord_descheduler.start_koord_descheduler(plane, doc, name=c)
    return ports


def koord_config(kubeconfig: Path | str, contender: str, timing: Timing) -> dict[str, Any]:
    """koord-descheduler's configuration for a Koordinator pool: LowNodeLoad on the pool, CPU as
    Ballast's thresholds (memory never hot and never in the way of a target), evicting through
    DefaultEvictor or (koord-descheduler-migration) the MigrationController in EvictDirectly."""
    anomaly = {} if timing.anomaly_timeout is None else {"anomaly_timeout": timing.anomaly_timeout}
    migration = None
    if contender == KOORD_MIGRATION:
        migration = koord_descheduler.migration_args(
            koord_descheduler.EVICT_DIRECTLY,
            [namespace(contender)],
            job_ttl=timing.migration_ttl,
            workload_limiter=timing.migration_limiter,
        )
    return koord_descheduler.config(
        kubeconfig,
        low={"cpu": LOW, "memory": 100},
        high={"cpu": HIGH, "memory": 100},
        interval=timing.rounds or INTERVAL,
        namespaces=[namespace(contender)],
        node_selector={POOL_LABEL: contender},
        metric_expiration=timing.load_aware_args.get("nodeMetricExpirationSeconds"),
        migration=migration,
        detector_cache=timing.detector_cache,
        **anomaly,
    )


def descheduler_query(timing: Timing) -> str:
    """The descheduler's CPU query at the run's rate range (the watcher's)."""
    return CPU_QUERY.replace("$range", timing.watcher_env["BALLAST_RATE_RANGE"])


def _process(contender: str) -> str:
    return "rebalancer" if contender == "ballast" else f"rebalancer-{contender}"


def peer_records(
    plane: ControlPlane, api: client.ApiClient, results: dict[str, dict[str, Any]]
) -> None:
    """Into the peers' results: their logs' errors, and the MigrationController's jobs by phase
    and reason (a PDB's refusals keep a job Running until its TTL fails it). A failed listing
    is recorded as such: the run's measures stand without it."""
    for name in ("descheduler", *KOORDS):
        if name in results:
            results[name]["log_errors"] = _errors(plane, name)
    if KOORD_MIGRATION in results:
        try:
            jobs = koord_descheduler.migration_jobs(api, namespace(KOORD_MIGRATION))
        except (ApiException, OSError, urllib3.exceptions.HTTPError) as exc:
            results[KOORD_MIGRATION]["migration_jobs"] = {"not listed": str(exc)[:200]}
        else:
            results[KOORD_MIGRATION]["migration_jobs"] = koord_descheduler.job_phases(jobs)


def _errors(plane: ControlPlane, name: str) -> list[str]:
    log = plane.log_dir / f"{name}.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    return [line[:300] for line in text.splitlines() if line.startswith("E")][:20]


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not within {timeout:.0f} s")


def document(
    runs: list[dict[str, Any]],
    seeds: list[int],
    names: list[str],
    contenders: list[str],
    seconds: int,
) -> dict[str, Any]:
    return {
        "about": __doc__.split("\n\n")[0],
        "seconds": seconds,
        "cpus": os.cpu_count(),
        "setup": {
            "nodes_per_pool": NODES,
            "node_cpu": NODE_CPU,
            "workloads": WORKLOADS,
            "replicas": REPLICAS,
            "requests_m": REQUESTS_M,
            "base_factor": BASE_FACTOR,
            "background_cpu": BACKGROUND,
            "hot_background_cpu": HOT_BACKGROUND,
            "drift_factor": DRIFT_FACTOR,
            "high": HIGH,
            "low": LOW,
            "interval": ROUNDS,
            "watcher": WATCHER_ENV,
            "descheduler_query": descheduler_query(SYNTHETIC),
            "timing": SYNTHETIC.record(),
            "compression": timescale.synthetic_record(),
            **ballast_setup(SYNTHETIC),
            "rebalancer_variants": {c: REBALANCERS[c] for c in contenders if c in REBALANCERS},
            "seeds": seeds,
            "scenarios": {n: SCENARIOS[n].about for n in names},
            "observe_seconds": {n: SCENARIOS[n].observe for n in names},
            "settle_seconds": {n: SCENARIOS[n].settle for n in names},
            "before_seconds": {n: SCENARIOS[n].before for n in names if n != "trace"},
            "contenders": {c: CONTENDERS[c] for c in contenders},
            "replacements_placed_by": REPLACEMENTS_PLACED_BY,
            "decisions": decisions.setup(),
            "koord_descheduler": {
                c: koord_config("<the sandbox's>", c, SYNTHETIC) for c in KOORDS if c in contenders
            },
        },
        "summary": summarize(runs),
        "runs": runs,
    }


COLUMNS = (
    ("node_seconds_over_100", "node-s > 100 %"),
    ("node_seconds_over_high", f"node-s > {HIGH:.0f} %"),
    ("hot_nodes_at_end", "hot at end"),
    ("seconds_until_below_100", "s until < 100 %"),
    ("seconds_until_cool", f"s until < {HIGH:.0f} %"),
    ("evictions", "evictions"),
    ("bounced", "bounced"),
    ("max_unavailable", "max unavailable"),
    ("pods_lost", "lost"),
)


def merge(paths: list[Path], out: Path, plot: bool = True) -> int:
    """Several runs' JSONs (one scenario each, run as separate jobs) as one, with the plots
    unless `plot` is false (matplotlib comes with the `bench` extra, which tests go without)."""
    parts = [json.loads(p.read_text()) for p in paths]
    runs = [run for part in parts for run in part["runs"]]
    doc = parts[0]
    doc["runs"] = runs
    doc["summary"] = summarize(runs)
    doc["seconds"] = sum(part["seconds"] for part in parts)
    for part in parts[1:]:
        doc["setup"]["scenarios"].update(part["setup"]["scenarios"])
        for key in ("observe_seconds", "settle_seconds", "before_seconds"):
            doc["setup"].setdefault(key, {}).update(part["setup"].get(key, {}))
    doc["parts_provenance"] = [part.get("provenance") for part in parts]  # each run's own
    doc["failed_runs"] = [f for part in parts for f in part.get("failed_runs", [])]
    # A part cut short (a run that stopped) carries no trace setup nor verdicts: the whole has
    # them from the parts that do, and verdicts over every run once the A/A pair ran.
    for part in parts[1:]:
        if "trace" in part["setup"]:
            doc["setup"]["trace"] = part["setup"]["trace"]
    windows = {w for part in parts for w in part["setup"].get("trace_windows", [])}
    windows |= {run["seed"] for run in runs if run["scenario"] == "trace"}
    if windows:
        doc["setup"]["trace_windows"] = sorted(windows)
    doc.pop("verdicts", None)
    if any({"ballast", AA} <= set(run["contenders"]) for run in runs):
        doc["verdicts"] = all_verdicts(runs, VERDICT_MEASURES, "ballast", AA)
    write_result(out, doc)
    if not plot:
        return 0
    from bench.rebalance.plots import plot_all

    for path in plot_all(doc, out.parent, prefix=out.stem):
        print(f"plot: {path}")
    return 0


def markdown(doc: dict[str, Any]) -> str:
    """One table per scenario: medians over seeds (min..max; "never": still hot at the end)."""
    out = []
    for scenario, per_c in doc["summary"].items():
        head = f"| {scenario} | " + " | ".join(label for _, label in COLUMNS) + " |"
        out += [head, "| --- " * (len(COLUMNS) + 1) + "|"]
        for c, measures in per_c.items():
            cells = [_cell(measures.get(m) or {}) for m, _ in COLUMNS]
            out.append(f"| {c} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _cell(spread: dict[str, Any]) -> str:
    if spread.get("median") is None:
        if not spread.get("never"):
            return "-"
        if spread.get("min") is None:
            return "never"
        low, high = spread["min"], spread["max"]
        done = f"{low:g}" if low == high else f"{low:g}..{high:g}"
        return f"never in {spread['never']}, else {done}"
    text = f"{spread['median']:g}"
    if spread["min"] != spread["max"]:
        text += f" ({spread['min']:g}..{spread['max']:g})"
    if spread.get("never"):
        text += f", never in {spread['never']}"
    return text
