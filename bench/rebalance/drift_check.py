"""`make bench-drift-check`: the rebalancer's closed loop on the sandbox, with its default settings.

The check: after placement, one node's own background load rises until the node sits at
90 % CPU; pods carry their load when they move. Passes when the node is under its high
threshold (80 %, on the mean over the watcher's window as the default `avg` reads it) within 6
minutes of going hot, with at most one eviction beyond the minimum
needed, none of a workload whose PodDisruptionBudget is at its limit, none while no node is hot,
none in the 5 minutes after relief, no replacement bound back onto the node it left, no pod lost.

The stack is bench.rebalance's (the sandbox with its controllers, the closed-loop simulator,
Prometheus, Redis, the watcher at a 2 s poll, 15 s rates and a 60 s window, Ballast's scheduler)
with one pool of 8 two-CPU nodes and its 8 Deployments of 3 replicas, each under a PDB of
maxUnavailable 1, except w0: BestEffort (the first a rebalancer tries), its PDB at its limit
(maxUnavailable 0). A pod uses its workload's factor times its request, its replacement too.
`ballast rebalancer` and the scheduler run as the chart deploys them, with bench.rebalance's
overlays (bench.harness.chart: dryRun false, as the chart's is not; the pool's nodeSelector):
the chart's profile judges, avg of the window, high 80, low 50, 3 fresh observations, 10 s
rounds, one eviction per node and round, the node resting a window after it. Measures come from the
simulator's true demand, sampled every second, and the pods, listed every second. Takes about
10 minutes; result: bench/results/drift-check.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.harness import provenance, runguard
from bench.rebalance import run as rb
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import NodeSpec
from sandbox.load.simulator import SimulatorConfig

POOL = "ballast"  # bench.rebalance's names: nodes ballast-<i>, namespace rb-ballast
AT_LIMIT = 0  # the workload whose budget allows no disruption (BestEffort)
PEAK = 90.0  # % CPU the heated node's true demand reaches
RISE_SECONDS = 60.0  # its background climbs to that over this long
WOBBLE = 0.03  # the background's slow wobble: +-3 % of itself (bench.rebalance: 10 %)
BEFORE_RISE = 30.0  # the rebalancer on the settled cluster, no node hot
RELIEF_GOAL = 360.0  # under high within this long of going hot
QUIET_AFTER = 300.0  # no eviction in this long after relief
# "Under high": the true demand's mean over the watcher's window, the average the default
# threshold is defined on (statistic: avg); the highest 10 s mean after relief is reported too.
MEAN_OVER = float(rb.WATCHER_ENV["BALLAST_WINDOW"])
PEAK_OVER = 10.0
T = 10.0


# -- the criteria: pure functions of what was recorded ------------------------------------------
def means(samples: list[tuple[float, float]], span: float = MEAN_OVER) -> list[tuple[float, float]]:
    """(time, mean of the samples in the `span` seconds up to it), one per sample."""
    out = []
    start = 0
    for i, (t, _) in enumerate(samples):
        while samples[start][0] < t - span:
            start += 1
        out.append((t, statistics.fmean(v for _, v in samples[start : i + 1])))
    return out


def hot_since(samples: list[tuple[float, float]], after: float) -> float | None:
    """When the node's mean first went over high after `after`."""
    return next((t for t, v in means(samples) if t >= after and v > rb.HIGH), None)


def relieved_at(samples: list[tuple[float, float]], hot: float | None) -> float | None:
    """The start of the last stretch, after `hot`, in which the node's mean stayed under high to
    the end; None when it ends hot (or never was)."""
    if hot is None:
        return None
    at = None
    for t, v in means(samples):
        if t <= hot:
            continue
        if v > rb.HIGH:
            at = None
        elif at is None:
            at = t
    return at


def minimum_needed(node_cpu: float, pod_uses: list[float]) -> int | None:
    """Fewest of these pods' uses (in % of the node) whose removal takes the node under high;
    None when removing all of them is not enough."""
    left = node_cpu
    for count, use in enumerate(sorted(pod_uses, reverse=True), start=1):
        left -= use
        if left < rb.HIGH:
            return count
    return 0 if node_cpu < rb.HIGH else None


