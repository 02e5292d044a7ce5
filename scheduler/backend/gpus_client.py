"""The watcher's GPU windows (`GET /api/v1/gpus`, watcher/gpus.py), kept fresh by a background
thread exactly as the workload profiles are (backend/profiles_client.py): the cycle reads
`profiles()` (here: the GPUs) and never waits; a failed or malformed answer keeps the last good
one; a watcher without GPU data (404: GPU metrics off, or an upstream load-watcher) is asked
again every `idle` seconds. A GPU's own sample time decides whether it is still data
(GpuLoads.live), so an answer kept through a watcher outage ages as it should.
"""

from __future__ import annotations

import math
from typing import Any

from scheduler.backend.profiles_client import ProfilesClient
from scheduler.framework.gpus import NO_GPUS, GpuLoads, GpuStats


def _number(doc: Any, *path: str) -> float | None:
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    if isinstance(doc, bool) or not isinstance(doc, (int, float)):
        return None
    value = float(doc)
    return value if math.isfinite(value) and value >= 0 else None


def parse_gpus(doc: Any) -> GpuLoads:
    """The watcher's answer -> GpuLoads; a GPU without utilisation, memory or sample time is
    left out, alone (a node keeps its other GPUs)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        raise ValueError("expected an object with a `nodes` object")
    out: dict[str, tuple[GpuStats, ...]] = {}
    for node, entry in doc["nodes"].items():
        gpus = entry.get("gpus") if isinstance(entry, dict) else None
        if not isinstance(node, str) or not isinstance(gpus, dict):
            continue
        kept = []
        for index, gpu in gpus.items():
            figures = (
                _number(gpu, "util", "avg"),
                _number(gpu, "fbUsed", "latest"),
                _number(gpu, "fbFree", "latest"),
                _number(gpu, "last"),
                _number(gpu, "horizon"),
            )
            if any(f is None for f in figures):
                continue
            util, used, free, last, horizon = figures  # type: ignore[misc]
            users = gpu.get("pods")
            pods = None
            if isinstance(users, list) and all(isinstance(u, str) for u in users):
                pods = tuple(users)
            kept.append(GpuStats(str(index), min(util, 100.0), used, free, last, horizon, pods))
        if kept:
            out[node] = tuple(sorted(kept, key=lambda g: g.index))
    expiry = _number(doc, "expiry") or NO_GPUS.expiry
    workloads = {}
    raw = doc.get("workloads")
    for key, profile in (raw if isinstance(raw, dict) else {}).items():
        memory, util = _number(profile, "memory", "p95"), _number(profile, "util", "p95")
        if isinstance(key, str) and memory is not None and util is not None:
            workloads[key] = (memory, util)
    return GpuLoads(out, expiry, _number(doc, "built") or 0.0, workloads)


class GpusClient(ProfilesClient):
    PATH = "/api/v1/gpus"
    WHAT = "GPU windows"
    EMPTY = NO_GPUS

    @staticmethod
    def parse(doc: Any) -> Any:
        return parse_gpus(doc)

    def gpus(self) -> GpuLoads:
        return self.profiles()
