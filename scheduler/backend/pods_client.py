"""The watcher's per-pod statistics (`GET /api/v1/pods`, watcher/podstats.py), kept fresh by a
background thread exactly as the workload profiles are (backend/profiles_client.py): the cycle
reads `pod_usage()` and never waits; a failed or malformed answer keeps the last good one; a
watcher without them (404: pod usage off, or an upstream load-watcher) is asked again every
`idle` seconds, and the peak model falls back on the nodes' window statistics meanwhile.

Each figure is the larger of the window's and the history's: a pod whose use stepped up shows
it within the window, and a burst hours ago still counts until the history forgets it (the
paper's max-of-predictors, applied per pod). The history's max is the most the pod used in the
last 24 hours.

The workloads' history (`workloadHistory`: per workload the most one replica used over the last
day, kept when its pods are gone) is parsed apart: a malformed section leaves it out and keeps
the pods, a malformed workload is left out alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scheduler.backend.profiles_client import ProfilesClient
from scheduler.framework.podusage import (
    NO_POD_USAGE,
    Figures,
    PodFigures,
    PodUsage,
    WorkloadPeak,
)

WINDOW = ("mean", "std", "p90", "p95", "p99", "max")
HISTORY = ("weight", "mean", "std", "p90", "p95", "p99", "max")


def _column(doc: Any, n: int, where: str) -> np.ndarray:
    """One figure for every pod; NaN where a value is missing, negative or not a number (the
    pod is then left out, alone)."""
    if not isinstance(doc, list) or len(doc) != n:
        raise ValueError(f"{where}: expected a list of {n} numbers")
    out = np.array([v if _number(v) else math.nan for v in doc], dtype=np.float64)
    out[out < 0] = math.nan
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _resource(doc: Any, n: int, where: str) -> np.ndarray:
    """pods x (mean, std, p90, p95, p99, max): each the larger of the window's and the
    history's."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected an object")
    win, hist = doc.get("window"), doc.get("history")
    if not isinstance(win, dict) or not isinstance(hist, dict):
        raise ValueError(f"{where}: expected `window` and `history` objects")
    w = np.column_stack([_column(win.get(f), n, f"{where}.window.{f}") for f in WINDOW])
    h = np.column_stack([_column(hist.get(f), n, f"{where}.history.{f}") for f in HISTORY])
    merged = w.copy()
    known = h[:, 0] > 0  # a history of weight 0 says nothing
    merged[known] = np.maximum(w[known], h[known, 1:])
    return merged


def parse_pods(doc: Any) -> PodUsage:
    """The watcher's answer -> PodUsage; a malformed pod is left out, alone; a malformed
    column makes the whole answer malformed (the last good one is kept)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("pods"), list):
        raise ValueError("expected an object with a `pods` list")
    names = doc["pods"]
    n = len(names)
    workloads = doc.get("workloads")
    if not isinstance(workloads, list) or len(workloads) != n:
        workloads = [None] * n
    samples = _column(doc.get("samples"), n, "samples")
    held = _held(doc.get("held"), n)
    cpu = _resource(doc.get("cpu"), n, "cpu")
    memory = _resource(doc.get("memory"), n, "memory")
    good = ~(np.isnan(cpu).any(axis=1) | np.isnan(memory).any(axis=1) | np.isnan(samples))
    out: dict[tuple[str, str], PodFigures] = {}
    cpu_rows, memory_rows, counts = cpu.tolist(), memory.tolist(), samples.tolist()
    for i in np.flatnonzero(good).tolist():
        key = names[i]
        namespace, _, name = key.partition("/") if isinstance(key, str) else ("", "", "")
        if not namespace or not name:
            continue
        workload = workloads[i] if isinstance(workloads[i], str) and workloads[i] else None
        out[(namespace, name)] = PodFigures(
            int(counts[i]), workload, Figures(*cpu_rows[i]), Figures(*memory_rows[i]), held[i]
        )
    built, k = doc.get("built"), doc.get("windowSamples")
    window_samples = int(k) if _number(k) and k > 0 else 0
    history, buckets = parse_history(doc.get("workloadHistory"))
    return PodUsage(out, float(built) if _number(built) else 0.0, window_samples, history, buckets)


def _held(doc: Any, n: int) -> list[int]:
    """Per pod, the buckets holding its maxima; -1 (not said: the pod is judged by its own
    figures alone) for a missing or malformed value, or a watcher that does not serve them."""
    try:
        held = _column(doc, n, "held")
    except ValueError:
        return [-1] * n
    return np.where(np.isnan(held), -1, held).astype(np.int64).tolist()


def parse_history(section: Any) -> tuple[dict[str, WorkloadPeak], int]:
    """`workloadHistory` -> (workload key -> its day of maxima, the buckets a day spans); the
    workloads whose history holds no bucket are left out; nothing for a missing or malformed
    section (PeakFit then keeps the estimator's rules for them)."""
    if not isinstance(section, dict) or not isinstance(section.get("workloads"), list):
        return {}, 0
    keys = section["workloads"]
    n = len(keys)
    try:
        held = _column(section.get("held"), n, "workloadHistory.held")
        columns = [
            _column((section.get(resource) or {}).get(figure), n, f"{resource}.{figure}")
            for resource in ("cpu", "memory")
            for figure in ("max", "bucketMean")
        ]
    except (ValueError, AttributeError):
        return {}, 0
    table = np.column_stack([held, *columns])
    good = ~np.isnan(table).any(axis=1) & (held >= 1)
    latest = _recent(section, n)
    out = {}
    for i in np.flatnonzero(good).tolist():
        if isinstance(keys[i], str) and keys[i]:
            h, cpu_max, cpu_mean, memory_max, memory_mean = table[i].tolist()
            recent = None if latest is None or np.isnan(latest[i]).any() else (
                float(latest[i, 0]), float(latest[i, 1]))  # fmt: skip
            out[keys[i]] = WorkloadPeak(
                int(h), (cpu_max, memory_max), (cpu_mean, memory_mean), recent
            )
    buckets = section.get("buckets")
    return out, int(buckets) if _number(buckets) and buckets > 0 else 0


def _recent(section: dict[str, Any], n: int) -> np.ndarray | None:
    """workloads x 2 (CPU, memory): `recentMax`, NaN where malformed; None when a watcher does
    not serve it (PeakFit's `lookBack: recent` then keeps the day's figures)."""
    try:
        found = [(section.get(r) or {}).get("recentMax") for r in ("cpu", "memory")]
        if any(f is None for f in found):
            return None
        pairs = zip(found, ("cpu", "memory"), strict=True)
        return np.column_stack([_column(f, n, f"{r}.recentMax") for f, r in pairs])
    except (ValueError, AttributeError):
        return None


class PodsClient(ProfilesClient):
    PATH = "/api/v1/pods"
    WHAT = "pod statistics"
    EMPTY = NO_POD_USAGE

    @staticmethod
    def parse(doc: Any) -> Any:
        return parse_pods(doc)

    def pod_usage(self) -> PodUsage:
        doc = self.profiles()
        return doc if isinstance(doc, PodUsage) else NO_POD_USAGE
