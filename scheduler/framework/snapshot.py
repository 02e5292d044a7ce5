"""What one scheduling cycle sees (a Snapshot, built without any network call), and TrialEdit,
the what-if edit of one node that preemption's fit checks run on."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.framework.clusterindex import ClusterIndex
from scheduler.framework.gpus import NO_GPUS, GpuLoads
from scheduler.framework.podusage import NO_POD_USAGE, PodUsage
from scheduler.framework.types import NodeInfo, NodeLoad, PodInfo
from scheduler.framework.workloads import NO_PROFILES, WorkloadProfiles


@dataclass
class Snapshot:
    """What one scheduling cycle sees; built without any network call."""

    nodes: dict[str, NodeInfo]
    loads: dict[str, NodeLoad]  # node name -> load; a node without data is absent
    now: float
    # node name -> predicted CPU millicores of pods bound recently and not yet in the window
    recent_cpu_m: dict[str, int] = field(default_factory=dict)
    # cluster-wide lookups (placed pods by label, namespaces, volume objects); the cache's own
    cluster: ClusterIndex = field(default_factory=ClusterIndex)
    # what each workload's replicas use, from the watcher (plugins/helpers/estimator.py)
    workloads: WorkloadProfiles = NO_PROFILES
    # each GPU node's GPUs, from the watcher (plugins/gpu_load.py)
    gpus: GpuLoads = NO_GPUS
    # each measured pod's usage statistics, from the watcher (plugins/peak_fit.py)
    pod_usage: PodUsage = NO_POD_USAGE


def snapshot_of(
    nodes: list[NodeInfo],
    placed: list[tuple[PodInfo, str]] = (),  # type: ignore[assignment]
    loads: dict[str, NodeLoad] | None = None,
    now: float = 0.0,
) -> Snapshot:
    """A Snapshot of `nodes` with `placed` pods (pod, node name) counted on their nodes and in
    the index, as the cache would hold them; for tests and tools. Like the cache, a caller that
    then adds, deletes, relabels, retaints or cordons a node, or changes its readiness, calls
    `snap.cluster.nodes_changed()`."""
    by_name = {n.name: n for n in nodes}
    index = ClusterIndex()
    index.nodes = by_name
    for pod, node_name in placed:
        by_name[node_name].add_pod(pod)
        index.add_pod(pod, node_name)
    index.synced.update(("nodes", "pods", *index.objects))
    return Snapshot(nodes=by_name, loads=loads or {}, now=now, cluster=index)


class TrialEdit:
    """Pods taken off (or put on) one node, in the NodeInfo and the cluster index at once, for
    a what-if filter run; everything is put back on exit, also when the run raised.

    The caller holds the cache lock for the whole `with` block: the edits are made on the
    cache's own objects, which nobody else may see half-done.
    """

    def __init__(self, snap: Snapshot, node: NodeInfo) -> None:
        self.snap = snap
        self.node = node
        # Net edits only: a pod taken off and put back (preemption's reprieve) leaves no trace,
        # so restoring costs one step per pod still moved, not one per step taken (a reprieve
        # loop takes about three times as many).
        self._removed: dict[str, tuple[PodInfo, str]] = {}  # uid -> (pod, its index node)
        self._added: dict[str, PodInfo] = {}

    def remove(self, pod: PodInfo) -> None:
        if not self.node.remove_pod(pod):
            return
        where = self.snap.cluster.placed.get(pod.uid, self.node.name)
        self.snap.cluster.remove_pod(pod.uid)
        if self._added.pop(pod.uid, None) is None:
            self._removed[pod.uid] = (pod, where)

    def add(self, pod: PodInfo) -> None:
        """Count a pod on this node: one this edit took off, or one placed nowhere (a nominated
        pod)."""
        if pod.uid in self.node.pods or pod.uid in self.snap.cluster.placed:
            return
        self.node.add_pod(pod)
        self.snap.cluster.add_pod(pod, self.node.name)
        taken = self._removed.get(pod.uid)
        if taken is not None and taken[1] == self.node.name:
            del self._removed[pod.uid]  # back where it was
        else:
            self._added[pod.uid] = pod

    def restore(self) -> None:
        while self._added:
            _, pod = self._added.popitem()
            self.node.remove_pod(pod)
            self.snap.cluster.remove_pod(pod.uid)
        while self._removed:
            _, (pod, where) = self._removed.popitem()
            self.node.add_pod(pod)
            self.snap.cluster.add_pod(pod, where)

    def __enter__(self) -> TrialEdit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()
