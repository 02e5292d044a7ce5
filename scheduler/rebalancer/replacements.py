"""Our moves' replacements, booked on their targets until the scheduler has bound them.

An evicted pod's replacement uses nothing for a while: its controller creates it (a ReplicaSet
at once, a StatefulSet only once the old pod is deleted, up to its grace period later), the
scheduler binds it, then it starts. Until then its predicted CPU is booked on the move's target,
or the judge would read that node as cold as before the move and send it a second pod. Once a
pod of the workload that was not placed at the eviction is bound, the booking moves to the node
it went to, from its bind (PodScheduled) time, and lasts as the scheduler's own record of a
bound pod does (RecentlyBound: until the node's newest sample is later than the bind plus the
provider's lag, the scheduler's --recent-max-age at most; the rebalancer takes both flags).

The booking used to start there, from the eviction: it ended with the target's first sample
taken the provider's lag after the eviction, bound or not. Deployed (15 s) that outlives a
ReplicaSet's replacement's bind but not a StatefulSet's with a grace period over 15 s; in the
benchmark's trace, compressed 60 times (a lag of 0.25 s, rounds and fetches 1 s apart), it
ended by the next round, bound or not (the controller's and the scheduler's delays are not
compressed), and the target was booked nowhere until the bind.

A replacement never bound (nothing fits it, its workload scaled down or rolled to a new
ReplicaSet) is booked a window of the target's at most past the moment it could be created (the
watcher's window, so the bound scales with the look-back the figures have, not a wall
constant). A dry run's pod never leaves: its replacement counts as bound on its target at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.backend.recent import RecentlyBound
from scheduler.framework import NodeLoad, PodInfo
from scheduler.framework.clusterindex import ClusterIndex, terminating
from scheduler.rebalancer.judge import bound_at
from scheduler.rebalancer.victims import Workload, controller_of

STATEFUL_SET = "StatefulSet"
DEFAULT_GRACE_S = 30.0  # a pod's terminationGracePeriodSeconds when its spec gives none


@dataclass
class _Pending:
    workload: Workload
    target: str
    cpu_m: int
    until: float  # Unix time past which a replacement is no longer expected
    siblings: frozenset[str]  # the workload's pods placed at the eviction (uids)


def siblings(index: ClusterIndex, workload: Workload) -> frozenset[str]:
    """The uids of the workload's placed pods: none of them is the replacement."""
    pods = index.in_namespace(workload.namespace)
    return frozenset(uid for uid, p in pods.items() if _of(p, workload))


def _of(pod: PodInfo, workload: Workload) -> bool:
    return controller_of(pod) == (workload.kind, workload.name)


def created_within(victim: PodInfo, workload: Workload) -> float:
    """Seconds after the eviction by which the controller creates the replacement, at most: a
    StatefulSet's waits for the old pod's deletion, its grace period."""
    if workload.kind != STATEFUL_SET:
        return 0.0
    grace = (victim.raw.get("spec") or {}).get("terminationGracePeriodSeconds")
    return float(grace) if isinstance(grace, (int, float)) and grace >= 0 else DEFAULT_GRACE_S


class Replacements:
    def __init__(self, provider_lag: float, max_age: float) -> None:
        """`provider_lag`, `max_age`: the scheduler's rule for a bound pod (RecentlyBound)."""
        self.bound = RecentlyBound(provider_lag, max_age=max_age)
        self.pending: dict[str, _Pending] = {}  # the victim's uid -> its awaited replacement

    def expect(
        self,
        victim: PodInfo,
        workload: Workload,
        target: str,
        cpu_m: int,
        until: float,
        placed: Iterable[str],
    ) -> None:
        """Book the victim's replacement on `target` until it is bound, or `until` (Unix) at
        most; `placed`: the uids of the workload's pods placed at the eviction."""
        self.pending[victim.uid] = _Pending(workload, target, cpu_m, until, frozenset(placed))

    def held(self, victim: PodInfo, target: str, cpu_m: int, at: float) -> None:
        """A dry run's move: its replacement counted as bound on `target` at `at`."""
        self.bound.record(victim.uid, target, cpu_m, at)

    def observe(self, index: ClusterIndex, now: float) -> None:
        """The replacements bound since the last round move to the node they went to; those
        no longer expected are dropped. Called with the cache's lock held."""
        for uid, p in list(self.pending.items()):
            found = self._bound(p, index)
            if found is not None:
                del self.pending[uid]
                node, at = found
                self.bound.record(uid, node, p.cpu_m, at or now)
            elif p.until <= now:
                del self.pending[uid]

    def _bound(self, p: _Pending, index: ClusterIndex) -> tuple[str, float] | None:
        for uid, pod in index.in_namespace(p.workload.namespace).items():
            if uid in p.siblings or terminating(pod) or not _of(pod, p.workload):
                continue
            node = index.placed.get(uid)
            if node:
                return node, bound_at(pod)
        return None

    def cpu_by_node(self, loads: dict[str, NodeLoad], now: float) -> dict[str, int]:
        """Predicted CPU millicores per node of our replacements, pending or bound too lately
        for the node's samples to show."""
        out = dict(self.bound.cpu_by_node(loads, now))
        for p in self.pending.values():
            out[p.target] = out.get(p.target, 0) + p.cpu_m
        return out
