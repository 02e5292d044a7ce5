"""The data every plugin sees: pods, nodes, their loads and the cycle's scratch space; plain data
and the arithmetic on it. The cluster-wide index is in clusterindex.py, the Snapshot a cycle
reads in snapshot.py, a filter's Status in status.py, the extension points in interface.py."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

# Resource names as Kubernetes spells them. Quantities inside Ballast are integers in base
# units, except CPU, which is in millicores.
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0

Resources = dict[str, int]
HostPort = tuple[str, str, int]  # (protocol, hostIP, hostPort); hostIP "0.0.0.0" means every IP


@dataclass
class PodInfo:
    """A pod as the scheduler needs it, parsed once from the API's JSON."""

    name: str
    namespace: str
    uid: str
    scheduler_name: str
    priority: int
    created: float  # Unix seconds, for queue ordering
    node_name: str  # "" while pending
    phase: str
    requests: Resources  # effective requests, kube-scheduler style (init containers, overhead)
    limits: Resources  # effective limits, same rules
    raw: dict[str, Any]  # the pod JSON as the API returned it
    # cpu and memory requests with kube-scheduler's defaults (100m, 200Mi) for containers that
    # set none; only the allocation-based scores use these, so an empty pod still weighs something
    nonzero_requests: Resources = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    host_ports: tuple[HostPort, ...] = ()
    has_pod_affinity: bool = False  # any podAffinity/podAntiAffinity term
    has_required_anti_affinity: bool = False
    # Per-pod data a plugin parses once and keeps while the pod lives in the cache (a changed
    # pod gets a new PodInfo), keyed by the plugin's name.
    memo: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class NodeLoad:
    """One node's load from the watcher, per metric key ("cpu", "memory", extras)."""

    metrics: dict[str, MetricStats]
    source: str  # "ballast" (rich API) or "load-watcher" (plain envelope)


@dataclass
class MetricStats:
    avg: float | None
    std: float | None
    latest: float | None
    state: str  # "fresh" | "stale" | "expired"
    age: float  # seconds since the newest sample, at snapshot time
    last_sample: float  # Unix seconds of the newest sample in the window
    p95: float | None = None
    horizon: float | None = None  # seconds a sample stays fresh (Ballast's adaptive staleness)
    expiry: float | None = None  # seconds after which a sample is no data at all
    peak: float | None = None  # the most used over the last 72 hours (the peak model's node term)


