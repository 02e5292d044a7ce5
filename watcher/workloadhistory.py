"""Per workload, the most one replica used in each of the last 24 peak buckets: a history that
outlives the pods (docs/peak-model.md).

A pod's own history (watcher/podstats.py) starts again when the pod is replaced (a rollout, an
eviction, a new replica); the workload's does not. Every poll, each workload key
(shared.workloads) gets the largest CPU and memory sample of its replicas, kept per bucket of
`bucket` seconds (peak_bucket_seconds: an hour by default) in 24 slots stamped with their bucket,
as podstats keeps a pod's: the slot's figure is the max over the replicas' per-bucket maxima. A
workload stays while its day holds data, whether or not any pod of it runs; at most
`max_workloads` are kept, the least recently seen dropped first.

The scheduler's PeakFit reads it for a pod without history of its own whose workload has no
measured replica running: the most one replica of that workload used over the last day.
Memory: 248 bytes of arrays per workload (24 slots x 2 resources x 4 B, 24 stamps x 2 B, the
last-seen time), 411 with the rows' spare capacity and the index (docs/peak-model.md).
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

from watcher.defaults import PEAK_BUCKET_SECONDS
from watcher.podstats import DIGITS, RESOURCES, PodKey, column
from watcher.rows import HOURS, KeyedRows, recent, stamp

ROWS = ("maxima", "stamps", "last")
# `recentMax`: the most one replica used in the current bucket and the two before it (2 to 3
# hours by default): PeakFit's `lookBack: recent`. The offline study of issue 45
# (bench/placement/online.py, docs/peak-model.md) found a workload's last 3 buckets the best
# predictor of its next hours on the trace, better than its day (2 or 4 buckets did worse).
RECENT_BUCKETS = 3


class WorkloadHistory(KeyedRows[str]):
    """Every workload's per-bucket maxima; fed once per poll by the pod poller."""

    ROWS = ROWS

    def __init__(self, bucket: float = PEAK_BUCKET_SECONDS, max_workloads: int = 100_000) -> None:
        self.bucket = bucket
        super().__init__(max_workloads)

    def _alloc(self, rows: int) -> None:
        # The most one replica used per bucket, slot = bucket % HOURS, stamped with the bucket
        # (mod 2^16) it holds: a slot from an older round is told apart without clearing it.
        self.maxima = np.full((rows, len(RESOURCES), HOURS), -1.0, dtype=np.float32)
        self.stamps = np.zeros((rows, HOURS), dtype=np.uint16)
        self.last = np.zeros(rows, dtype=np.float64)

    def _reset(self, slot: int) -> None:
        self.maxima[slot] = -1.0  # no bucket yet (use is never negative)
        self.stamps[slot] = 0
        self.last[slot] = 0.0

    def add(
        self, at: float, usage: dict[PodKey, tuple[float, float]], workloads: dict[PodKey, str]
    ) -> None:
        """One poll's samples (CPU millicores, memory bytes per pod) and the pods' workload
        keys; pods without one (bare pods) are left out."""
        pods = [pod for pod in workloads if pod in usage]
        if not pods:
            return
        slot_of = {key: self._slot(key) for key in dict.fromkeys(workloads[p] for p in pods)}
        per_pod = np.fromiter(
            (slot_of[workloads[p]] for p in pods), dtype=np.int64, count=len(pods)
        )
        values = np.array([usage[p] for p in pods], dtype=np.float32)  # pods x 2
        idx = np.fromiter(slot_of.values(), dtype=np.int64, count=len(slot_of))
        slot = stamp(self.maxima, self.stamps, idx, at, self.bucket)
        for r in range(len(RESOURCES)):  # a view: updated in place, pod by pod
            np.maximum.at(self.maxima[:, r, slot], per_pod, values[:, r])
        self.last[idx] = np.maximum(self.last[idx], at)
        self._evict()

    def trim(self, now: float) -> None:
        """Forget workloads whose day holds nothing any more."""
        cutoff = (int(now // self.bucket) - HOURS + 1) * self.bucket
        for key in [k for k, s in self.slots.items() if self.last[s] < cutoff]:
            self._free.append(self.slots.pop(key))

    def _held(self, idx: np.ndarray, now: float) -> np.ndarray:
        """rows x HOURS: the slots holding data of one of the last HOURS buckets."""
        return recent(self.stamps, idx, now, self.bucket) & (self.maxima[idx, 0, :] >= 0)

    def doc(self, now: float) -> dict[str, Any]:
        """The `workloadHistory` section of /api/v1/pods (docs/peak-model.md), column by
        column: per workload the most one replica used over the last HOURS buckets (`max`)
        and over the last RECENT_BUCKETS (`recentMax`, 0 when they hold nothing), the mean of
        the held buckets' maxima (`bucketMean`) and how many buckets hold data."""
        keys = list(self.slots)
        idx = np.array([self.slots[k] for k in keys], dtype=np.int64)
        held = self._held(idx, now)
        fresh = held & recent(self.stamps, idx, now, self.bucket, RECENT_BUCKETS)
        count = held.sum(axis=1)
        out: dict[str, Any] = {
            "peakBucket": self.bucket,
            "buckets": HOURS,
            "recentBuckets": RECENT_BUCKETS,
            "workloads": keys,
            "held": count.tolist(),
            "last": self.last[idx].round(3).tolist(),
        }
        for r, resource in enumerate(RESOURCES):
            values = np.where(held, self.maxima[idx, r, :], 0.0).astype(np.float64)
            top = values.max(axis=1, initial=0.0)
            latest = np.where(fresh, values, 0.0).max(axis=1, initial=0.0)
            mean = values.sum(axis=1) / np.maximum(count, 1)
            out[resource] = {"max": column(top, DIGITS[r]), "recentMax": column(latest, DIGITS[r]),
                             "bucketMean": column(mean, DIGITS[r])}  # fmt: skip
        return out

    def encode(self) -> bytes:
        """Every workload's rows, for the store: a poller taking over reloads them."""
        return self._encode(list(self.slots), bucket=np.array([self.bucket]))

    def load(self, blob: bytes) -> None:
        """Rows from `encode`; a blob of another shape or another bucket length (its slots count
        other spans of time) is ignored and the history refills."""
        try:
            with np.load(io.BytesIO(blob)) as z:
                names = json.loads(z["names"].tobytes())
                parts = {k: z[k] for k in ROWS}
                bucket = float(z["bucket"][0])
        except (ValueError, KeyError, IndexError, OSError, TypeError):
            return
        if bucket != self.bucket or not isinstance(names, list):
            return
        n = len(names)
        shapes = {"maxima": (n, len(RESOURCES), HOURS), "stamps": (n, HOURS), "last": (n,)}
        if any(parts[k].shape != shape for k, shape in shapes.items()):
            return
        for i, key in enumerate(names):
            if not isinstance(key, str):
                continue
            slot = self._slot(key)
            for name, values in parts.items():
                getattr(self, name)[slot] = values[i]
        self._evict()


def in_namespace(section: dict[str, Any], namespace: str) -> dict[str, Any]:
    """`section` (as `WorkloadHistory.doc` builds it) with only the workloads of `namespace`."""
    keep = [i for i, key in enumerate(section["workloads"]) if key.split("/", 1)[0] == namespace]

    def pick(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: pick(v) for k, v in value.items()}
        return [value[i] for i in keep] if isinstance(value, list) else value

    return {k: pick(v) for k, v in section.items()}
