"""Workload profiles as the scheduler holds them: per workload revision, what one replica uses
(from the watcher's /api/v1/workloads), read by the estimator (plugins/helpers/estimator.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p95: float
    max: float

    def get(self, statistic: str) -> float:
        return {"p50": self.p50, "p95": self.p95, "max": self.max}[statistic]


@dataclass(frozen=True)
class RevisionProfile:
    samples: int  # per-replica samples in the profile's window
    distinct_pods: int  # replicas seen (counted up to a small cap)
    last: float  # Unix seconds of the newest sample
    cpu_m: Percentiles  # millicores per replica
    memory: Percentiles  # bytes per replica


@dataclass(frozen=True)
class WorkloadProfile:
    kind: str
    revisions: dict[str, RevisionProfile]  # newest first
    current: str = ""


@dataclass(frozen=True)
class WorkloadProfiles:
    """Every workload's profile by `namespace/Kind/name` (shared.workloads), as of `built`."""

    by_key: dict[str, WorkloadProfile] = field(default_factory=dict)
    built: float = 0.0  # the watcher's clock when it built them (0: unknown)
    # Seconds the scheduler has held them since fetching (the profiles client's monotonic
    # clock): `built + held` is the watcher's clock now, without comparing two hosts' clocks.
    held: float = 0.0

    def __len__(self) -> int:
        return len(self.by_key)


NO_PROFILES = WorkloadProfiles()
