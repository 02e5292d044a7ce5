"""Each node's most used CPU and memory over the last 72 buckets (hours by default:
peak_bucket_seconds), for the scheduler's peak model (docs/peak-model.md): the node term of the
offline study's best predictor.

Per node and metric, the maximum of each bucket, in 72 slots (slot = bucket % 72) stamped with
the bucket they hold, so an older slot is told apart without a sweep: 72 x (4 + 2) bytes per
node and metric. Fed every frame the poller adds; a poller taking over starts it again from
the frames it reloads (the store keeps only the window's), so for 72 buckets after a takeover
the figure is the max since then: lower, never wrong in the other direction than the window's
own max.
"""

from __future__ import annotations

import numpy as np

from watcher.defaults import PEAK_BUCKET_SECONDS
from watcher.window import Frame

HOURS = 72  # buckets: three days of hours by default
KEYS = ("cpu", "memory")


class NodePeaks:
    def __init__(self, bucket: float = PEAK_BUCKET_SECONDS) -> None:
        self.bucket = bucket  # seconds per slot
        self.rows: dict[str, int] = {}
        self.hourly = np.full((0, len(KEYS), HOURS), -1.0, dtype=np.float32)
        self.hour_of = np.zeros((0, HOURS), dtype=np.uint16)

    def _index(self, nodes: tuple[str, ...]) -> np.ndarray:
        for node in nodes:
            if node not in self.rows:
                self.rows[node] = len(self.rows)
        grow = len(self.rows) - len(self.hourly)
        if grow > 0:
            more = max(grow, len(self.hourly))
            self.hourly = np.concatenate(
                [self.hourly, np.full((more, len(KEYS), HOURS), -1.0, dtype=np.float32)]
            )
            self.hour_of = np.concatenate([self.hour_of, np.zeros((more, HOURS), np.uint16)])
        return np.fromiter((self.rows[n] for n in nodes), dtype=np.int64, count=len(nodes))

    def add(self, frame: Frame) -> None:
        if not frame.nodes:
            return
        idx = self._index(frame.nodes)
        hour = int(frame.time // self.bucket)
        slot = hour % HOURS
        stamp = np.uint16(hour % 65536)
        stale = self.hour_of[idx, slot] != stamp
        self.hourly[idx[stale], :, slot] = -1.0
        self.hour_of[idx, slot] = stamp
        for k, key in enumerate(KEYS):
            values = frame.values.get(key)
            if values is None:
                continue
            seen = ~np.isnan(values)
            rows = idx[seen]
            self.hourly[rows, k, slot] = np.maximum(self.hourly[rows, k, slot], values[seen])

    def peaks(self, key: str, nodes: list[str], now: float) -> np.ndarray:
        """The most each node used of `key` ("cpu", "memory") over the last 72 buckets, in the
        frames' unit (percent); NaN for a node or metric never seen."""
        out = np.full(len(nodes), np.nan)
        if key not in KEYS:
            return out
        k = KEYS.index(key)
        known = [i for i, n in enumerate(nodes) if n in self.rows]
        if not known:
            return out
        idx = np.array([self.rows[nodes[i]] for i in known], dtype=np.int64)
        age = (np.uint16(int(now // self.bucket) % 65536) - self.hour_of[idx]).astype(np.uint16)
        best = np.where(age < HOURS, self.hourly[idx, k, :], -1.0).max(axis=1)
        out[known] = np.where(best >= 0, best, np.nan)
        return out
