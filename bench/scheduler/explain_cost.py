"""What recording decisions (`ballast explain`) costs, measured in-process.

5,000 nodes with fresh load data, the default profile, plain pods (100m / 128Mi). One cycle as
scheduler/cycle.py runs it: filter until percentageOfNodesToScore's share is feasible (the
adaptive rule: 500 nodes), score them, pick; with recording on, also the score pass's parts, the
record of the top nodes and its entry in the store. The same pods alternate between recording
off and on, in blocks, so drift on a shared machine hits both alike.

- CPU: process time per cycle, off and on, and the ratio (the goal: at most 1.05x; the whole
  pod in the scheduler also binds and writes events, so this ratio is the upper bound of the
  per-pod one);
- memory: the store's retained size after 10,000 recorded pods (tracemalloc), the goal at most
  50 MB, and the mean record size.
`python -m bench.scheduler.explain_cost [--nodes 5000 --pods 10000]`; JSON in
bench/results/explain-cost.json. `make bench-scheduler` runs it after the end-to-end rounds.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.harness import runguard
from bench.harness.common import RESULTS_DIR, sized
from bench.harness.provenance import write_result
from scheduler.backend import decisions, explanation
from scheduler.backend.decisions import DecisionStore
from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.cycle import filter_pass, nodes_to_find, pick_best
from scheduler.framework import CycleState, MetricStats, NodeLoad
from scheduler.framework.profile import FILTER_TALLY, Profile, ScoreParts
from scheduler.framework.resources import node_info, pod_info, predicted_cpu_m
from scheduler.framework.snapshot import Snapshot, snapshot_of

RESULTS = RESULTS_DIR / "explain-cost.json"
QUICK_NAME = "explain-cost-quick.json"
CPU_GOAL = 1.05
MEMORY_GOAL_MB = 50.0


def make_nodes(count: int, rng: random.Random) -> tuple[list, dict[str, NodeLoad]]:
    nodes, loads = [], {}
    for i in range(count):
        name = f"node-{i:05d}"
        capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"z{i % 3}"}
        doc = {
            "metadata": {"name": name, "labels": labels},
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        nodes.append(node_info(doc))
        metrics = {}
        for key in ("cpu", "memory"):
            avg = rng.uniform(5, 80)
            metrics[key] = MetricStats(
                avg, rng.uniform(0, 8), avg, "fresh", 3.0, 0.0, None, 60, 300
            )
        loads[name] = NodeLoad(metrics, "ballast")
    return nodes, loads


def make_pod(i: int) -> Any:
    return pod_info(
        {
            "metadata": {"name": f"pod-{i:05d}", "namespace": "bench", "uid": f"uid-{i}"},
            "spec": {
                "schedulerName": "ballast",
                "containers": [
                    {
                        "name": "app",
                        "image": "example.invalid/app:1",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ],
            },
        }
    )


class Loop:
    """The cycle's filter/score/pick/record path on a fixed snapshot."""

    def __init__(self, profile: Profile, snap: Snapshot, store: DecisionStore) -> None:
        self.profile = profile
        self.snap = snap
        self.nodes = list(snap.nodes.values())
        self.store = store
        self.rng = random.Random(1)
        self.start = 0

    def cycle(self, pod: Any, record: bool) -> None:
        profile, snap, nodes = self.profile, self.snap, self.nodes
        state = CycleState()
        if record:
            state[FILTER_TALLY] = {}
        total = len(nodes)
        wanted = nodes_to_find(total, 0)
        feasible, reasons, seen = filter_pass(profile, pod, nodes, snap, state, self.start, 0)
        self.start = (self.start + seen) % total
        parts = ScoreParts() if record else None
        names, totals = profile.totals(pod, feasible, snap, state, parts)
        chosen = names[pick_best(totals, self.rng)]
        predicted = predicted_cpu_m(pod)
        if record:
            counts = explanation.node_counts(total, seen, len(feasible), len(feasible), 0, wanted)
            detail = explanation.placed(
                pod, counts, reasons, state, snap, parts, chosen, predicted, self.store.top
            )
            self.store.add(pod.key, pod.uid, snap.now, "ballast", decisions.BINDING, chosen, detail)


