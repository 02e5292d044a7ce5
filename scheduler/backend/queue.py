"""The scheduling queue: pending pods by priority then age, with per-pod backoff.

Three rooms, as in kube-scheduler's backend/queue:
- active: ready to schedule now, a heap ordered by (-priority, creation time);
- backoff: failed recently, waiting out an exponential delay before returning to active;
- unschedulable: no node fitted; they wait for a cluster change (a node added or updated, a pod
  deleted) or for the periodic flush, then go through backoff again.

A pod is known by uid. `add` of a pod already queued refreshes its data (spec edits, priority)
but keeps its attempt count. `pop` blocks up to a timeout, so the caller can watch for shutdown.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework import PodInfo

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
IN_FLIGHT = "in_flight"


@dataclass
class _Entry:
    pod: PodInfo
    attempts: int = 0
    room: str = ACTIVE
    ready_at: float = 0.0  # when backoff ends (monotonic seconds)
    parked_at: float = 0.0  # when it entered the unschedulable room
    moved: bool = False  # a cluster change happened while it was being scheduled


class SchedulingQueue:
    def __init__(
        self,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_flush: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._initial = initial_backoff
        self._max = max_backoff
        self._flush = unschedulable_flush
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._active: list[tuple[int, float, int, str]] = []  # (-priority, created, seq, uid)
        self._backoff: list[tuple[float, int, str]] = []  # (ready_at, seq, uid)
        self._parked: set[str] = set()  # uids in the unschedulable room
        self._in_flight: set[str] = set()  # popped and not yet settled
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False

    # --- feeding -------------------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """A pending pod seen (or seen again) by the cache."""
        with self._cond:
            entry = self._entries.get(pod.uid)
            if entry is None:
                self._entries[pod.uid] = entry = _Entry(pod)
                self._push_active(entry)
                self._cond.notify()
                return
            priority_changed = entry.pod.priority != pod.priority
            entry.pod = pod
            if entry.room == ACTIVE and priority_changed:
                self._push_active(entry)  # the stale heap item is skipped when popped
            elif entry.room == UNSCHEDULABLE:
                # An edited pod may fit now (kube-scheduler does the same on pod update).
                self._to_backoff_or_active(entry)
                self._cond.notify()

    def remove(self, uid: str) -> None:
        """The pod was bound or deleted; forget it entirely."""
        with self._cond:
            self._entries.pop(uid, None)
            self._settle(uid)

    def done(self, uid: str) -> None:
        """The pod was scheduled (assumed and handed to the binder)."""
        self.remove(uid)

    def requeue_backoff(self, pod: PodInfo) -> None:
        """An error that may be transient (a failed bind): retry after backoff."""
        with self._cond:
            entry = self._entries.get(pod.uid)
            if entry is None:
                self._entries[pod.uid] = entry = _Entry(pod)
            entry.pod = pod
            entry.attempts += 1
            self._to_backoff(entry)
            self._cond.notify()

    def unschedulable(self, pod: PodInfo) -> None:
        """No node fits: park it until the cluster changes (or the periodic flush)."""
        with self._cond:
            entry = self._entries.get(pod.uid)
            if entry is None:
                return  # deleted or bound while we were scheduling it
            entry.attempts += 1
            if entry.moved:
                # The cluster changed during the attempt: the verdict may be outdated already.
                self._to_backoff(entry)
                self._cond.notify()
            else:
                entry.room = UNSCHEDULABLE
                entry.parked_at = self._clock()
                entry.ready_at = entry.parked_at + self.backoff_for(entry.attempts)
                self._in_flight.discard(pod.uid)
                self._parked.add(pod.uid)

    def cluster_changed(self) -> None:
        """A node was added or updated, or a pod went away: parked pods may fit now."""
        with self._cond:
            for uid in list(self._parked):
                self._to_backoff_or_active(self._entries[uid])
            for uid in self._in_flight:
                self._entries[uid].moved = True
            self._cond.notify_all()

    # --- draining -------------------------------------------------------------------------
    def pop(self, timeout: float | None = None) -> PodInfo | None:
        """The next pod to schedule, or None after `timeout` seconds or on close."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while not self._closed:
                now = self._clock()
                self._promote(now)
                while self._active:
                    _, _, _, uid = heapq.heappop(self._active)
                    entry = self._entries.get(uid)
                    if entry is None or entry.room != ACTIVE:
                        continue
                    entry.room = IN_FLIGHT
                    entry.moved = False
                    self._in_flight.add(uid)
                    return entry.pod
                wait = self._next_wakeup(now)
                if deadline is not None:
                    left = deadline - now
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)
        return None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # --- inspection ---------------------------------------------------------------------
    def depth(self) -> dict[str, int]:
        """Pods per room, for /metrics."""
        counts = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, IN_FLIGHT: 0}
        with self._cond:
            for entry in self._entries.values():
                counts[entry.room] += 1
        return counts

    def __len__(self) -> int:
        with self._cond:
            return len(self._entries)

    def has_active(self) -> bool:
        """Whether pods wait to be popped; lock-free and approximate (a removed pod may still
        be counted until popped): it only decides whether event writes wait."""
        return bool(self._active)

    def __contains__(self, uid: object) -> bool:
        with self._cond:
            return uid in self._entries

    def attempts(self, uid: str) -> int:
        with self._cond:
            entry = self._entries.get(uid)
            return entry.attempts if entry else 0

    # --- internals (caller holds the lock) -----------------------------------------------
    def backoff_for(self, attempts: int) -> float:
        """Exponential: initial, 2x initial, ... capped at max."""
        if attempts <= 0:
            return 0.0
        return min(self._initial * (2 ** min(attempts - 1, 30)), self._max)

    def _settle(self, uid: str) -> None:
        self._parked.discard(uid)
        self._in_flight.discard(uid)

    def _push_active(self, entry: _Entry) -> None:
        self._settle(entry.pod.uid)
        entry.room = ACTIVE
        pod = entry.pod
        heapq.heappush(self._active, (-pod.priority, pod.created, next(self._seq), pod.uid))

    def _to_backoff(self, entry: _Entry) -> None:
        self._settle(entry.pod.uid)
        entry.room = BACKOFF
        entry.ready_at = self._clock() + self.backoff_for(entry.attempts)
        heapq.heappush(self._backoff, (entry.ready_at, next(self._seq), entry.pod.uid))

    def _to_backoff_or_active(self, entry: _Entry) -> None:
        if self._clock() >= entry.ready_at:
            self._push_active(entry)
        else:
            self._settle(entry.pod.uid)
            entry.room = BACKOFF
            heapq.heappush(self._backoff, (entry.ready_at, next(self._seq), entry.pod.uid))

    def _promote(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, _, uid = heapq.heappop(self._backoff)
            entry = self._entries.get(uid)
            if entry is not None and entry.room == BACKOFF and entry.ready_at <= now:
                self._push_active(entry)
        if self._flush > 0 and self._parked:
            for uid in list(self._parked):
                entry = self._entries[uid]
                if now - entry.parked_at >= self._flush:
                    self._push_active(entry)

    def _next_wakeup(self, now: float) -> float | None:
        waits = []
        if self._backoff:
            waits.append(max(self._backoff[0][0] - now, 0.0))
        if self._flush > 0 and self._parked:
            oldest = min(self._entries[uid].parked_at for uid in self._parked)
            waits.append(max(oldest + self._flush - now, 0.0))
        return min(waits) if waits else None
