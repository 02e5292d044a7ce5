"""The placement benchmark's `gpu-shared` scenario: training and inference pods on time-sliced
GPUs, placed by Ballast with GpuLoad, by kube-scheduler (counts) and by Trimaran (no GPU view).

A pool is NODES kwok nodes of GPUS A100-40GB GPUs each, time-sliced in REPLICAS replicas
(`nvidia.com/gpu.shared`). Pods arrive in WAVES waves GAP s apart, each asking one replica:
a quarter training (70-95 % of a GPU, 14-28 GiB), the rest inference (5-35 %, 2-9 GiB); each
declares what it uses (`ballast.io/gpu-memory`, `ballast.io/gpu-util`), and uses that
(sandbox/load/gpusim.py), reached over the simulator's ramp. The simulated device plugin gives a
replica the GPU of its node with the fewest replicas in use, as time-slicing spreads them.

Measured once every pod is bound and ramped, from the plan (true demand, not clamped):
- hottest GPU: the largest sum of its pods' utilisation, in percent of one GPU;
- GPUs over 95 % memory: GPUs whose pods' memory passes 95 % of the framebuffer;
- pods that would not have started: on each GPU, in bind order, a pod whose memory does not
  fit beside those bound before it.
Results: bench/results/placement-gpu[-quick].json (stamped: bench.harness.provenance) and a plot.
Usage: `python -m bench.placement.gpu [--quick] [--seeds N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from bench.harness import runguard
from bench.harness.common import BindTracker, PodMaker, new_figure, redraw_option, save
from bench.harness.provenance import write_result
from bench.placement import run as pl
from sandbox.cluster.nodes import NodeSpec
from sandbox.load import gpusim
from sandbox.load.simulator import SimulatorConfig

NODES = 6
GPUS = 4
REPLICAS = 4
FB_MIB = 40960
WAVES = 4
PER_WAVE = 20
GAP = 20.0
RAMP_SECONDS = 10.0
TRAINING_SHARE = 0.25
TRAINING = ((70.0, 95.0), (14.0, 28.0))  # (util %, memory GiB) ranges
INFERENCE = ((5.0, 35.0), (2.0, 9.0))
CONTENDERS = ("ballast-gpu", "kube-scheduler", "trimaran-tlp")
SEEDS = (1, 2, 3)
MEASURES = ("hottest_gpu", "gpus_over_95_memory", "pods_not_started", "pending")


@dataclass(frozen=True)
class GpuPodPlan:
    training: bool
    util: float  # percent of one GPU
    memory_mib: float


def plan(seed: int, count: int = WAVES * PER_WAVE) -> list[GpuPodPlan]:
    rng = random.Random(f"placement:gpu-shared:{seed}")
    training = set(rng.sample(range(count), round(TRAINING_SHARE * count)))
    out = []
    for j in range(count):
        (u_lo, u_hi), (m_lo, m_hi) = TRAINING if j in training else INFERENCE
        memory = round(rng.uniform(m_lo, m_hi) * 2) / 2  # half GiB steps, as people write them
        out.append(GpuPodPlan(j in training, round(rng.uniform(u_lo, u_hi)), memory * 1024))
    return out


def node_specs(contender: str) -> list[NodeSpec]:
    (base,) = gpusim.gpu_node_specs(1, GPUS, REPLICAS, fb_mib=FB_MIB)
    return [
        NodeSpec(
            pl.node_name(contender, i),
            cpu="32",
            memory="128Gi",
            labels={**base.labels, pl.POOL_LABEL: contender},
            extended=dict(base.extended),
        )
        for i in range(NODES)
    ]


def pod_body(contender: str, j: int, p: GpuPodPlan) -> dict[str, Any]:
    cpu = "2" if p.training else "500m"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pl.pod_name(contender, j),
            "labels": {pl.POOL_LABEL: contender},
            "annotations": {
                gpusim.MEMORY_ANNOTATION: f"{p.memory_mib:.0f}Mi",
                gpusim.UTIL_ANNOTATION: f"{p.util:g}",
            },
        },
        "spec": {
            "schedulerName": pl.scheduler_name(contender),
            "nodeSelector": {pl.POOL_LABEL: contender},
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/gpu:1",
                    "resources": {
                        "requests": {"cpu": cpu, "memory": "2Gi", gpusim.SHARED: "1"},
                        "limits": {gpusim.SHARED: "1"},
                    },
                }
            ],
        },
    }


def measure(
    on_gpu: dict[tuple[str, int], list[tuple[float, GpuPodPlan]]], pods: int, placed: int
) -> dict[str, Any]:
    """The scenario's figures from each GPU's pods, (bind time, plan) each."""
    hottest = 0.0
    over = failed = 0
    for users in on_gpu.values():
        hottest = max(hottest, sum(p.util for _, p in users))
        memory = sum(p.memory_mib for _, p in users)
        over += memory > 0.95 * FB_MIB
        used = 0.0
        for _, p in sorted(users, key=lambda u: u[0]):
            if used + p.memory_mib > FB_MIB:
                failed += 1  # out of GPU memory at start: it never runs, it takes nothing
            else:
                used += p.memory_mib
    return {
        "hottest_gpu": round(hottest, 1),
        "gpus_over_95_memory": over,
        "pods_not_started": failed,
        "pending": pods - placed,
    }


def _wait_gpus(url: str, nodes: list[str], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            doc = requests.get(f"{url}/api/v1/gpus", timeout=5).json()["nodes"]
            if all(len((doc.get(n) or {}).get("gpus") or {}) == GPUS for n in nodes):
                return
        except (requests.RequestException, ValueError, KeyError):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"the watcher did not report the GPUs of {len(nodes)} nodes")


def run_one(seed: int, contenders: list[str], say=print) -> dict[str, Any]:
    plans = plan(seed)
    specs = [s for c in contenders for s in node_specs(c)]
    config = SimulatorConfig(seed=seed, ramp_seconds=RAMP_SECONDS, background_cpu=(5.0, 15.0))
    services = pl.Services(f"ballast-placement-gpu-{seed}-", specs, config, contenders)
    ok = False
    try:
        started = time.monotonic()
        api = services.start()
        _wait_gpus(services.watcher_url, [s.name for s in specs])
        time.sleep(12.0)  # a few more polls, and the schedulers' GPU fetch after them
        say(f"  stack and {len(contenders)} schedulers up in {time.monotonic() - started:.0f} s")
        tracker = BindTracker(api, pl.NAMESPACE)
        tracker.start()
        maker = PodMaker(services.plane)
        first = time.monotonic()
        for w in range(WAVES):
            pl._sleep_until(first + w * GAP)
            js = range(w * PER_WAVE, (w + 1) * PER_WAVE)
            bodies = [pod_body(c, j, plans[j]) for j in js for c in contenders]
            with ThreadPoolExecutor(pl.CREATE_THREADS) as pool:
                list(pool.map(lambda b: maker.create(pl.NAMESPACE, b), bodies))
        last_wave = first + (WAVES - 1) * GAP
        total = len(plans) * len(contenders)
        while not pl.binding_over(
            time.monotonic(), last_wave, max(tracker.bound.values(), default=last_wave),
            len(tracker.bound), total,
        ):  # fmt: skip
            time.sleep(0.2)
        # The simulated device plugin hands out GPUs at its next tick.
        pl._sleep_until(max(tracker.bound.values(), default=first) + 2 * config.interval + 1)
        tracker.stop()
        assigned = services.simulator.gpus.assignments()
        say(f"  all pods placed after {time.monotonic() - first:.0f} s")
        results = {}
        for c in contenders:
            on_gpu: dict[tuple[str, int], list[tuple[float, GpuPodPlan]]] = {}
            placed = 0
            for j, p in enumerate(plans):
                name = pl.pod_name(c, j)
                for (key, node), indices in assigned.items():
                    if key == f"{pl.NAMESPACE}/{name}":
                        placed += 1
                        bound = tracker.bound.get(name, first)
                        for i in indices:
                            on_gpu.setdefault((node, i), []).append((bound, p))
            results[c] = measure(on_gpu, len(plans), placed)
        ok = True
        return {"scenario": "gpu-shared", "seed": seed, "contenders": results}
    finally:
        services.close(ok, say)


def summarize(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Medians over seeds, per contender and measure."""
    out: dict[str, dict[str, float]] = {}
    for c in runs[0]["contenders"]:
        out[c] = {
            m: statistics.median(r["contenders"][c][m] for r in runs if c in r["contenders"])
            for m in MEASURES
        }
    return out


