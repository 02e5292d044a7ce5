"""Where PeakFit (plugins/peak_fit.py) finds figures for a pod beyond its own: its workload's
measured replicas, averaged, and the watcher's workload history, the most one replica used in
each of the last day's buckets, kept past its pods (docs/peak-model.md, "Where the figures come
from"). A measured pod younger than that look-back has its max raised here to its workload's
day max: its own covers only the hours it lived."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scheduler.framework import PodInfo
from scheduler.framework.podusage import PodFigures, PodUsage, WorkloadPeak
from scheduler.plugins.helpers import estimator

RAISED_BY = "workload history"  # what raises a young pod's max (the sources say it)
# per workload: (measured replicas, their figures averaged, how many of them were raised)
Replicas = tuple[int, PodFigures, int]
_FIELDS = ("mean", "std", "p90", "p95", "p99", "max")


def lift(figures: PodFigures, usage: PodUsage, percentile: str) -> tuple[float, float] | None:
    """How far a measured pod's max (cpu, memory) rises to its workload's day max when the pod's
    maxima fill fewer buckets than the look-back (younger than a day); None when it does not
    rise, when the watcher does not say (`held` -1), and for any `percentile` but max: the
    workload's history keeps maxima, which would overstate a p90-p99."""
    if percentile != "max" or not 0 <= figures.held < usage.history_buckets:
        return None
    peak = usage.history.get(figures.workload) if figures.workload else None
    if peak is None:
        return None
    own = (figures.cpu.max, figures.memory.max)
    up = (max(peak.max[0] - own[0], 0.0), max(peak.max[1] - own[1], 0.0))
    return up if any(up) else None


def replicas(usage: PodUsage, min_samples: int, percentile: str) -> dict[str, Replicas]:
    """Per workload, its measured replicas' figures averaged, each young replica's max raised
    first (`lift`), and how many were; computed once per document."""
    memo_key = (__name__, min_samples, percentile)
    found = usage.memo.get(memo_key)
    if found is None:
        need = usage.enough(min_samples)
        sums: dict[str, list[PodFigures]] = {}
        raised: dict[str, int] = {}
        for figures in usage.by_pod.values():
            if figures.workload and figures.samples >= need:
                up = lift(figures, usage, percentile)
                if up is not None:
                    raised[figures.workload] = raised.get(figures.workload, 0) + 1
                    figures = _raise(figures, up)
                sums.setdefault(figures.workload, []).append(figures)
        found = {w: (len(items), _average(items), raised.get(w, 0)) for w, items in sums.items()}
        usage.memo[memo_key] = found
    return found


def workload_day(
    pod: PodInfo, usage: PodUsage, min_samples: int, percentile: str
) -> WorkloadPeak | None:
    """The pod's workload's day of maxima, when no replica of it is measured."""
    if not usage.history:
        return None
    w = estimator.workload(pod)
    if w is None or w.key in replicas(usage, min_samples, percentile):
        return None
    return usage.history.get(w.key)


def workload_recent(pod: PodInfo, usage: PodUsage) -> WorkloadPeak | None:
    """The pod's workload's history when it says what the last buckets held (`recentMax`):
    PeakFit's `lookBack: recent`, for measured pods and new ones alike."""
    w = estimator.workload(pod)
    peak = usage.history.get(w.key) if w is not None else None
    return peak if peak is not None and peak.recent is not None else None


def _raise(figures: PodFigures, up: tuple[float, float]) -> PodFigures:
    """`figures` with each resource's max raised by `up`."""
    return replace(
        figures,
        cpu=replace(figures.cpu, max=figures.cpu.max + up[0]),
        memory=replace(figures.memory, max=figures.memory.max + up[1]),
    )


def _average(items: list[PodFigures]) -> PodFigures:
    """The replicas' figures averaged field by field: what one more replica is expected to do."""
    n = len(items)

    def mean_of(which: str) -> Any:
        values = [getattr(f, which) for f in items]
        first = values[0]
        return type(first)(**{k: sum(getattr(v, k) for v in values) / n for k in _FIELDS})

    return PodFigures(
        min(f.samples for f in items), items[0].workload, mean_of("cpu"), mean_of("memory")
    )
