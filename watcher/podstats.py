"""Per-pod usage statistics for the scheduler's peak model (docs/peak-model.md): what each pod used,
as moments and percentiles, over the node window and over a longer, decaying history.

Per pod and resource (CPU millicores, memory bytes):
- the window: the last `k = ceil(window / poll_interval)` samples (20 at 5 minutes and 15 s,
  at most 64), exact: mean, standard deviation, p90, p95, p99 and max;
- the history: exponentially decayed sums (weight, sum, sum of squares) and a histogram of 48
  log-spaced buckets (three per octave: a bucket is 26 % wide, a percentile read from it is
  within about 13 % of the sample's), every sample's weight halving every `half_life` seconds:
  mean, standard deviation, p90, p95, p99 of about the last `half_life` x 2 seconds; and the
  most the pod used in the last 24 buckets of `bucket` seconds (peak_bucket_seconds: an hour,
  so the last day, by default), from its maximum per bucket, and how many of those buckets
  hold data (`held`: fewer than 24 for a pod younger than the look-back).

Everything lives in numpy arrays with one row per pod, so a poll of 50,000 pods is a handful of
array operations, and memory is a fixed number of bytes per pod (docs/peak-model.md states it). A
pod not sampled for `window` seconds is gone (deleted, or moved off the metrics source) and its row
is reused; at most `max_pods` rows are kept, the least recently sampled dropped first.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import numpy as np

from watcher.defaults import PEAK_BUCKET_SECONDS
from watcher.rows import HOURS, KeyedRows, recent, stamp

PodKey = tuple[str, str]  # (namespace, pod)
RESOURCES = ("cpu", "memory")
BASES = (1.0, float(2**20))  # a millicore, a mebibyte: the first bucket's upper edge
PER_OCTAVE = 3
BUCKETS = 48  # 16 octaves: 1m..65 cores, 1 MiB..64 GiB (the last bucket is open)
QUANTILES = (0.90, 0.95, 0.99)
MAX_WINDOW_SAMPLES = 64
WINDOW_FIELDS = ("samples", "mean", "std", "p90", "p95", "p99", "max")
HISTORY_FIELDS = ("weight", "mean", "std", "p90", "p95", "p99", "max")
DIGITS = (1, 0)  # CPU to a tenth of a millicore, memory to a byte
COLUMNS = ("pods", "workloads", "last", "samples", "held", *RESOURCES)  # per-pod parts of the doc
# The history's max: the most a pod used in each of the last HOURS (24) buckets (hours by
# default). The arrays keep their names `hourly` and `hour_of` for the default bucket.
ROWS = ("ring", "count", "head", "last", "hist", "sums", "extremes", "hourly", "hour_of")


def bucket_of(values: np.ndarray, base: float) -> np.ndarray:
    """Bucket index per value: 0 below `base`, then three per octave, the last one open."""
    scaled = np.maximum(values / base, 1e-12)
    idx = np.floor(np.log2(scaled) * PER_OCTAVE).astype(np.int64) + 1
    return np.clip(idx, 0, BUCKETS - 1)


def bucket_edges(base: float) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) edge of every bucket; the last bucket's upper edge is one step on."""
    j = np.arange(BUCKETS, dtype=np.float64)
    upper = base * 2.0 ** (j / PER_OCTAVE)
    lower = np.where(j == 0, 0.0, base * 2.0 ** ((j - 1) / PER_OCTAVE))
    return lower, upper