def goals(summary: dict[str, dict[str, float]]) -> dict[str, bool | None]:
    """The issue's: no pod placed where its memory does not fit; the hottest GPU and the GPUs
    over 95 % memory at most half of kube-scheduler's."""
    ours, kube = summary.get("ballast-gpu"), summary.get("kube-scheduler")
    if ours is None or kube is None:
        return {}
    return {
        "no_pod_without_memory": ours["pods_not_started"] == 0,
        "hottest_gpu_half": ours["hottest_gpu"] <= kube["hottest_gpu"] / 2,
        "gpus_over_95_half": ours["gpus_over_95_memory"] <= kube["gpus_over_95_memory"] / 2,
    }


def plot(doc: dict[str, Any], path: Path) -> Path:
    summary = doc["summary"]
    names = list(summary)
    titles = {
        "hottest_gpu": "hottest GPU (% of one GPU's compute)",
        "gpus_over_95_memory": "GPUs over 95 % memory",
        "pods_not_started": "pods whose GPU memory did not fit",
        "pending": "pods left pending (fit nowhere)",
    }
    fig, axes = new_figure(3.6 * len(titles), 3.6, ncols=len(titles))
    for ax, (measure_name, title) in zip(axes, titles.items(), strict=True):
        values = [summary[c][measure_name] for c in names]
        ax.bar(range(len(names)), values, color=["#2f6fb0", "#999999", "#d08a2c"][: len(names)])
        ax.margins(y=0.12)
        ax.set_xticks(range(len(names)), names, rotation=15)
        ax.set_title(title, fontsize=10)
        for i, v in enumerate(values):
            ax.annotate(f"{v:g}", (i, v), ha="center", va="bottom", fontsize=9)
    seeds = len(doc["runs"])
    title = (
        f"gpu-shared: {NODES} nodes x {GPUS} GPUs x {REPLICAS} replicas per pool, "
        f"{WAVES * PER_WAVE} pods, medians of {seeds} seed(s)"
    )
    return save(fig, path, legend=None, title=title)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.placement.gpu", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one seed")
    parser.add_argument("--seeds", type=int, help=f"how many seeds (default {len(SEEDS)})")
    parser.add_argument("--out", type=Path, help="results JSON (default bench/results/...)")
    redraw_option(parser, "--plot", "only draw an earlier result's picture (beside it)")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    if args.plot is not None:
        print(f"plot: {plot(json.loads(args.plot.read_text()), args.plot.with_suffix('.png'))}")
        return 0
    runguard.start_run(parser, args.allow_dirty)
    seeds = list(SEEDS[:1] if args.quick else SEEDS)
    if args.seeds:
        seeds = list(range(1, args.seeds + 1))
    contenders = list(CONTENDERS)
    started = time.monotonic()
    runs = []
    for seed in seeds:
        print(f"[{time.monotonic() - started:5.0f} s] gpu-shared, seed {seed}", flush=True)
        run = run_one(seed, contenders, say=lambda s: print(s, flush=True))
        runs.append(run)
        for c, r in run["contenders"].items():
            print(f"    {c:<15} " + "  ".join(f"{m} {r[m]}" for m in MEASURES), flush=True)
    summary = summarize(runs)
    doc = {
        "about": __doc__.split("\n\n")[0],
        "quick": args.quick,
        "seconds": round(time.monotonic() - started),
        "setup": {
            "nodes_per_pool": NODES,
            "gpus_per_node": GPUS,
            "replicas_per_gpu": REPLICAS,
            "framebuffer_mib": FB_MIB,
            "waves": WAVES,
            "per_wave": PER_WAVE,
            "gap": GAP,
            "training": {"share": TRAINING_SHARE, "util": TRAINING[0], "memory_gib": TRAINING[1]},
            "inference": {"util": INFERENCE[0], "memory_gib": INFERENCE[1]},
            "seeds": seeds,
            "contenders": {c: pl.DESCRIPTIONS[c] for c in contenders},
            # GpuLoad added to the chart's profile, as it ran (bench.harness.chart's overlays)
            "ballast_profile": pl.ballast_profile("ballast-gpu"),
        },
        "summary": summary,
        "goals": goals(summary),
        "runs": runs,
    }
    out = args.out or pl.RESULTS / f"placement-gpu{'-quick' if args.quick else ''}.json"
    write_result(out, doc, argv)
    print(f"results: {out} ({doc['seconds']} s); goals {doc['goals']}")
    print(f"plot: {plot(doc, out.with_suffix('.png'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
