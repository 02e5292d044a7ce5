"""The watcher's per-pod statistics (watcher/podstats.py) at N pods: memory per pod, the
document's size, and the time one poll and one document take; with `--workloads`, the same for
the workloads' history (watcher/workloadhistory.py) at N workloads of two replicas each.
docs/peak-model.md quotes its output.

    .venv/bin/python hack/podstats_memory.py [pods]
    .venv/bin/python hack/podstats_memory.py --workloads [workloads]
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from watcher import workloadhistory
from watcher.podstats import ROWS, PodStats
from watcher.workloadhistory import WorkloadHistory


def main(pods: int) -> dict:
    rng = np.random.default_rng(1)
    keys = [(f"ns-{i % 500}", f"web-{i // 500}-{i:06d}abcde") for i in range(pods)]
    workloads = {k: f"{k[0]}/Deployment/web-{i // 500}" for i, k in enumerate(keys)}
    tracemalloc.start()
    stats = PodStats(300.0, 15.0, 3600.0)
    polls, add_s = 25, []
    for step in range(polls):  # more than the window's 20 samples: every ring full
        usage = dict(
            zip(
                keys,
                zip(rng.gamma(2, 100, pods), rng.normal(2e8, 1e7, pods), strict=True),
                strict=True,
            )
        )
        started = time.perf_counter()
        stats.add(1000.0 + 15 * step, usage, workloads)
        add_s.append(time.perf_counter() - started)
        del usage
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    arrays = sum(getattr(stats, name).nbytes for name in ROWS) / len(stats.last)
    started = time.perf_counter()
    doc = json.dumps(stats.doc(1000.0 + 15 * polls), separators=(",", ":")).encode()
    doc_s = time.perf_counter() - started
    return {
        "pods": pods,
        "commit": _commit(),
        "bytesPerPodArrays": round(arrays, 1),
        "bytesPerPodTotal": round(held / pods, 1),
        "heldMiB": round(held / 2**20, 1),
        "pollSecondsMedian": round(float(np.median(add_s)), 4),
        "docSeconds": round(doc_s, 3),
        "docMiB": round(len(doc) / 2**20, 2),
        "docGzipMiB": round(len(gzip.compress(doc, 5)) / 2**20, 2),
        "rowsMiB": round(len(stats.encode()) / 2**20, 2),
    }


def history(workloads: int) -> dict:
    """A day of hourly polls of `workloads` workloads, two replicas each."""
    rng = np.random.default_rng(1)
    pods = [(f"ns-{i % 500}", f"w{i}-abcde-{r}") for i in range(workloads) for r in (0, 1)]
    keys = {p: f"{p[0]}/Deployment/w{i // 2}" for i, p in enumerate(pods)}
    tracemalloc.start()
    found = WorkloadHistory(3600.0)
    add_s = []
    for hour in range(24):
        usage = dict(zip(pods, zip(rng.gamma(2, 100, len(pods)), rng.normal(2e8, 1e7, len(pods)),
                                   strict=True), strict=True))  # fmt: skip
        started = time.perf_counter()
        found.add(3600.0 * (1000 + hour), usage, keys)
        add_s.append(time.perf_counter() - started)
        del usage
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    arrays = sum(getattr(found, name)[0:1].nbytes for name in workloadhistory.ROWS)
    started = time.perf_counter()
    doc = json.dumps(found.doc(3600.0 * 1023), separators=(",", ":")).encode()
    doc_s = time.perf_counter() - started
    return {
        "workloads": workloads,
        "commit": _commit(),
        "bytesPerWorkloadArrays": arrays,
        "bytesPerWorkloadTotal": round(held / workloads, 1),
        "heldMiB": round(held / 2**20, 1),
        "pollSecondsMedian": round(float(np.median(add_s)), 4),
        "docSeconds": round(doc_s, 3),
        "docMiB": round(len(doc) / 2**20, 2),
        "rowsMiB": round(len(found.encode()) / 2**20, 2),
    }


def _commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--workloads"]:
        print(json.dumps(history(int(args[1]) if len(args) > 1 else 50_000)))
    else:
        print(json.dumps(main(int(args[0]) if args else 50_000)))
