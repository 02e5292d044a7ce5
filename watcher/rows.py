"""Keyed rows of numpy arrays, a row reused when its key goes, and maxima kept per time bucket: the
storage under the per-pod statistics (watcher/podstats.py) and the workloads' history
(watcher/workloadhistory.py)."""

from __future__ import annotations

import io
import json
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)
HOURS = 24  # buckets of maxima a row keeps (hours by default: the last day)


class KeyedRows(Generic[K]):
    """One row per key in every array named in `ROWS` (first axis), grown by doubling; `last`
    (each row's newest sample) decides which keys go first when more than `max_rows` are kept."""

    ROWS: tuple[str, ...] = ()
    last: np.ndarray

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self.slots: dict[K, int] = {}
        self._free: list[int] = []
        self._alloc(0)

    def _alloc(self, rows: int) -> None:
        """Every array of ROWS with `rows` rows."""
        raise NotImplementedError

    def _reset(self, slot: int) -> None:
        """A new key's row, cleared of the one that had it before."""
        raise NotImplementedError

    def _grow(self, rows: int) -> None:
        old = len(self.last)
        kept = {name: getattr(self, name) for name in self.ROWS}
        self._alloc(rows)
        for name, values in kept.items():
            getattr(self, name)[:old] = values
        self._free.extend(range(rows - 1, old - 1, -1))

    def __len__(self) -> int:
        return len(self.slots)

    def _slot(self, key: K) -> int:
        slot = self.slots.get(key)
        if slot is None:
            if not self._free:
                self._grow(max(64, 2 * len(self.last)))
            slot = self.slots[key] = self._free.pop()
            self._reset(slot)
        return slot

    def _encode(self, names: list[Any], **more: np.ndarray) -> bytes:
        """The rows of the keys in `self.slots` order (`names`: what each key is saved as) and
        `more`, compressed: what a poller taking over reloads."""
        idx = np.array([self.slots[k] for k in self.slots], dtype=np.int64)
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            names=np.frombuffer(json.dumps(names).encode(), dtype=np.uint8),
            **{name: getattr(self, name)[idx] for name in self.ROWS},
            **more,
        )
        return buf.getvalue()

    def _evict(self) -> None:
        if len(self.slots) <= self.max_rows:
            return
        by_age = sorted(self.slots, key=lambda key: self.last[self.slots[key]])
        for key in by_age[: len(self.slots) - self.max_rows]:
            self._free.append(self.slots.pop(key))


def stamp(maxima: np.ndarray, stamps: np.ndarray, idx: np.ndarray, at: float, bucket: float) -> int:
    """Make the slot of `at`'s bucket current in rows `idx` (maxima rows x resources x HOURS,
    stamps rows x HOURS): a slot still holding an older round's bucket (stamped mod 2^16) is
    cleared to -1, no data. Returns the slot."""
    number = int(at // bucket)
    slot = number % HOURS
    stale = stamps[idx, slot] != np.uint16(number % 65536)
    maxima[idx[stale], :, slot] = -1.0
    stamps[idx, slot] = number % 65536
    return slot


def recent(
    stamps: np.ndarray, idx: np.ndarray, now: float, bucket: float, last: int = HOURS
) -> np.ndarray:
    """rows x HOURS: the slots of rows `idx` that hold one of the `last` buckets (`now`'s
    included)."""
    number = int(now // bucket)
    age = (np.uint16(number % 65536) - stamps[idx]).astype(np.uint16)
    return age < last