def hist_quantiles(hist: np.ndarray, base: float, qs: tuple[float, ...]) -> np.ndarray:
    """Quantiles of many histograms (rows x BUCKETS, decayed weights) -> rows x len(qs), read
    geometrically inside the bucket (linearly in the first, which starts at 0); 0 for an empty
    row."""
    lower, upper = bucket_edges(base)
    cum = np.cumsum(hist, axis=1, dtype=np.float64)
    total = cum[:, -1]
    out = np.zeros((hist.shape[0], len(qs)))
    rows = np.arange(hist.shape[0])
    for col, q in enumerate(qs):
        target = q * total
        b = np.minimum((cum < target[:, None]).sum(axis=1), BUCKETS - 1)
        before = np.where(b > 0, cum[rows, np.maximum(b - 1, 0)], 0.0)
        inside = hist[rows, b].astype(np.float64)
        frac = np.clip(
            np.where(inside > 0, (target - before) / np.maximum(inside, 1e-300), 0), 0, 1
        )
        lo, hi = lower[b], upper[b]
        geometric = lo * (hi / np.maximum(lo, 1e-300)) ** frac
        out[:, col] = np.where(b == 0, hi * frac, geometric)
    out[total <= 0] = 0.0
    return out


def window_stats(ring: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Rows x k samples (the first `count` of each row filled, in any order) -> rows x
    WINDOW_FIELDS; quantiles linear between order statistics, as numpy's default."""
    n, k = ring.shape
    filled = np.arange(k)[None, :] < count[:, None]
    values = np.where(filled, ring, np.nan).astype(np.float64)
    ordered = np.sort(values, axis=1)  # NaN last
    safe = np.maximum(count, 1)
    mean = np.where(filled, values, 0.0).sum(axis=1) / safe
    var = np.where(filled, (values - mean[:, None]) ** 2, 0.0).sum(axis=1) / safe
    out = np.zeros((n, len(WINDOW_FIELDS)))
    out[:, 0], out[:, 1], out[:, 2] = count, mean, np.sqrt(var)
    rows = np.arange(n)
    last = np.maximum(count - 1, 0)
    for col, q in enumerate(QUANTILES, start=3):
        pos = last * q
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, last)
        low, high = ordered[rows, lo], ordered[rows, hi]
        out[:, col] = low + (high - low) * (pos - lo)
    out[:, 6] = ordered[rows, last]
    out[count == 0, 1:] = 0.0
    return out


