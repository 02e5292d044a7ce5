"""`make bench-scheduler`: scheduling throughput on a 1,000-node sandbox, side by side.

One sandbox (etcd, kube-apiserver, kwok), 1,000 kwok nodes, then `--rounds` rounds (default 3)
in which each contender in turn gets a fresh namespace, a watch noting when each pod gets its
node, and two phases of 2,000 pods. The order rotates every round (raw-bind, ballast,
kube-scheduler; then ballast, kube-scheduler, raw-bind; ...) so that drift on a shared machine
hits every contender alike; after each contender its namespace is deleted and the next starts
only once no bench pod is left, on the same 1,000 empty nodes. Phases:
- backlog: the pods are created while the contender is stopped, then it starts; throughput and
  latency are counted from the moment it is ready (healthz answers), so this phase measures
  scheduling itself, not how fast this Python client creates pods;
- burst: with the contender running, the pods are created at once by 16 threads; latency is
  creation to binding, and throughput is bounded by the creation rate.
Contenders:
- raw-bind: a loop that only binds (round robin, same thread count as Ballast's binder; each
  pod bound once, bench.harness.common.RawBinder), the ceiling of this apiserver on this machine;
- ballast: `ballast scheduler` as a subprocess, default profile, no watcher (every node on the
  allocation fallback), leader election off;
- kube-scheduler: the pinned upstream release, default profile, leader election off, client
  QPS raised to 5000 as kube-scheduler's own scheduler_perf does (its default of 50 would
  measure the rate limiter, not the scheduler);
- ballast-no-record (only when named in --only): Ballast with decision recording off
  (`--decisions 0`), for the cost of `ballast explain`'s records (its goal:
  `ballast` over it, CPU per pod, at most 1.05x);
- ballast-peak (only when named in --only): Ballast with PeakFit in place of TargetLoadPacking
  (the placement benchmark's ballast-peak profile), reading a watcher that serves every node's
  window and every pod's statistics (bench/scheduler/feed.py: 2 pods per node created bound
  before the first round, for every contender, with bursty usage), so the peak model runs as it
  does deployed: issue 45's CPU per pod at 5,000 nodes. Its result says how many of the
  sampled pods' top nodes PeakFit predicted from measured pods (`peak_fit`).
Reported per contender and phase: pods/s, p50/p99 latency, the time to the first binding, how
long creating the pods took, and the phase's `Scheduled` events: how many were written and when
the last one was (the next phase starts only after them, so one contender's late events never
load the API server during another's measurement). JSON in bench/results/scheduler.json: every
round, then per contender and phase the median, min and max, the ratios of Ballast's median
pods/s to the others' and, per goal (docs/scheduler.md), whether it is met.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client

from bench.harness import runguard
from bench.harness.common import (
    RAW_BIND,
    RESULTS_DIR,
    THREADS,
    WORKLOADS,
    ZONES,
    BindTracker,
    Contender,
    PodMaker,
    RawBinder,
    T,
    machine_cpu_seconds,
    make_nodes,
    ms_per_pod_by_thread,
    new_figure,
    pod_body,
    redraw_option,
    sandbox_cpu_seconds,
    save,
    sized,
    spread,
    start_ballast,
    start_kube_scheduler,
    start_sandbox,
    thread_cpu_seconds,
)
from bench.harness.provenance import write_result
from bench.scheduler import feed
from bench.scheduler.cache import place_pods
from sandbox.cluster.namespaces import delete_namespace, ensure_namespace
from scheduler.kube import kubeapi
from scheduler.plugins.peak_fit import NAME as PEAK_FIT
from scheduler.plugins.target_load_packing import NAME as TARGET_LOAD_PACKING

TIMEOUT = 600.0
PEAK = "ballast-peak"


def peak_settings(watcher: str) -> dict[str, Any]:
    """The ballast-peak contender's config: the default profile with PeakFit scoring in place
    of TargetLoadPacking (as bench.placement's ballast-peak), reading `watcher`."""
    plugins = {
        "score": {"enabled": [{"name": PEAK_FIT}], "disabled": [{"name": TARGET_LOAD_PACKING}]}
    }
    return {"watcherAddress": watcher, "profiles": [{"plugins": plugins}]}


def _body(scheduler: str, workload: str) -> Callable[[str, int], dict[str, Any]]:
    return lambda name, index: pod_body(name, scheduler, workload, index)


def _summary(bound: dict[str, float], since: dict[str, float], pods: int) -> dict[str, Any]:
    latencies = sorted(bound[p] - since[p] for p in bound if p in since)
    first = min(since.values())
    last = max(bound.values()) if bound else first
    return {
        "bound": len(bound),
        "of": pods,
        "seconds": round(last - first, 3),
        # from the phase's start to the first binding: startup and cache sync
        "first_bind_s": round(min(bound.values()) - first, 3) if bound else None,
        "pods_per_second": round(len(bound) / (last - first), 1) if bound else 0.0,
        "latency_p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "latency_p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 3)
        if latencies
        else None,
    }


