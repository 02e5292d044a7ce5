"""The scheduling framework's extension points and the data every plugin sees.

Mirrors kube-scheduler's framework/interface.go at a smaller scale: a cycle builds a Snapshot
(cluster state from the cache plus the metrics client's latest load data), runs every enabled
filter plugin on every candidate node, then every score plugin on the nodes that passed, lets a
plugin normalise its scores across nodes, and weights and sums them.

Plugins never do I/O: everything they need is in the Snapshot, which is built without waiting on
the network. scheduler/profile.py runs a profile's plugins through these protocols; the plugins
live in scheduler/plugins/, one file each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from scheduler.clusterindex import ClusterIndex

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

    def add_pod(self, pod: PodInfo) -> None:
        """Count a bound or assumed pod on this node; adding a known uid replaces it."""
        if pod.uid in self.pods:
            self.remove_pod(pod)
        self.pods[pod.uid] = pod
        _add(self.requested, pod.requests, 1)
        _add(self.limits, pod.limits, 1)
        _add(self.nonzero_requested, pod.nonzero_requests, 1)
        _add(self.limits_or_requests, _limits_or_requests(pod), 1)
        for port in pod.host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1
        if pod.has_pod_affinity:
            self.affinity_pods[pod.uid] = pod
        if pod.has_required_anti_affinity:
            self.anti_affinity_pods[pod.uid] = pod

    def remove_pod(self, pod: PodInfo) -> bool:
        """Forget a pod by uid (the stored copy is subtracted); False when it was not here."""
        known = self.pods.pop(pod.uid, None)
        if known is None:
            return False
        _add(self.requested, known.requests, -1)
        _add(self.limits, known.limits, -1)
        _add(self.nonzero_requested, known.nonzero_requests, -1)
        _add(self.limits_or_requests, _limits_or_requests(known), -1)
        for port in known.host_ports:
            left = self.used_ports.get(port, 0) - 1
            if left > 0:
                self.used_ports[port] = left
            else:
                self.used_ports.pop(port, None)
        self.affinity_pods.pop(known.uid, None)
        self.anti_affinity_pods.pop(known.uid, None)
        return True


def _limits_or_requests(pod: PodInfo) -> Resources:
    return {
        r: max(pod.limits.get(r, 0), pod.requests.get(r, 0))
        for r in (CPU, MEMORY)
        if r in pod.limits or r in pod.requests
    }


def _add(total: Resources, part: Resources, sign: int) -> None:
    for name, value in part.items():
        left = total.get(name, 0) + sign * value
        if left:
            total[name] = left
        else:
            total.pop(name, None)


@dataclass
class Snapshot:
    """What one scheduling cycle sees; built without any network call."""

    nodes: dict[str, NodeInfo]
    loads: dict[str, NodeLoad]  # node name -> load; a node without data is absent
    now: float
    # node name -> predicted CPU millicores of pods bound recently and not yet in the window
    recent_cpu_m: dict[str, int] = field(default_factory=dict)
    # cluster-wide lookups (placed pods by label, namespaces, volume objects); the cache's own
    cluster: ClusterIndex = field(default_factory=lambda: _empty_index())


def _empty_index() -> ClusterIndex:
    from scheduler.clusterindex import ClusterIndex

    return ClusterIndex()


def snapshot_of(
    nodes: list[NodeInfo],
    placed: list[tuple[PodInfo, str]] = (),  # type: ignore[assignment]
    loads: dict[str, NodeLoad] | None = None,
    now: float = 0.0,
) -> Snapshot:
    """A Snapshot of `nodes` with `placed` pods (pod, node name) counted on their nodes and in
    the index, as the cache would hold them; for tests and tools."""
    from scheduler.clusterindex import ClusterIndex

    by_name = {n.name: n for n in nodes}
    index = ClusterIndex()
    for pod, node_name in placed:
        by_name[node_name].add_pod(pod)
        index.add_pod(pod, node_name)
    index.synced.update(("nodes", "pods", *index.objects))
    return Snapshot(nodes=by_name, loads=loads or {}, now=now, cluster=index)


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


@dataclass(frozen=True)
class Status:
    """A filter's verdict: `reason` is the short kube-scheduler style text of a rejection.

    A node can fail for several reasons at once ("Insufficient cpu" and "Insufficient memory");
    `reasons` holds them all, `reason` the first.
    """

    ok: bool
    reason: str = ""
    unresolvable: bool = False  # no preemption or retry on node change would help
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.reasons and self.reason:
            object.__setattr__(self, "reasons", (self.reason,))

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def reject(cls, *reasons: str, unresolvable: bool = False) -> Status:
        return cls(False, reasons[0], unresolvable, tuple(reasons))


_SUCCESS = Status(True)


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        """Prepare per-pod data; False means this plugin has nothing to check for this pod.
        A rejecting Status makes the pod unschedulable on every node with that one reason
        (upstream's PreFilter returning Unschedulable)."""
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        """The rejections among `nodes`, by index; the same verdicts as `filter` node by node,
        for the price of one call (most nodes pass, and a call per node and plugin adds up)."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        """0..MAX_NODE_SCORE before normalisation."""
        ...


@runtime_checkable
class NormalizeScorePlugin(ScorePlugin, Protocol):
    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        """Rewrite `scores` (node -> score) in place to 0..MAX_NODE_SCORE."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        """Prepare per-pod data; False means this plugin gives every node the same score."""
        ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        """Scores for all nodes at once (vectorised); same values as `score` node by node."""
        ...


@dataclass(frozen=True)
class PostFilterResult:
    """A PostFilter plugin's answer for a pod that fits nowhere.

    `nominated_node` set: the pod should go there once `victims` are gone (the cycle hands them
    to the API side); "" with `clear` asks to drop an earlier nomination (upstream's
    ModeOverride with an empty name); `message` joins the FailedScheduling text.
    """

    nominated_node: str = ""
    victims: tuple[PodInfo, ...] = ()
    message: str = ""
    clear: bool = False


class Handle(Protocol):
    """What a PostFilter plugin may ask of the framework (upstream's framework.Handle)."""

    def fits(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        """The profile's own filters for `pod` on `node` as it stands now, nominated pods of
        equal or higher priority counted on it."""
        ...

    def nominated_node(self, pod: PodInfo) -> str:
        """The node `pod` was nominated to by an earlier preemption, "" if none."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rejected: dict[str, list[str]],
        handle: Handle,
    ) -> PostFilterResult:
        """Called only when no node passed the filters; `rejected` holds every node's reasons
        and `state` the filter pass's (nodes no change could help are in UNRESOLVABLE_NODES)."""
        ...


# CycleState key: names of the nodes whose rejection no preemption can help.
UNRESOLVABLE_NODES = "framework.unresolvable_nodes"


class TrialEdit:
    """Pods taken off (or put on) one node, in the NodeInfo and the cluster index at once, for
    a what-if filter run; everything is put back on exit, also when the run raised.

    The caller holds the cache lock for the whole `with` block: the edits are made on the
    cache's own objects, which nobody else may see half-done.
    """

    def __init__(self, snap: Snapshot, node: NodeInfo) -> None:
        self.snap = snap
        self.node = node
        self._undo: list[tuple[bool, PodInfo, str]] = []  # (was_removed, pod, its index node)

    def remove(self, pod: PodInfo) -> None:
        if not self.node.remove_pod(pod):
            return
        where = self.snap.cluster.placed.get(pod.uid, self.node.name)
        self.snap.cluster.remove_pod(pod.uid)
        self._undo.append((True, pod, where))

    def add(self, pod: PodInfo) -> None:
        """Count a pod that is not placed anywhere (a nominated pod) on this node."""
        if pod.uid in self.node.pods or pod.uid in self.snap.cluster.placed:
            return
        self.node.add_pod(pod)
        self.snap.cluster.add_pod(pod, self.node.name)
        self._undo.append((False, pod, self.node.name))

    def restore(self) -> None:
        while self._undo:
            was_removed, pod, where = self._undo.pop()
            if was_removed:
                self.node.add_pod(pod)
                self.snap.cluster.add_pod(pod, where)
            else:
                self.node.remove_pod(pod)
                self.snap.cluster.remove_pod(pod.uid)

    def __enter__(self) -> TrialEdit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()