def criteria(
    node: str,
    samples: dict[str, list[tuple[float, float]]],
    evictions: list[dict[str, Any]],
    rise: float,
    end: float,
    needed: int | None,
    at_limit: str,
    lost: int,
) -> dict[str, Any]:
    """Each criterion of the check: its measured value and whether it passed."""
    hot = hot_since(samples[node], rise)
    relief = relieved_at(samples[node], hot)
    after = [e for e in evictions if e["time"] >= rise - BEFORE_RISE]
    hottest = {n: means(s) for n, s in samples.items()}

    def any_hot(t: float) -> bool:
        # The nodes' means at the last sample before the eviction was seen.
        for series in hottest.values():
            before = [v for ts, v in series if ts <= t]
            if before and before[-1] > rb.HIGH:
                return True
        return False

    took = None if relief is None or hot is None else round(relief - hot, 1)
    peak = None
    if relief is not None:
        peak = max((v for t, v in means(samples[node], PEAK_OVER) if t > relief), default=None)
    quiet = None if relief is None else [e for e in after if e["time"] > relief]
    observed_after = None if relief is None else round(end - relief, 1)
    cold = [e for e in after if not any_hot(e["time"])]
    back = [e for e in after if e.get("replacement_node") and e["replacement_node"] == e["from"]]
    limit = [e for e in after if e["workload"] == at_limit]
    out = {
        "relieved_within_6_minutes": {
            "value_s": took,
            "highest_10s_mean_after_relief": None if peak is None else round(peak, 1),
            "pass": took is not None and took <= RELIEF_GOAL,
        },
        "at_most_one_eviction_beyond_the_minimum": {
            "evictions": len(after),
            "minimum_needed": needed,
            "pass": needed is not None and len(after) <= needed + 1,
        },
        "none_of_a_workload_whose_pdb_is_at_its_limit": {
            "evictions": len(limit),
            "pass": not limit,
        },
        "none_while_no_node_is_hot": {"evictions": len(cold), "pass": not cold},
        "none_in_the_5_minutes_after_relief": {
            "evictions": None if quiet is None else len(quiet),
            "observed_after_relief_s": observed_after,
            "pass": quiet is not None and not quiet and (observed_after or 0) >= QUIET_AFTER,
        },
        "no_replacement_bound_back_onto_the_node_it_left": {
            "evictions": len(back),
            "pass": not back,
        },
        "no_pod_lost": {"lost": lost, "pass": lost == 0},
    }
    return out


# -- the run ------------------------------------------------------------------------------------
def pod_use_pct(plan: rb.Plan, workload: str, config: SimulatorConfig) -> float:
    """What one replica of the workload uses, in % of a node (a BestEffort one the default)."""
    w = int(workload[1:])
    request = 0 if w == AT_LIMIT else plan.requests_m[w]
    return (request or config.default_cpu_m) * plan.factors[w] / (rb.NODE_CPU * 10.0)


def heated_node(pods: dict[str, tuple[str, str]]) -> str:
    """The node holding a replica of the at-limit workload with the most other pods (the
    issue's case), else the one with the most pods."""
    per: dict[str, list[str]] = {}
    for name, node in pods.values():
        if node:
            per.setdefault(node, []).append(rb.workload_of(name))
    guarded = [n for n, ws in per.items() if rb.workload_name(AT_LIMIT) in ws]
    return max(guarded or per, key=lambda n: (len(per[n]), n))


def rise(config: SimulatorConfig, node: str, target: float, seconds: float, stop) -> None:
    """The node's background from where it is to `target` %, linearly over `seconds`."""
    start_cpu, memory = config.background[node]
    began = time.monotonic()
    while not stop.is_set():
        f = min(1.0, (time.monotonic() - began) / seconds)
        config.background[node] = (start_cpu + f * (target - start_cpu), memory)
        if f >= 1.0:
            return
        stop.wait(1.0)


