"""How much the rebalancer may disrupt: per round, per node, per namespace, per workload, per
minute.

- `RoundBudget`: counts of one round's planned evictions against maxPerNode, maxPerNamespace,
  maxPerRound, and one per workload.
- `workload_busy`: a workload with a replica unavailable (its controller's status says fewer
  ready than wanted, or a pod of ours is still on its way out) loses no other replica: so at
  most one replica is unavailable because of us, and only until its replacement is bound and
  ready. The controller's status comes from the cache, so a new leader knows it at once.
- `budget_at_limit`: a PodDisruptionBudget over the workload's pods whose status allows no
  disruption now, read from the cache: such a budget is not asked at all.
- `SetAside`: a pod (or its whole workload, when the refusal is about the workload: its budget,
  an admission webhook or policy) whose eviction failed is not tried again until the node's
  rest period is over; the round goes on to the node's next move.
- `TokenBucket`: the eviction rate (evictionsPerMinute, burst maxPerRound); a request the API
  server refused gives its token back, so refusals never use up the rate meant for evictions.

How long a node rests after an eviction, and what ends a rest early: rest.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from scheduler.framework.clusterindex import PDBS, REPLICA_SETS, STATEFUL_SETS, ClusterIndex
from scheduler.framework.labels import LabelSelector
from scheduler.rebalancer.settings import RebalancerSettings
from scheduler.rebalancer.victims import Workload, controller_object

PER_NODE, PER_NAMESPACE, PER_ROUND = "node-limit", "namespace-limit", "round-limit"
PER_WORKLOAD = "workload-limit"
WORKLOAD_UNAVAILABLE = "workload-unavailable"
SET_ASIDE = "set-aside"  # its eviction failed within the node's rest period
_STATUS_KINDS = {"ReplicaSet": REPLICA_SETS, "StatefulSet": STATEFUL_SETS}
# An eviction of ours stays "on its way" at most this long; then only the controller's status
# decides (a replacement that never turns ready keeps the workload busy through that status).
IN_FLIGHT_MAX_S = 600.0


class RoundBudget:
    def __init__(self, settings: RebalancerSettings) -> None:
        self.settings = settings
        self.per_node: dict[str, int] = {}
        self.per_namespace: dict[str, int] = {}
        self.workloads: set[str] = set()
        self.total = 0

    def refusal(self, node: str, namespace: str, workload: Workload) -> str:
        s = self.settings
        if self.total >= s.max_per_round:
            return PER_ROUND
        if self.per_node.get(node, 0) >= s.max_per_node:
            return PER_NODE
        if self.per_namespace.get(namespace, 0) >= s.max_per_namespace:
            return PER_NAMESPACE
        if workload.key in self.workloads:
            return PER_WORKLOAD
        return ""

    def spend(self, node: str, namespace: str, workload: Workload) -> None:
        self.total += 1
        self.per_node[node] = self.per_node.get(node, 0) + 1
        self.per_namespace[namespace] = self.per_namespace.get(namespace, 0) + 1
        self.workloads.add(workload.key)


def controller_short(obj: dict[str, Any]) -> bool:
    """Whether a ReplicaSet's or StatefulSet's status shows a replica missing or not ready,
    or has not caught up with its spec yet."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    wanted = spec.get("replicas", 1)
    if status.get("observedGeneration", 0) < meta.get("generation", 0):
        return True
    return (status.get("readyReplicas") or 0) < wanted or (status.get("replicas") or 0) > wanted


class InFlight:
    """Our evictions whose pods may still be on their way out, by workload."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._by_workload: dict[str, tuple[str, float]] = {}  # key -> (pod uid, when)

    def add(self, workload: Workload, uid: str, hold: float = IN_FLIGHT_MAX_S) -> None:
        """`hold`: at most this long (a dry run's pod never leaves: it holds for the rest)."""
        self._by_workload[workload.key] = (uid, self._clock() - IN_FLIGHT_MAX_S + hold)

    def busy(self, workload: Workload, index: ClusterIndex) -> bool:
        entry = self._by_workload.get(workload.key)
        if entry is None:
            return False
        uid, when = entry
        if uid in index.pods and self._clock() - when < IN_FLIGHT_MAX_S:
            return True  # the evicted pod is still placed: its replacement cannot be ready
        del self._by_workload[workload.key]
        return False

    def __len__(self) -> int:
        return len(self._by_workload)


def workload_busy(workload: Workload, index: ClusterIndex, in_flight: InFlight) -> bool:
    if in_flight.busy(workload, index):
        return True
    kind = _STATUS_KINDS.get(workload.kind)
    if kind is None:
        return False  # a Job: only our own eviction in flight counts
    obj = index.objects.get(kind, {}).get(f"{workload.namespace}/{workload.name}")
    return obj is None or controller_short(obj)


def budget_at_limit(workload: Workload, index: ClusterIndex) -> str:
    """The name of a PodDisruptionBudget over the workload's pods (by its template's labels)
    whose status allows no disruption now; "" when none. A budget whose status is older than
    its spec is left for the API server to judge."""
    obj = controller_object(workload, index)
    if obj is None:
        return ""
    template = ((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels = template.get("labels") or {}
    for key, pdb in index.objects.get(PDBS, {}).items():
        meta, status = pdb.get("metadata") or {}, pdb.get("status") or {}
        if meta.get("namespace") != workload.namespace:
            continue
        if status.get("observedGeneration", 0) < meta.get("generation", 0):
            continue
        try:
            selector = LabelSelector.parse((pdb.get("spec") or {}).get("selector"))
        except ValueError:
            continue
        if not selector.matches(labels):
            continue  # policy/v1 evictions: a null selector matches nothing, an empty one all
        if int(status.get("disruptionsAllowed") or 0) <= 0:
            return meta.get("name") or key
    return ""


class SetAside:
    """Pods (by uid) and workloads (by key) whose eviction failed, each until a moment (Unix
    time), with the failure's reason."""

    def __init__(self) -> None:
        self.until: dict[str, tuple[float, str]] = {}

    def add(self, key: str, until: float, why: str) -> None:
        if until > self.until.get(key, (0.0, ""))[0]:
            self.until[key] = (until, why)

    def why(self, key: str, now: float) -> str:
        """The reason `key` is set aside at `now`; "" when it is not."""
        until, why = self.until.get(key, (0.0, ""))
        return why if until > now else ""

    def prune(self, now: float) -> None:
        for key in [k for k, (t, _) in self.until.items() if t <= now]:
            del self.until[key]


class TokenBucket:
    def __init__(
        self, per_minute: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = per_minute / 60.0
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def give_back(self) -> None:
        """A token taken for a request that evicted nothing."""
        self._tokens = min(float(self.burst), self._tokens + 1.0)
