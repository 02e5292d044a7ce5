"""What one scheduling cycle sees (a Snapshot, built without any network call), and TrialEdit,
the what-if edit of one node that preemption's fit checks run on."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.framework.clusterindex import ClusterIndex
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


def snapshot_of(
    nodes: list[NodeInfo],
    placed: list[tuple[PodInfo, str]] = (),  # type: ignore[assignment]
    loads: dict[str, NodeLoad] | None = None,
    now: float = 0.0,
) -> Snapshot:
    """A Snapshot of `nodes` with `placed` pods (pod, node name) counted on their nodes and in
    the index, as the cache would hold them; for tests and tools."""
    by_name = {n.name: n for n in nodes}
    index = ClusterIndex()
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
