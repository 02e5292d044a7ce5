"""Per-pod usage statistics as the scheduler holds them (from the watcher's /api/v1/pods), read
by the peak model (plugins/peak_fit.py)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

_SERIALS = itertools.count(1)

PERCENTILES = ("p90", "p95", "p99", "max")


@dataclass(frozen=True)
class Figures:
    """One resource of one pod: the larger of the window's and the history's figure each
    (backend/pods_client.py says why); CPU in millicores, memory in bytes."""

    mean: float
    std: float
    p90: float
    p95: float
    p99: float
    max: float

    def get(self, percentile: str) -> float:
        return getattr(self, percentile)


@dataclass(frozen=True)
class PodFigures:
    samples: int  # in the node window
    workload: str | None  # `namespace/Kind/name` (shared.workloads), None for a bare pod
    cpu: Figures
    memory: Figures
    # buckets of the day's look-back holding the pod's maxima (fewer: younger than the
    # look-back, its `max` covers only what it lived); -1: not said (a watcher before it)
    held: int = -1


@dataclass(frozen=True)
class WorkloadPeak:
    """One workload's history as the watcher keeps it past its pods (`workloadHistory`): the
    most one replica used over the last day of peak buckets, and the mean of the held buckets'
    maxima; (CPU millicores, memory bytes) each."""

    held: int  # buckets holding data, of `PodUsage.history_buckets`
    max: tuple[float, float]
    bucket_mean: tuple[float, float]
    # the most one replica used in the last few buckets (`recentMax`, the watcher's
    # RECENT_BUCKETS); None from a watcher that does not serve it
    recent: tuple[float, float] | None = None


@dataclass(frozen=True)
class PodUsage:
    """Every measured pod by (namespace, name), as of `built` (the watcher's clock)."""

    by_pod: dict[tuple[str, str], PodFigures] = field(default_factory=dict)
    built: float = 0.0
    # samples the watcher's window holds per pod (its `windowSamples`; 0: not said): a pod
    # with a full window counts as measured even when that is fewer than a plugin's minimum
    window_samples: int = 0
    # per workload key, its day of per-replica maxima (held > 0 only), and the buckets it spans
    history: dict[str, WorkloadPeak] = field(default_factory=dict)
    history_buckets: int = 0
    # unique per document, for caches keyed by it (an id() can come back after a free)
    serial: int = field(default_factory=lambda: next(_SERIALS), compare=False)
    # per-document results a plugin derives once (the replicas' figures per workload)
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.by_pod)

    def enough(self, min_samples: int) -> int:
        """The samples a pod needs to count as measured: `min_samples`, or a full window when
        the watcher's window holds fewer (a short window, or a replay in trace time polling
        less often per window: 5 samples at 60x)."""
        if self.window_samples > 0:
            return max(1, min(min_samples, self.window_samples))
        return min_samples


NO_POD_USAGE = PodUsage()