class PodStats(KeyedRows[PodKey]):
    """Every pod's rows; fed once per poll by the pod poller."""

    ROWS = ROWS

    def __init__(
        self,
        window: float,
        poll_interval: float,
        half_life: float,
        max_pods: int = 200_000,
        bucket: float = PEAK_BUCKET_SECONDS,
    ) -> None:
        self.window = window
        self.half_life = max(half_life, 1.0)
        self.bucket = bucket  # seconds per slot of the maxima
        self.k = max(2, min(MAX_WINDOW_SAMPLES, math.ceil(window / max(poll_interval, 0.001))))
        self.workloads: list[str | None] = []
        super().__init__(max_pods)

    @property
    def max_pods(self) -> int:
        return self.max_rows

    def _alloc(self, rows: int) -> None:
        r = len(RESOURCES)
        self.ring = np.zeros((rows, r, self.k), dtype=np.float32)
        self.count = np.zeros(rows, dtype=np.int16)
        self.head = np.zeros(rows, dtype=np.int16)
        self.last = np.zeros(rows, dtype=np.float64)
        self.hist = np.zeros((rows, r, BUCKETS), dtype=np.float32)
        self.sums = np.zeros((rows, r, 3), dtype=np.float64)  # weight, sum, sum of squares
        # The least and the most a pod ever used: a percentile read from a bucket is clamped
        # to them, so a steady pod reads exactly its use, not its bucket's middle.
        self.extremes = np.zeros((rows, r, 2), dtype=np.float32)
        # The most used in each bucket, slot = bucket % HOURS, stamped with the bucket (mod 2^16)
        # it holds, so a slot from an older round is told apart without clearing it.
        self.hourly = np.zeros((rows, r, HOURS), dtype=np.float32)
        self.hour_of = np.zeros((rows, HOURS), dtype=np.uint16)
        self.workloads = [None] * rows

    def _grow(self, rows: int) -> None:
        workloads = self.workloads
        super()._grow(rows)
        self.workloads[: len(workloads)] = workloads

    def _reset(self, slot: int) -> None:
        self.count[slot] = self.head[slot] = 0
        self.hist[slot] = 0.0
        self.sums[slot] = 0.0
        self.extremes[slot, :, 0] = np.inf
        self.extremes[slot, :, 1] = -np.inf
        self.hour_of[slot] = 0
        self.hourly[slot] = -1.0  # no hour yet (use is never negative)

    def add(
        self,
        at: float,
        usage: dict[PodKey, tuple[float, float]],
        workloads: dict[PodKey, str] | None = None,
    ) -> None:
        """One poll's samples (CPU millicores, memory bytes per pod); `workloads`: the pods'
        workload keys (shared.workloads), for the scheduler's correlated replicas."""
        if not usage:
            return
        keys = list(usage)
        idx = np.fromiter((self._slot(k) for k in keys), dtype=np.int64, count=len(keys))
        for key, slot in zip(keys, idx.tolist(), strict=True):
            self.workloads[slot] = (workloads or {}).get(key)
        values = np.array([usage[k] for k in keys], dtype=np.float64)  # n x 2
        head = self.head[idx].astype(np.int64)
        for r in range(len(RESOURCES)):
            self.ring[idx, r, head] = values[:, r]
        self.head[idx] = (head + 1) % self.k
        self.count[idx] = np.minimum(self.count[idx] + 1, self.k)
        # Decay each row to this sample: only ratios of the sums are read, so a row not
        # sampled for a while needs no decay until its next sample.
        seen = self.count[idx] > 1
        factor = np.where(seen, 2.0 ** (-(at - self.last[idx]) / self.half_life), 0.0)
        factor = np.clip(factor, 0.0, 1.0)
        self.hist[idx] *= factor[:, None, None].astype(np.float32)
        self.sums[idx] *= factor[:, None, None]
        for r, base in enumerate(BASES):
            np.add.at(self.hist, (idx, r, bucket_of(values[:, r], base)), 1.0)
            self.sums[idx, r, 0] += 1.0
            self.sums[idx, r, 1] += values[:, r]
            self.sums[idx, r, 2] += values[:, r] ** 2
            self.extremes[idx, r, 0] = np.minimum(self.extremes[idx, r, 0], values[:, r])
            self.extremes[idx, r, 1] = np.maximum(self.extremes[idx, r, 1], values[:, r])
        slot = stamp(self.hourly, self.hour_of, idx, at, self.bucket)
        self.hourly[idx, :, slot] = np.maximum(self.hourly[idx, :, slot], values)
        self.last[idx] = at
        self._evict()

    def trim(self, now: float) -> None:
        """Forget pods not sampled for a window: gone, or no longer measured."""
        cutoff = now - self.window
        for key in [k for k, s in self.slots.items() if self.last[s] < cutoff]:
            slot = self.slots.pop(key)
            self.workloads[slot] = None
            self._free.append(slot)

    def doc(self, now: float) -> dict[str, Any]:
        """The statistics as /api/v1/pods serves them (docs/api.md): column by column, one
        list per figure aligned with `pods`, so 50,000 pods serialise in one pass over a few
        dozen flat lists rather than 50,000 small objects."""
        keys = list(self.slots)
        idx = np.array([self.slots[k] for k in keys], dtype=np.int64)
        count = self.count[idx].astype(np.int64)
        out: dict[str, Any] = {
            "built": round(now, 3),
            "window": self.window,
            "windowSamples": self.k,
            "halfLife": self.half_life,
            "peakBucket": self.bucket,
            "pods": [f"{namespace}/{name}" for namespace, name in keys],
            "workloads": [self.workloads[s] for s in idx.tolist()],
            "last": self.last[idx].round(3).tolist(),
            "samples": count.tolist(),
            # how much of the day the pod's `max` covers: the scheduler judges a pod younger
            # than the look-back by its workload's day too (docs/peak-model.md)
            "held": self._held(idx, now).sum(axis=1).tolist(),
        }
        for r, (resource, base) in enumerate(zip(RESOURCES, BASES, strict=True)):
            win = window_stats(self.ring[idx, r, :], count)
            sums = self.sums[idx, r, :]
            w = np.maximum(sums[:, 0], 1e-300)
            mean = sums[:, 1] / w
            std = np.sqrt(np.maximum(sums[:, 2] / w - mean**2, 0.0))
            weight = sums[:, 0] * 2.0 ** (-(now - self.last[idx]) / self.half_life)
            low, high = self.extremes[idx, r, 0:1], self.extremes[idx, r, 1:2]
            qs = np.clip(hist_quantiles(self.hist[idx, r, :], base, QUANTILES), low, high)
            hist = np.column_stack([weight, mean, std, qs, self._day_max(idx, r, now)])
            digits = DIGITS[r]
            out[resource] = {
                "window": {f: column(win[:, j], digits) for j, f in enumerate(WINDOW_FIELDS) if j},
                "history": {
                    f: column(hist[:, j], 2 if j == 0 else digits)
                    for j, f in enumerate(HISTORY_FIELDS)
                },
            }
        return out

    def _held(self, idx: np.ndarray, now: float) -> np.ndarray:
        """rows x HOURS: the slots holding the pod's maxima of one of the last HOURS buckets."""
        return recent(self.hour_of, idx, now, self.bucket) & (self.hourly[idx, 0, :] >= 0)

    def _day_max(self, idx: np.ndarray, r: int, now: float) -> np.ndarray:
        """The most each pod used over the last HOURS buckets (0 for none)."""
        held = recent(self.hour_of, idx, now, self.bucket)
        return np.where(held, self.hourly[idx, r, :], -1.0).max(axis=1).clip(min=0.0)

    def encode(self) -> bytes:
        """Every live row, for the store: a poller taking over reloads them."""
        names = [[ns, pod, self.workloads[slot]] for (ns, pod), slot in self.slots.items()]
        return self._encode(names, bucket=np.array([self.bucket]))

    def load(self, blob: bytes) -> None:
        """Rows from `encode`; a blob of another shape (another version, another window) is
        ignored and the rows refill. Maxima kept per bucket of another length (the setting
        changed) are dropped and refill: their slots count other spans of time."""
        try:
            with np.load(io.BytesIO(blob)) as z:
                names = json.loads(z["names"].tobytes())
                parts = {k: z[k] for k in ROWS}
                # A blob from before the setting was kept hours.
                bucket = float(z["bucket"][0]) if "bucket" in z.files else 3600.0
        except (ValueError, KeyError, IndexError, OSError):
            return
        if parts["ring"].shape[1:] != (len(RESOURCES), self.k) or len(names) != len(parts["last"]):
            return
        if parts["hist"].shape[1:] != (len(RESOURCES), BUCKETS):
            return
        if bucket != self.bucket:
            del parts["hourly"], parts["hour_of"]  # as _slot leaves them: no bucket yet
        for i, (namespace, pod, workload) in enumerate(names):
            slot = self._slot((namespace, pod))
            for name, values in parts.items():
                getattr(self, name)[slot] = values[i]
            self.workloads[slot] = workload


def in_namespace(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    """`doc` (as `PodStats.doc` builds it) with only the pods of `namespace`."""
    keep = [i for i, key in enumerate(doc["pods"]) if key.partition("/")[0] == namespace]

    def pick(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: pick(v) for k, v in value.items()}
        return [value[i] for i in keep]

    out = {k: v for k, v in doc.items() if k not in COLUMNS}
    out.update({k: pick(doc[k]) for k in COLUMNS if k in doc})
    return out


def column(values: np.ndarray, digits: int) -> list[float] | list[int]:
    """Rounded, as integers when to the unit (they serialise faster and shorter)."""
    if digits <= 0:
        return np.rint(values).astype(np.int64).tolist()
    return values.round(digits).tolist()
