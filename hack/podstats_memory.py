"""The watcher's per-pod statistics (watcher/podstats.py) at N pods: memory per pod, the
document's size, and the time one poll and one document take. docs/peak-model.md quotes its output.

    .venv/bin/python hack/podstats_memory.py [pods]
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from watcher.podstats import ROWS, PodStats


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
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "pods": pods,
        "commit": commit,
        "bytesPerPodArrays": round(arrays, 1),
        "bytesPerPodTotal": round(held / pods, 1),
        "heldMiB": round(held / 2**20, 1),
        "pollSecondsMedian": round(float(np.median(add_s)), 4),
        "docSeconds": round(doc_s, 3),
        "docMiB": round(len(doc) / 2**20, 2),
        "docGzipMiB": round(len(gzip.compress(doc, 5)) / 2**20, 2),
        "rowsMiB": round(len(stats.encode()) / 2**20, 2),
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)))