def measure_cpu(loop: Loop, pods: list, blocks: int) -> dict[str, Any]:
    """Process CPU per cycle with recording off and on, alternating blocks of pods."""
    spent = {False: 0.0, True: 0.0}
    done = {False: 0, True: 0}
    size = max(1, len(pods) // (2 * blocks))
    for b in range(2 * blocks):
        record = b % 2 == 1
        batch = pods[(b // 2) * size : (b // 2 + 1) * size]
        t0 = time.process_time()
        for pod in batch:
            loop.cycle(pod, record)
        spent[record] += time.process_time() - t0
        done[record] += len(batch)
    off = 1000 * spent[False] / done[False]
    on = 1000 * spent[True] / done[True]
    return {
        "cycles_each": done[False],
        "cpu_ms_per_cycle_off": round(off, 4),
        "cpu_ms_per_cycle_on": round(on, 4),
        "ratio_on_vs_off": round(on / off, 4),
        "record_us_per_cycle": round(1000 * (on - off), 1),
    }


def measure_memory(loop: Loop, pods: list) -> dict[str, Any]:
    """The store's retained size after every pod is recorded once."""
    loop.store = store = DecisionStore(pods=len(pods))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for pod in pods:
        loop.cycle(pod, True)
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    one = store.get("bench", pods[0].name)
    size = len(json.dumps(one["attempts"][0]).encode()) if one else 0
    return {
        "recorded_pods": len(store),
        "store_mb": round(retained / 1e6, 2),
        "bytes_per_pod": round(retained / max(1, len(store))),
        "one_record_json_bytes": size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="a tenth of each size, explain-cost-quick.json"
    )
    parser.add_argument("--nodes", type=int, default=None, help="default 5,000")
    parser.add_argument("--pods", type=int, default=None, help="recorded (memory); 10,000")
    parser.add_argument("--cpu-pods", type=int, default=None, help="cycles (CPU); 4,000")
    parser.add_argument(
        "--out", type=Path, default=None, help="default bench/results/explain-cost.json"
    )
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    runguard.start_run(parser, args.allow_dirty)
    sized(
        args,
        {"nodes": 500, "pods": 1000, "cpu_pods": 400, "out": RESULTS.with_name(QUICK_NAME)},
        {"nodes": 5000, "pods": 10000, "cpu_pods": 4000, "out": RESULTS},
    )
    rng = random.Random(7)
    nodes, loads = make_nodes(args.nodes, rng)
    snap = snapshot_of(nodes, loads=loads, now=time.time())
    profile = build_profiles(parse_config({}))["ballast"]
    loop = Loop(profile, snap, DecisionStore())
    warm = [make_pod(i) for i in range(200)]
    for pod in warm:
        loop.cycle(pod, True)
        loop.cycle(pod, False)
    cpu = measure_cpu(loop, [make_pod(i) for i in range(args.cpu_pods)], blocks=10)
    memory = measure_memory(loop, [make_pod(i) for i in range(args.pods)])
    report = {
        "benchmark": "explain-cost",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nodes": args.nodes,
        "scored_per_cycle": nodes_to_find(args.nodes, 0),
        "top": DecisionStore().top,
        "cpu": cpu,
        "memory": memory,
        "goals": {
            "cpu_on_vs_off_at_most": CPU_GOAL,
            "cpu_met": cpu["ratio_on_vs_off"] <= CPU_GOAL,
            "memory_mb_at_most": MEMORY_GOAL_MB,
            "memory_met": memory["store_mb"] <= MEMORY_GOAL_MB,
        },
    }
    write_result(args.out, report)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