def _wait_all(tracker: BindTracker, names: list[str]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and any(n not in tracker.bound for n in names):
        time.sleep(0.05)


def _scheduled_events(api: client.ApiClient, namespace: str, prefix: str) -> int:
    """Scheduled events about the pods whose names start with `prefix`."""
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    answer = kubeapi.request(api, "GET", path, None, T)
    if not answer.ok:
        return 0
    items = json.loads(answer.body).get("items") or []
    return sum(
        1
        for e in items
        if e.get("reason") == "Scheduled"
        and (e.get("regarding") or {}).get("name", "").startswith(prefix)
    )


def _settle_events(
    api: client.ApiClient, namespace: str, prefix: str, pods: int, since: float
) -> dict[str, Any]:
    """Wait until every pod of the phase has its Scheduled event, or the count has not moved
    for 3 s (a scheduler may drop events): the next phase then starts on a quiet API server,
    and the cost of events shows as `events_done_s` whoever writes them late."""
    deadline = time.monotonic() + 120
    count, moved = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = _scheduled_events(api, namespace, prefix)
        if now != count:
            count, moved = now, time.monotonic()
        if count >= pods or time.monotonic() - moved > 3:
            break
        time.sleep(0.5)
    return {"events": count, "events_done_s": round(moved - since, 3) if count > 0 else None}


IDLE_SECONDS = 5.0  # how long the contender's idle CPU is sampled, between the phases


def _cpu_ms_per_pod(before: float | None, after: float | None, pods: int) -> float | None:
    if before is None or after is None or not pods:
        return None
    return round(1000 * (after - before) / pods, 3)


def run_one(
    name: str,
    namespace: str,
    scheduler: str,
    starter: Callable[[str], Contender],
    api: client.ApiClient,
    maker: PodMaker,
    pods: int,
    workload: str = "plain",
    check: Callable[[Contender, str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Two phases: `backlog` (pods created first, then the scheduler started: throughput and
    ready-to-bound latency) and `burst` (scheduler running, pods created at once: throughput and
    creation-to-bound latency, bounded by how fast the client creates pods). `check`, given the
    contender and the namespace before it stops, adds what it returns to the result."""
    ensure_namespace(api, namespace)
    tracker = BindTracker(api, namespace)
    tracker.start()
    backlog = [f"a{i:05d}" for i in range(pods)]
    print(f"[{name}] creating {pods} pods, scheduler stopped", flush=True)
    t0 = time.monotonic()
    maker.burst(namespace, backlog, _body(scheduler, workload))
    creation = time.monotonic() - t0
    started = time.monotonic()
    contender = starter(namespace)
    ready = time.monotonic()
    cpu_ready = contender.cpu()  # start-up and the initial lists, before any pod is bound
    threads_ready = thread_cpu_seconds(contender.pid) if contender.pid else {}
    machine_ready, others_ready = (
        machine_cpu_seconds(),
        sandbox_cpu_seconds(maker.plane, contender.pid),
    )
    _wait_all(tracker, backlog)
    machine_bound, others_bound = (
        machine_cpu_seconds(),
        sandbox_cpu_seconds(maker.plane, contender.pid),
    )
    cpu_bound = contender.cpu()
    threads_bound = thread_cpu_seconds(contender.pid) if contender.pid else {}
    phase1 = _summary(
        {n: tracker.bound[n] for n in backlog if n in tracker.bound},
        dict.fromkeys(backlog, ready),
        pods,
    )
    phase1["startup_s"] = round(ready - started, 3)
    # how many of the machine's cores were busy until the last binding (all processes): under
    # os.cpu_count(), the phase was not bound by CPU but by a serial step
    wall = machine_bound[1] - machine_ready[1]
    phase1["machine_busy_cores"] = (
        round((os.cpu_count() or 1) * (machine_bound[0] - machine_ready[0]) / wall, 2)
        if wall > 0
        else None
    )
    if phase1["bound"]:
        # every process's CPU until the last binding, per pod bound: on a machine whose cores
        # are all busy, what the contender spends is taken from the API server beside it
        spent = {k: v - others_ready.get(k, 0.0) for k, v in others_bound.items()}
        if cpu_bound is not None and cpu_ready is not None:
            spent["contender"] = cpu_bound - cpu_ready
        phase1["cpu_ms_per_pod_by_process"] = {
            k: round(1000 * v / phase1["bound"], 3)
            for k, v in sorted(spent.items(), key=lambda kv: -kv[1])
        }
    if contender.pid and phase1["bound"]:
        # the contender's CPU until the last binding, per thread: which of them the phase waits on
        phase1["cpu_ms_per_pod_by_thread"] = ms_per_pod_by_thread(
            contender.pid, threads_ready, threads_bound, phase1["bound"]
        )
    phase1 |= _settle_events(api, namespace, "a", pods, ready)
    cpu_backlog = contender.cpu()
    phase1["cpu_startup_s"] = _round(cpu_ready)
    phase1["cpu_ms_per_pod"] = _cpu_ms_per_pod(cpu_ready, cpu_backlog, phase1["bound"])
    print(f"[{name}] backlog {json.dumps(phase1)}", flush=True)
    time.sleep(IDLE_SECONDS)  # measuring idle CPU: nothing to wait for but the clock
    cpu_idle = contender.cpu()
    burst = [f"b{i:05d}" for i in range(pods)]
    print(f"[{name}] creating {pods} pods at once, scheduler running", flush=True)
    t0 = time.monotonic()
    created = maker.burst(namespace, burst, _body(scheduler, workload))
    creation_burst = time.monotonic() - t0
    _wait_all(tracker, burst)
    phase2 = _summary({n: tracker.bound[n] for n in burst if n in tracker.bound}, created, pods)
    phase2["creation_seconds"] = round(creation_burst, 3)
    phase2 |= _settle_events(api, namespace, "b", pods, t0)
    cpu_end = contender.cpu()
    phase2["cpu_ms_per_pod"] = _cpu_ms_per_pod(cpu_idle, cpu_end, phase2["bound"])
    print(f"[{name}] burst {json.dumps(phase2)}", flush=True)
    whole = {
        # startup, both phases and the idle wait, over every pod bound: the figure
        "cpu_ms_per_pod": _cpu_ms_per_pod(
            0.0 if cpu_end is not None else None, cpu_end, phase1["bound"] + phase2["bound"]
        ),
        "cpu_idle_ms_per_s": None
        if cpu_idle is None or cpu_backlog is None
        else round(1000 * (cpu_idle - cpu_backlog) / IDLE_SECONDS, 2),
        "rss_peak_mb": contender.rss_peak_mb(),
    }
    checked = check(contender, namespace) if check is not None else None
    contender.stop()
    tracker.stop()
    _reset(api, namespace)
    return {
        "scheduler": scheduler,
        "backlog": phase1 | {"creation_seconds": round(creation, 3)},
        "burst": phase2,
        "whole_run": whole,
        **({"peak_fit": checked} if checked is not None else {}),
    }


def _peak_check(contender: Contender, namespace: str) -> dict[str, Any]:
    found = feed.peak_check(contender.metrics_url, namespace)
    print(f"[{PEAK}] PeakFit from measured pods: {json.dumps(found)}", flush=True)
    return found


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _reset(api: client.ApiClient, namespace: str, timeout: float = 120.0) -> None:
    """Delete the round's namespace and wait until none of its pods and no pod of any bench
    namespace is left: the next round starts on the same cluster, 1,000 empty nodes."""
    core = client.CoreV1Api(api)
    _delete_patiently(api, namespace)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = core.list_pod_for_all_namespaces(_request_timeout=T).items
        left = [p for p in pods if p.metadata.namespace.startswith("bench-")]
        spaces = core.list_namespace(_request_timeout=T).items
        gone = namespace not in {n.metadata.name for n in spaces}
        if not left and gone:
            return
        if left:  # a pod created late by a straggler, or a delete that timed out: again
            _delete_patiently(api, namespace)
        time.sleep(0.5)
    raise TimeoutError(f"namespace {namespace} still has pods after {timeout:.0f}s")


def _delete_patiently(api: client.ApiClient, namespace: str) -> None:
    """delete_namespace, where a timeout is no failure: deleting 4,000 pods in one request can
    outlast the client's read timeout on a busy machine (it did, and ended a whole run); the
    caller's loop asks again while pods are left."""
    try:
        delete_namespace(api, namespace)
    except urllib3.exceptions.HTTPError as exc:
        print(f"deleting {namespace}: {exc}; asking again", file=sys.stderr, flush=True)


PHASES = ("backlog", "burst")
METRICS = ("pods_per_second", "latency_p50_s", "latency_p99_s", "first_bind_s", "cpu_ms_per_pod")
WHOLE_METRICS = ("cpu_ms_per_pod", "cpu_idle_ms_per_s", "rss_peak_mb")
GOALS = (("kube-scheduler", 1.0), ("raw-bind", 0.8))


def aggregate(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median, min and max per contender, phase and metric over the rounds."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(n for r in rounds for n in r):
        out[name] = {}
        for phase in PHASES:
            out[name][phase] = {}
            for metric in METRICS:
                values = [r[name][phase][metric] for r in rounds if name in r]
                values = [v for v in values if v is not None]
                if values:
                    out[name][phase][metric] = spread(values)
        out[name]["whole_run"] = {}
        for metric in WHOLE_METRICS:
            values = [r[name]["whole_run"][metric] for r in rounds if name in r]
            values = [v for v in values if v is not None]
            if values:
                out[name]["whole_run"][metric] = spread(values)
    return out


# The `spread` workload's goals: pods/s at least 0.9x kube-scheduler's, CPU per pod
# at most 1.5x.
SPREAD_GOALS = (("kube-scheduler", 0.9),)
SPREAD_CPU_GOAL = 1.5
# Plain pods on 5,000 nodes or more: CPU per pod at most kube-scheduler's, backlog
# pods/s at least 0.9x the raw bind loop (the 1,000-node goals stay for the burst).
LARGE_NODES = 5000
LARGE_CPU_GOAL = 1.0
LARGE_BACKLOG_GOALS = (("kube-scheduler", 1.0), ("raw-bind", 0.9))
# Decision recording (on by default) costs at most 5 % CPU per scheduled pod.
RECORDING_CPU_GOAL = 1.05
# Issue 45: with the peak model (ballast-peak) CPU per pod at most kube-scheduler's, whatever
# the workload (the issue names `make bench-scheduler-5000`'s spread).
PEAK_CPU_GOAL = 1.0


def _goals_for(phase: str, workload: str, nodes: int) -> tuple[tuple[str, float], ...]:
    if workload == "spread":
        return SPREAD_GOALS
    return LARGE_BACKLOG_GOALS if phase == "backlog" and nodes >= LARGE_NODES else GOALS


def _at_most(ratio: float, goal: float) -> dict[str, Any]:
    return {"goal_at_most": goal, "ratio_of_medians": ratio, "met": ratio <= goal}


def verdict(
    summary: dict[str, Any], workload: str = "plain", nodes: int = 1000
) -> tuple[dict[str, float], dict[str, Any]]:
    """Ratios of the median pods/s (Ballast over each other contender), of the median CPU per
    pod (Ballast over kube-scheduler) and whether each goal is met. The throughput goal names pods
    created at once (`burst`); backlog is reported the same way because it measures scheduling
    without the client's creation rate."""
    ratios: dict[str, float] = {}
    goals: dict[str, Any] = {}
    ours_cpu = summary.get("ballast", {}).get("whole_run", {}).get("cpu_ms_per_pod", {})
    theirs_cpu = summary.get("kube-scheduler", {}).get("whole_run", {}).get("cpu_ms_per_pod", {})
    if ours_cpu.get("median") and theirs_cpu.get("median"):
        key = "cpu_per_pod_ballast_vs_kube_scheduler"
        ratios[key] = round(ours_cpu["median"] / theirs_cpu["median"], 2)
        cpu_goal = SPREAD_CPU_GOAL if workload == "spread" else None
        if workload == "plain" and nodes >= LARGE_NODES:
            cpu_goal = LARGE_CPU_GOAL
        if cpu_goal is not None:
            goals[key] = _at_most(ratios[key], cpu_goal)
    peak_cpu = summary.get(PEAK, {}).get("whole_run", {}).get("cpu_ms_per_pod", {})
    if peak_cpu.get("median") and theirs_cpu.get("median"):
        key = "cpu_per_pod_ballast_peak_vs_kube_scheduler"
        ratios[key] = round(peak_cpu["median"] / theirs_cpu["median"], 2)
        goals[key] = _at_most(ratios[key], PEAK_CPU_GOAL)
    # What recording decisions costs, per phase (start-up is the same either way).
    for phase in PHASES:
        on = summary.get("ballast", {}).get(phase, {}).get("cpu_ms_per_pod", {}).get("median")
        off = summary.get("ballast-no-record", {}).get(phase, {}).get("cpu_ms_per_pod", {})
        if on and off.get("median"):
            key = f"{phase}_cpu_per_pod_recording_on_vs_off"
            ratios[key] = round(on / off["median"], 3)
            goals[key] = _at_most(ratios[key], RECORDING_CPU_GOAL)
    for phase in PHASES:
        ours = summary.get("ballast", {}).get(phase, {}).get("pods_per_second", {}).get("median")
        for other, goal in _goals_for(phase, workload, nodes):
            theirs = summary.get(other, {}).get(phase, {}).get("pods_per_second", {})
            if not ours or not theirs.get("median"):
                continue
            key = f"{phase}_ballast_vs_{other.replace('-', '_')}"
            ratios[key] = round(ours / theirs["median"], 2)
            goals[key] = {"goal": goal, "ratio_of_medians": ratios[key], "met": ratios[key] >= goal}
    return ratios, goals


QUICK_NODES, QUICK_PODS = 200, 500


def default_name(workload: str, nodes: int, quick: bool = False) -> str:
    """The result file of a run: scheduler.json is the full plain run the docs quote; a quick
    run never overwrites it."""
    if quick:
        return "scheduler-quick.json" if workload == "plain" else f"scheduler-{workload}-quick.json"
    if workload == "plain" and nodes == 1000:
        return "scheduler.json"
    return f"scheduler-{workload}-{nodes}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=None, help="default 1,000")
    parser.add_argument("--pods", type=int, default=None, help="per phase, default 2,000")
    parser.add_argument(
        "--only",
        nargs="*",
        default=["raw-bind", "ballast", "kube-scheduler"],
        help="contenders, of raw-bind, ballast, kube-scheduler, ballast-no-record, ballast-peak",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="default 3; the order rotates each round"
    )
    parser.add_argument(
        "--workload",
        choices=WORKLOADS,
        default="plain",
        help="plain pods, or `spread`: per pod a group label, required anti-affinity to its "
        f"group per node and a zone spread (maxSkew 1, {ZONES} zones), as a Deployment's pods",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"one round of {QUICK_PODS} pods per phase on {QUICK_NODES} nodes (a few minutes; "
        "--nodes, --pods and --rounds still win), into bench/results/scheduler-quick.json",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default bench/results/scheduler.json for plain pods on 1,000 nodes, else "
        "bench/results/scheduler-<workload>-<nodes>.json (with --quick, -quick.json)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run Ballast under py-spy (pip install py-spy): stacks per round in "
        "bench/results/profile-<workload>-<nodes>-r<round>.txt (py-spy raw format)",
    )
    redraw_option(parser, "--plot", "only draw the backlog's CPU budget of a result (beside it)")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    if args.plot is not None:
        plot_budget(json.loads(args.plot.read_text()), args.plot.with_suffix(".png"))
        return 0
    runguard.start_run(parser, args.allow_dirty)
    sized(
        args,
        {"nodes": QUICK_NODES, "pods": QUICK_PODS, "rounds": 1},
        {"nodes": 1000, "pods": 2000, "rounds": 3},
    )
    if args.out is None:
        args.out = RESULTS_DIR / default_name(args.workload, args.nodes, args.quick)
    urllib3.disable_warnings()
    began = time.monotonic()
    work, plane, api = start_sandbox("ballast-bench-")
    watcher: feed.Feed | None = None
    try:
        names = make_nodes(api, args.nodes)
        if PEAK in args.only:
            watcher = _start_feed(api, PodMaker(plane), names)
        starters = {
            "raw-bind": (RAW_BIND, lambda ns: RawBinder(api, names, ns).start()),
            "ballast": ("ballast", lambda ns: start_ballast(plane, work, _profile_out(args, ns))),
            "kube-scheduler": ("default-scheduler", lambda ns: start_kube_scheduler(plane, work)),
            "ballast-no-record": (
                "ballast",
                lambda ns: start_ballast(plane, work, _profile_out(args, ns), record=False),
            ),
            PEAK: (
                "ballast",
                lambda ns: start_ballast(
                    plane, work, _profile_out(args, ns), settings=peak_settings(watcher.address)
                ),
            ),
        }
        maker = PodMaker(plane)
        rounds: list[dict[str, Any]] = []
        orders: list[list[str]] = []
        for k in range(args.rounds):
            # rotate so each contender runs first, middle and last: drift on this shared
            # machine (other jobs, etcd growth) then hits all of them alike
            order = args.only[k % len(args.only) :] + args.only[: k % len(args.only)]
            orders.append(order)
            print(f"round {k + 1}/{args.rounds}: {', '.join(order)}", flush=True)
            results = {}
            for name in order:
                scheduler, starter = starters[name]
                ns = f"bench-{name}-r{k + 1}"
                check = _peak_check if name == PEAK else None
                results[name] = run_one(
                    name, ns, scheduler, starter, api, maker, args.pods, args.workload, check
                )
            rounds.append(results)
    finally:
        if watcher is not None:
            watcher.stop()
        plane.stop()
    report: dict[str, Any] = {
        "benchmark": "scheduler",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nodes": args.nodes,
        "pods": args.pods,
        "workload": args.workload,
        "cpus": os.cpu_count(),
        "client_threads": THREADS,
        "rounds": args.rounds,
        "orders": orders,
        "seconds": round(time.monotonic() - began, 1),
    }
    if watcher is not None:
        report["watcher"] = watcher.setup()
        # PeakFit predicted from measured pods in every round, or this was no run of it.
        checks = [r[PEAK].get("peak_fit") or {} for r in rounds if PEAK in r]
        report["peak_fit_live"] = bool(checks) and all(c.get("from_pod_peaks") for c in checks)
        if not report["peak_fit_live"]:
            print(f"{PEAK}: PeakFit predicted no node from measured pods: {checks}", flush=True)
    summary = aggregate(rounds)
    ratios, goals = verdict(summary, args.workload, args.nodes)
    report |= {"medians": summary, "ratios_of_medians": ratios, "goals": goals}
    report["per_round"] = rounds
    write_result(args.out, report)  # before the plot: a failing plot never loses a run
    plot_budget(report, args.out.with_suffix(".png"))
    _print_table(summary, ratios, goals)
    return 0


BUDGET_PARTS = ("contender", "kube-apiserver", "etcd", "kwok", "bench")


def plot_budget(report: dict[str, Any], path: Path) -> None:
    """The backlog phase per round and contender: each process's CPU per pod bound, stacked
    (the machine's whole cost of a pod), with the contender's pods/s on top. On a machine
    whose cores are all busy, a contender's pods/s is the cores over that stack."""
    bars = []
    for k, results in enumerate(report["per_round"]):
        for name, result in results.items():
            backlog = result["backlog"]
            spent = backlog.get("cpu_ms_per_pod_by_process")
            if spent:
                bars.append((f"r{k + 1}\n{name}", spent, backlog["pods_per_second"]))
    if not bars:
        return
    fig, ax = new_figure(11, 5)
    xs = range(len(bars))
    bottom = [0.0] * len(bars)
    for part in BUDGET_PARTS:
        heights = [spent.get(part, 0.0) for _, spent, _ in bars]
        ax.bar(xs, heights, 0.6, bottom=bottom, label=part)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    for x, (_, _, rate), top in zip(xs, bars, bottom, strict=True):
        ax.text(x, top + 0.05, f"{rate:.0f}/s", ha="center", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([label for label, _, _ in bars], fontsize=8)
    ax.set_ylabel("CPU ms per pod bound (backlog phase)")
    ax.set_title(
        f"Backlog of {report['pods']} pods on {report['nodes']} nodes, "
        f"{report.get('cpus')} cores all busy: where each pod's CPU went, by process"
    )
    save(fig, path, "upper right")


def _print_table(summary: dict[str, Any], ratios: dict[str, float], goals: dict[str, Any]) -> None:
    for phase in PHASES:
        print(f"{phase}: median pods/s [min..max], median p50/p99 latency")
        for name, phases in summary.items():
            pps = phases[phase].get("pods_per_second", {})
            p50 = phases[phase].get("latency_p50_s", {}).get("median")
            p99 = phases[phase].get("latency_p99_s", {}).get("median")
            print(
                f"  {name:15} {pps.get('median')} [{pps.get('min')}..{pps.get('max')}]"
                f"  {p50} s / {p99} s"
            )
    for key, goal in goals.items():
        bound = f">= {goal['goal']}" if "goal" in goal else f"<= {goal['goal_at_most']}"
        print(f"{key}: {ratios[key]}x, goal {bound}x: {'met' if goal['met'] else 'MISSED'}")
    for name, phases in summary.items():
        cpu = phases.get("whole_run", {})
        print(
            f"  {name:15} CPU {cpu.get('cpu_ms_per_pod', {}).get('median')} ms/pod, idle "
            f"{cpu.get('cpu_idle_ms_per_s', {}).get('median')} ms/s, "
            f"RSS peak {cpu.get('rss_peak_mb', {}).get('median')} MB"
        )


def _start_feed(api: client.ApiClient, maker: PodMaker, nodes: list[str]) -> feed.Feed:
    """ballast-peak's watcher, on `feed.BACKGROUND` pods per node created bound first."""
    count = feed.BACKGROUND * len(nodes)
    ensure_namespace(api, feed.NAMESPACE)
    seconds = place_pods(maker, feed.NAMESPACE, nodes, count)
    print(f"{count} background pods bound in {seconds:.0f}s", flush=True)
    placed = {(feed.NAMESPACE, f"p{i:06d}"): nodes[i % len(nodes)] for i in range(count)}
    return feed.Feed(placed).start()


def _profile_out(args: argparse.Namespace, namespace: str) -> Path | None:
    if not args.profile:
        return None
    round_ = namespace.rsplit("-", 1)[1]
    return RESULTS_DIR / f"profile-{args.workload}-{args.nodes}-{round_}.txt"


if __name__ == "__main__":
    sys.exit(main())