@dataclass
class NodeInfo:
    """A node and the pods placed on it (bound or assumed), as the cache holds it."""

    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    unschedulable: bool
    ready: bool
    capacity: Resources
    allocatable: Resources
    requested: Resources = field(default_factory=dict)  # sum of pods' effective requests
    limits: Resources = field(default_factory=dict)  # sum of pods' effective limits
    pods: dict[str, PodInfo] = field(default_factory=dict)  # by uid
    raw: dict[str, Any] = field(default_factory=dict)
    nonzero_requested: Resources = field(default_factory=dict)  # sum of pods' nonzero_requests
    # sum over pods of max(limit, request) for cpu and memory: a pod without a limit is
    # expected to stay near its request (LowRiskOverCommitment's node limit)
    limits_or_requests: Resources = field(default_factory=dict)
    # (protocol, hostIP, port) -> how many placed pods use it
    used_ports: dict[HostPort, int] = field(default_factory=dict)
    affinity_pods: dict[str, PodInfo] = field(default_factory=dict)  # has_pod_affinity, by uid
    anti_affinity_pods: dict[str, PodInfo] = field(default_factory=dict)  # required anti
    # What every cycle reads on hundreds of nodes, as attributes (a quarter of the dict
    # look-ups' cost): the CPU and memory allocatable and CPU capacity, then allocatable less
    # requested CPU and memory, and the pods the node still takes, kept by every change of the
    # pods. `capacity` and `allocatable` are not changed after construction (a node update
    # builds a new NodeInfo).
    capacity_cpu: int = field(init=False, default=0)
    allocatable_cpu: int = field(init=False, default=0)
    allocatable_memory: int = field(init=False, default=0)
    room_cpu: int = field(init=False, default=0)
    room_memory: int = field(init=False, default=0)
    room_pods: int = field(init=False, default=0)
    # Changes with every pod added or taken off (unique across nodes): what a plugin caching
    # a sum over the node's pods between cycles keys it by (plugins/peak_fit.py).
    version: int = field(init=False, default=0, compare=False)

    def __post_init__(self) -> None:
        self.capacity_cpu = self.capacity.get(CPU, 0)
        self.allocatable_cpu = self.allocatable.get(CPU, 0)
        self.allocatable_memory = self.allocatable.get(MEMORY, 0)
        self._count_room()

    def _count_room(self) -> None:
        requested = self.requested
        self.room_cpu = self.allocatable_cpu - requested.get(CPU, 0)
        self.room_memory = self.allocatable_memory - requested.get(MEMORY, 0)
        self.room_pods = self.allocatable.get(PODS, 0) - len(self.pods)

    def take_pods_from(self, old: NodeInfo) -> None:
        """Keep the pods (and every sum over them) of the previous version of this node."""
        self.pods = old.pods
        self.requested = old.requested
        self.limits = old.limits
        self.nonzero_requested = old.nonzero_requested
        self.limits_or_requests = old.limits_or_requests
        self.used_ports = old.used_ports
        self.affinity_pods = old.affinity_pods
        self.anti_affinity_pods = old.anti_affinity_pods
        self.version = next(_VERSIONS)
        self._count_room()

    def add_pod(self, pod: PodInfo) -> None:
        """Count a bound or assumed pod on this node; adding a known uid replaces it."""
        if pod.uid in self.pods:
            self.remove_pod(pod)
        self.pods[pod.uid] = pod
        sums = (self.requested, self.limits, self.nonzero_requested, self.limits_or_requests)
        for which, name, value in _sum_parts(pod):
            total = sums[which]
            left = total.get(name, 0) + value
            if left:
                total[name] = left
            else:
                total.pop(name, None)
        for port in pod.host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1
        if pod.has_pod_affinity:
            self.affinity_pods[pod.uid] = pod
        if pod.has_required_anti_affinity:
            self.anti_affinity_pods[pod.uid] = pod
        self.version = next(_VERSIONS)
        self._count_room()

    def remove_pod(self, pod: PodInfo) -> bool:
        """Forget a pod by uid (the stored copy is subtracted); False when it was not here."""
        known = self.pods.pop(pod.uid, None)
        if known is None:
            return False
        sums = (self.requested, self.limits, self.nonzero_requested, self.limits_or_requests)
        for which, name, value in _sum_parts(known):
            total = sums[which]
            left = total.get(name, 0) - value
            if left:
                total[name] = left
            else:
                total.pop(name, None)
        for port in known.host_ports:
            left = self.used_ports.get(port, 0) - 1
            if left > 0:
                self.used_ports[port] = left
            else:
                self.used_ports.pop(port, None)
        self.affinity_pods.pop(known.uid, None)
        self.anti_affinity_pods.pop(known.uid, None)
        self.version = next(_VERSIONS)
        self._count_room()
        return True


def _sum_parts(pod: PodInfo) -> tuple[tuple[int, str, int], ...]:
    """What `pod` adds to each of a NodeInfo's four sums (requested, limits, nonzero_requested,
    limits_or_requests) as (which sum, resource, amount), built once per pod: a preemption's
    dry run takes each lower-priority pod off and on again, about 1,500 edits per preemptor on
    500 nodes, and one flat loop is a third cheaper than a call per sum."""
    found = pod.memo.get(_SUM_PARTS)
    if found is None:
        limits_or_requests = {
            r: max(pod.limits.get(r, 0), pod.requests.get(r, 0))
            for r in (CPU, MEMORY)
            if r in pod.limits or r in pod.requests
        }
        parts = (pod.requests, pod.limits, pod.nonzero_requests, limits_or_requests)
        found = pod.memo[_SUM_PARTS] = tuple(
            (which, name, value)
            for which, part in enumerate(parts)
            for name, value in part.items()
            if value
        )
    return found


_SUM_PARTS = "NodeInfo.sum_parts"
_VERSIONS = itertools.count(1)


class CycleState(dict):
    """Scratch space shared by the plugins of one cycle (PreFilter/PreScore results).

    `fallbacks` counts, per reason ("missing", "expired", "stale"), the nodes whose load was
    predicted from allocation instead of (or blended with) the watcher's data during this cycle;
    the runtime adds them to its fallback counter after the cycle.
    """

    @property
    def fallbacks(self) -> dict[str, int]:
        return self.setdefault("fallbacks", {})

    def count_fallback(self, reason: str) -> None:
        counts = self.fallbacks
        counts[reason] = counts.get(reason, 0) + 1


# The pod condition an eviction by preemption sets before the delete (upstream's names).
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
