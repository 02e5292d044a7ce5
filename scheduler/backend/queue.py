"""The scheduling queue: pending pods by priority then age, with per-pod backoff.

Three rooms, as in kube-scheduler's backend/queue:
- active: ready to schedule now, a heap ordered by (-priority, creation time);
- backoff: failed recently, waiting out an exponential delay before returning to active;
- unschedulable: no node fitted; they wait for a cluster change (a node added or updated, a pod
  deleted), an edit of the pod itself (not of its status) or the periodic flush, then go through
  backoff again.

A pod may be held in the unschedulable room through cluster changes (`hold_while`, upstream's
PreEnqueue): a preemptor stays there while its victims are being evicted.

As v1.34's SchedulerPopFromBackoffQ (beta, on by default): when no pod is active, `pop` takes the
pod whose backoff ends first among those a cluster change moved out of the unschedulable room,
instead of idling out the rest of its backoff (a preemptor whose victims are gone binds at once).
Pods backing off after an error (a failed bind, a scheduler error) still wait, as upstream's
podErrorBackoffQ is never popped early.

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
from typing import Any

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
    backoff_seq: int = -1  # the seq of its current backoff heap item (older items are stale)


class SchedulingQueue:
    def __init__(
        self,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_flush: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        pop_from_backoff: bool = True,
    ) -> None:
        self._initial = initial_backoff
        self._max = max_backoff
        self._flush = unschedulable_flush
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._active: list[tuple[int, float, int, str]] = []  # (-priority, created, seq, uid)
        # (ready_at, seq, uid): pods a cluster change moved, which `pop` may take early, and
        # pods that failed with an error, which wait out their backoff
        self._backoff: list[tuple[float, int, str]] = []
        self._error_backoff: list[tuple[float, int, str]] = []
        self._pop_from_backoff = pop_from_backoff
        self._parked: set[str] = set()  # uids in the unschedulable room
        self._in_flight: set[str] = set()  # popped and not yet settled
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._held: Callable[[str], bool] | None = None

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
            old = entry.pod
            priority_changed = old.priority != pod.priority
            entry.pod = pod
            if entry.room == ACTIVE and priority_changed:
                self._push_active(entry)  # the stale heap item is skipped when popped
            elif entry.room == UNSCHEDULABLE and (
                priority_changed or pod_updated(old.raw, pod.raw)
            ):
                # An edited pod may fit now (kube-scheduler does the same on pod update); a
                # status write (our own PodScheduled=False, a nomination) changes nothing.
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
            self._to_backoff(entry, error=True)
            self._cond.notify()

    def hold_while(self, held: Callable[[str], bool]) -> None:
        """A parked pod for which `held(uid)` is true stays parked through cluster changes
        (upstream's PreEnqueue keeps a preemptor out while its victims are being evicted:
        each victim's deletion would wake it for nothing). Whatever ends the hold calls
        `cluster_changed`. `held` is asked under the queue's lock and must not take it."""
        with self._cond:
            self._held = held

    def unschedulable(self, pod: PodInfo) -> None:
        """No node fits: park it until the cluster changes (or the periodic flush)."""
        with self._cond:
            entry = self._entries.get(pod.uid)
            if entry is None:
                return  # deleted or bound while we were scheduling it
            entry.attempts += 1
            if entry.moved and not (self._held is not None and self._held(pod.uid)):
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
            held = self._held
            for uid in list(self._parked):
                if held is None or not held(uid):
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
                    return self._take(entry)
                if self._pop_from_backoff:
                    entry = self._valid_head(self._backoff, pop=True)
                    if entry is not None:
                        return self._take(entry)
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

    def _take(self, entry: _Entry) -> PodInfo:
        entry.room = IN_FLIGHT
        entry.moved = False
        self._in_flight.add(entry.pod.uid)
        return entry.pod

    def _valid_head(self, heap: list[tuple[float, int, str]], pop: bool = False) -> _Entry | None:
        """The entry of the heap's first current item, stale items dropped on the way; popped
        from the heap if `pop`."""
        while heap:
            _, seq, uid = heap[0]
            entry = self._entries.get(uid)
            if entry is not None and entry.room == BACKOFF and entry.backoff_seq == seq:
                if pop:
                    heapq.heappop(heap)
                return entry
            heapq.heappop(heap)
        return None

    def _settle(self, uid: str) -> None:
        self._parked.discard(uid)
        self._in_flight.discard(uid)

    def _push_active(self, entry: _Entry) -> None:
        self._settle(entry.pod.uid)
        entry.room = ACTIVE
        pod = entry.pod
        heapq.heappush(self._active, (-pod.priority, pod.created, next(self._seq), pod.uid))

    def _to_backoff(self, entry: _Entry, error: bool = False) -> None:
        entry.ready_at = self._clock() + self.backoff_for(entry.attempts)
        self._push_backoff(entry, self._error_backoff if error else self._backoff)

    def _to_backoff_or_active(self, entry: _Entry) -> None:
        if self._clock() >= entry.ready_at:
            self._push_active(entry)
        else:
            self._push_backoff(entry, self._backoff)

    def _push_backoff(self, entry: _Entry, heap: list[tuple[float, int, str]]) -> None:
        self._settle(entry.pod.uid)
        entry.room = BACKOFF
        entry.backoff_seq = next(self._seq)
        heapq.heappush(heap, (entry.ready_at, entry.backoff_seq, entry.pod.uid))

    def _promote(self, now: float) -> None:
        for heap in (self._backoff, self._error_backoff):
            while (entry := self._valid_head(heap)) is not None and entry.ready_at <= now:
                heapq.heappop(heap)
                self._push_active(entry)
        if self._flush > 0 and self._parked:
            for uid in list(self._parked):
                entry = self._entries[uid]
                if now - entry.parked_at >= self._flush:
                    self._push_active(entry)

    def _next_wakeup(self, now: float) -> float | None:
        heaps = (self._backoff, self._error_backoff)
        waits = [max(heap[0][0] - now, 0.0) for heap in heaps if heap]
        if self._flush > 0 and self._parked:
            oldest = min(self._entries[uid].parked_at for uid in self._parked)
            waits.append(max(oldest + self._flush - now, 0.0))
        return min(waits) if waits else None


# What upstream's isPodUpdated strips before comparing: metadata every write bumps, and the
# status but for its resource claims.
_NOT_EDITS = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})
_STATUS_EDITS = ("resourceClaimStatuses", "extendedResourceClaimStatus")


def pod_updated(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a pod's update may change where it fits (upstream's isPodUpdated)."""
    if any(old.get(k) != new.get(k) for k in (old.keys() | new.keys()) - {"status", "metadata"}):
        return True
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if any(old_status.get(k) != new_status.get(k) for k in _STATUS_EDITS):
        return True
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    keys = (old_meta.keys() | new_meta.keys()) - _NOT_EDITS
    return any(old_meta.get(k) != new_meta.get(k) for k in keys)
