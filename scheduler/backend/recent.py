"""Pods bound recently, counted on their node until the watcher's window demonstrably has them.

Metrics lag: a pod bound a second ago uses CPU that no sample shows yet, so a burst of pods
would all see the same idle node. Each bound pod's predicted CPU is added to its node until the
node's newest CPU sample is later than the bind time plus the provider's lag (the time a sample
takes to reach the watcher), or until `max_age` passes whatever the watcher says.

Unlike upstream Trimaran (scheduler-plugins#583), a node whose entries have all expired is
removed too, so the map never grows with dead nodes.

Sums per node are kept incrementally; pruning runs when a new metrics snapshot arrives or at most
once per `prune_interval`, so a scheduling cycle pays a dict lookup, not a scan.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework import CPU, NodeLoad

PROVIDER_LAG = 15.0  # seconds a sample takes to reach the watcher
MAX_AGE = 300.0  # seconds a bound pod counts on its node at most


@dataclass
class _Bound:
    node: str
    cpu_m: int
    bound_at: float  # Unix seconds


class RecentlyBound:
    def __init__(
        self,
        provider_lag: float = PROVIDER_LAG,
        max_age: float = MAX_AGE,
        prune_interval: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.provider_lag = provider_lag
        self.max_age = max_age
        self._prune_interval = prune_interval
        self._clock = clock
        self._by_uid: dict[str, _Bound] = {}
        self._by_node: dict[str, set[str]] = {}
        self._sums: dict[str, int] = {}
        self._lock = threading.Lock()
        self._pruned_for: object = None
        self._pruned_at = 0.0

    def record(self, uid: str, node: str, cpu_m: int, bound_at: float | None = None) -> None:
        with self._lock:
            self._drop(uid)
            entry = _Bound(node, cpu_m, self._clock() if bound_at is None else bound_at)
            self._by_uid[uid] = entry
            self._by_node.setdefault(node, set()).add(uid)
            self._sums[node] = self._sums.get(node, 0) + cpu_m

    def forget(self, uid: str) -> None:
        """The pod went away (deleted, or its bind failed)."""
        with self._lock:
            self._drop(uid)

    def cpu_by_node(self, loads: dict[str, NodeLoad], now: float | None = None) -> dict[str, int]:
        """Predicted CPU millicores per node not yet visible in `loads`. Do not mutate it."""
        now = self._clock() if now is None else now
        with self._lock:
            if loads is not self._pruned_for or now - self._pruned_at >= self._prune_interval:
                self._prune(loads, now)
                self._pruned_for = loads
                self._pruned_at = now
            return dict(self._sums)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_uid)

    def nodes(self) -> set[str]:
        with self._lock:
            return set(self._by_node)

    def _prune(self, loads: dict[str, NodeLoad], now: float) -> None:
        stale = []
        for uid, entry in self._by_uid.items():
            if now - entry.bound_at > self.max_age:
                stale.append(uid)
                continue
            load = loads.get(entry.node)
            stats = load.metrics.get(CPU) if load is not None else None
            if stats is not None and stats.last_sample > entry.bound_at + self.provider_lag:
                stale.append(uid)
        for uid in stale:
            self._drop(uid)

    def _drop(self, uid: str) -> None:
        entry = self._by_uid.pop(uid, None)
        if entry is None:
            return
        uids = self._by_node.get(entry.node)
        if uids is not None:
            uids.discard(uid)
            if not uids:
                del self._by_node[entry.node]
                self._sums.pop(entry.node, None)
                return
        self._sums[entry.node] = self._sums.get(entry.node, 0) - entry.cpu_m
