"""The scheduler's cache at scale: 5,000 nodes and 50,000 bound pods.

`python -m bench.scheduler.cache [--nodes 5000] [--pods 50000] [--only ballast kube-scheduler]`

One sandbox; `--nodes` kwok nodes; `--pods` pods created already bound (`spec.nodeName` set,
spread evenly, 100m / 128Mi each, another scheduler's name), so every scheduler must list and
count them before it can place anything. Then, per contender: 10 pending pods of its own are
created while it is stopped, it starts, and the bench notes
- `ready_s`: start to healthz (the initial lists, paged, 500 per page, and the cache built);
- `first_bind_s`: start to the first of those pods bound (what an operator waits after a
  restart), `all_bound_s` to the last;
- `cpu_startup_s`: the process's CPU (user + system) until the last one is bound;
- `rss_mb` after the pods are bound, and `rss_peak_mb` (VmHWM).
JSON in bench/results/scheduler-cache-<nodes>-<pods>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client

from bench.harness import runguard
from bench.harness.common import (
    RESULTS_DIR,
    THREADS,
    BindTracker,
    Contender,
    PodMaker,
    make_nodes,
    pod_body,
    process_rss_mb,
    start_ballast,
    start_kube_scheduler,
    start_sandbox,
)
from bench.harness.provenance import write_result
from sandbox.cluster.namespaces import ensure_namespace

PENDING = 10
PLACED_SCHEDULER = "someone-else"  # neither contender serves it: the pods are only counted
GOAL_RSS_MB = 1024.0


def place_pods(maker: PodMaker, namespace: str, nodes: list[str], count: int) -> float:
    """`count` pods created bound, round robin over `nodes`; returns the seconds it took."""

    def one(i: int) -> None:
        body = pod_body(f"p{i:06d}", PLACED_SCHEDULER)
        body["spec"]["nodeName"] = nodes[i % len(nodes)]
        maker.create(namespace, body)

    t0 = time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        for done, _ in enumerate(pool.map(one, range(count)), 1):
            if done % 10000 == 0:
                print(f"  {done} pods placed in {time.monotonic() - t0:.0f}s", flush=True)
    return time.monotonic() - t0


def measure(
    name: str,
    scheduler: str,
    start: Any,
    api: client.ApiClient,
    maker: PodMaker,
) -> dict[str, Any]:
    namespace = f"cache-{name}"
    ensure_namespace(api, namespace)
    tracker = BindTracker(api, namespace)
    tracker.start()
    pending = [f"q{i:03d}" for i in range(PENDING)]
    for pod in pending:
        maker.create(namespace, pod_body(pod, scheduler))
    began = time.monotonic()
    contender: Contender = start()
    ready = time.monotonic()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and any(p not in tracker.bound for p in pending):
        time.sleep(0.05)
    bound = [tracker.bound[p] for p in pending if p in tracker.bound]
    result = {
        "ready_s": round(ready - began, 3),
        "first_bind_s": round(min(bound) - began, 3) if bound else None,
        "all_bound_s": round(max(bound) - began, 3) if bound else None,
        "bound": len(bound),
        "cpu_startup_s": round(contender.cpu() or 0.0, 3),
        "rss_mb": process_rss_mb(contender.pid) if contender.pid else None,
        "rss_peak_mb": contender.rss_peak_mb(),
    }
    print(f"[{name}] {json.dumps(result)}", flush=True)
    contender.stop()
    tracker.stop()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--only", nargs="*", default=["ballast", "kube-scheduler"])
    parser.add_argument("--out", type=Path, default=None)
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    runguard.start_run(parser, args.allow_dirty)
    out = args.out or RESULTS_DIR / f"scheduler-cache-{args.nodes}-{args.pods}.json"
    urllib3.disable_warnings()
    began = time.monotonic()
    work, plane, api = start_sandbox("ballast-bench-cache-")
    try:
        nodes = make_nodes(api, args.nodes)
        maker = PodMaker(plane)
        ensure_namespace(api, "cache-placed")
        print(f"creating {args.pods} bound pods", flush=True)
        placing = place_pods(maker, "cache-placed", nodes, args.pods)
        starters = {
            "ballast": ("ballast", lambda: start_ballast(plane, work)),
            "kube-scheduler": ("default-scheduler", lambda: start_kube_scheduler(plane, work)),
        }
        results = {}
        for name in args.only:
            scheduler, start = starters[name]
            results[name] = measure(name, scheduler, start, api, maker)
    finally:
        plane.stop()
    ours = results.get("ballast", {})
    report = {
        "benchmark": "scheduler-cache",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nodes": args.nodes,
        "bound_pods": args.pods,
        "pending_pods": PENDING,
        "cpus": os.cpu_count(),
        "placing_seconds": round(placing, 1),
        "seconds": round(time.monotonic() - began, 1),
        "contenders": results,
        "goals": {
            "ballast_rss_under_1_gb": {
                "goal_mb": GOAL_RSS_MB,
                "rss_peak_mb": ours.get("rss_peak_mb"),
                "met": (ours.get("rss_peak_mb") or GOAL_RSS_MB + 1) < GOAL_RSS_MB,
            }
        },
    }
    write_result(out, report)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