def run(seed: int, say=print) -> dict[str, Any]:
    p = rb.plan(rb.Scenario("drift-check", "one node's background rises"), seed)
    background = {rb.node_name(POOL, i): (p.background[i], 20.0) for i in range(rb.NODES)}
    config = SimulatorConfig(
        seed=seed,
        factor_min=1.0,
        factor_max=1.0,
        ramp_seconds=rb.RAMP_SECONDS,
        background=background,
        pod_factors={},
        wobble=WOBBLE,
    )
    specs = [
        NodeSpec(rb.node_name(POOL, i), cpu=str(rb.NODE_CPU), memory="16Gi",
                 labels={rb.POOL_LABEL: POOL})
        for i in range(rb.NODES)
    ]  # fmt: skip
    services = rb.Services(f"ballast-drift-check-{seed}-", specs, config)
    recorder = None
    stop = threading.Event()
    ok = False
    try:
        started = time.monotonic()
        api, sim, _, _ = services.start()
        recorder = rb.Recorder(sim, api, [POOL], p)
        recorder.start()
        ns = rb.namespace(POOL)
        ensure_namespace(api, ns)
        apps, policy = client.AppsV1Api(api), client.PolicyV1Api(api)
        for w in range(rb.WORKLOADS):
            body, budget = rb.deployment(w, POOL, p.requests_m[w]), rb.pdb(w)
            if w == AT_LIMIT:
                del body["spec"]["template"]["spec"]["containers"][0]["resources"]
                budget["spec"]["maxUnavailable"] = 0
            apps.create_namespaced_deployment(ns, body, _request_timeout=T)
            policy.create_namespaced_pod_disruption_budget(ns, budget, _request_timeout=T)
        rb._wait(lambda: recorder.lost(POOL) == 0, 120, "every pod bound")
        time.sleep(rb.SETTLE_SECONDS)
        say(f"  placed and settled in {time.monotonic() - started:.0f} s")
        services.start_rebalancers([POOL])  # bench.rebalance's `ballast` contender
        recorder.measuring = True
        time.sleep(BEFORE_RISE)
        node = heated_node(recorder.pods[POOL])
        idx = int(node.rsplit("-", 1)[1])
        now = time.time()
        cpu_now = [c for t, c in recorder.samples[POOL] if t <= now][-1][idx]
        pods_pct = cpu_now - background[node][0]
        target_bg = PEAK - pods_pct
        on_node = [rb.workload_of(n) for n, nd in recorder.pods[POOL].values() if nd == node]
        movable = [pod_use_pct(p, w, config) for w in on_node if w != rb.workload_name(AT_LIMIT)]
        needed = minimum_needed(PEAK, movable)
        say(
            f"  {node} ({', '.join(sorted(on_node))}): CPU {cpu_now:.1f} %, its background "
            f"{background[node][0]:.1f} -> {target_bg:.1f} % over {RISE_SECONDS:.0f} s "
            f"(to {PEAK:.0f} % in all); minimum evictions to relieve it: {needed}"
        )
        rise_at = time.time()
        threading.Thread(
            target=rise, args=(config, node, target_bg, RISE_SECONDS, stop), daemon=True
        ).start()
        deadline = rise_at + RISE_SECONDS + RELIEF_GOAL + QUIET_AFTER + 30.0
        while time.time() < deadline:
            time.sleep(5.0)
            series = [(t, cpus[idx]) for t, cpus in recorder.samples[POOL]]
            relief = relieved_at(series, hot_since(series, rise_at))
            if relief is not None and time.time() - relief >= QUIET_AFTER + 5.0:
                break
        end = time.time()
        recorder.stop()
        samples = {
            rb.node_name(POOL, i): [(t, cpus[i]) for t, cpus in recorder.samples[POOL]]
            for i in range(rb.NODES)
        }
        evictions = recorder.evictions[POOL]
        result = criteria(
            node,
            samples,
            evictions,
            rise_at,
            end,
            needed,
            rb.workload_name(AT_LIMIT),
            recorder.lost(POOL),
        )
        ok = True
        return {
            "seed": seed,
            "node": node,
            "pods_on_node": sorted(on_node),
            "background_from_to": [round(background[node][0], 1), round(target_bg, 1)],
            "criteria": result,
            "passed": all(c["pass"] for c in result.values()),
            "evictions": [
                {
                    "at_s": round(e["time"] - rise_at, 1),
                    "pod": e["pod"],
                    "from": e["from"],
                    "replacement_node": e["replacement_node"],
                }
                for e in evictions
            ],
            "node_cpu_over_time": [
                [round(t - rise_at, 1), round(v, 1)] for t, v in samples[node][::5]
            ],
            "seconds": round(time.monotonic() - started),
        }
    finally:
        stop.set()
        if recorder is not None:
            recorder.stop()
        services.close(ok, say)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.rebalance.drift_check", description=__doc__.split("\n\n")[1]
    )
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--seed", type=int, help="one plan's seed")
    chosen.add_argument(
        "--seeds", type=int, default=3, help="seeds 1..N, one after the other (default 3)"
    )
    parser.add_argument("--out", type=Path, default=rb.RESULTS / "drift-check.json")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    runguard.start_run(parser, args.allow_dirty)
    seeds = [args.seed] if args.seed is not None else list(range(1, args.seeds + 1))
    runs = []
    for seed in seeds:
        print(f"seed {seed}", flush=True)
        result = run(seed, say=lambda text: print(text, flush=True))
        for name, c in result["criteria"].items():
            values = ", ".join(f"{k} {v}" for k, v in c.items() if k != "pass")
            print(f"  {'PASS' if c['pass'] else 'FAIL'}  {name}: {values}")
        runs.append(result)
    passed = all(r["passed"] for r in runs)
    setup = {**rb.ballast_setup(rb.SYNTHETIC), "timing": rb.SYNTHETIC.record()}
    doc = {"about": __doc__.split("\n\n")[0], "setup": setup, "seeds": seeds,
           "passed": passed, "runs": runs}  # fmt: skip
    path = provenance.write_result(args.out, doc, argv)
    failed = [r["seed"] for r in runs if not r["passed"]]
    print(f"results: {path}: {'passed' if passed else f'FAILED (seeds {failed})'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
