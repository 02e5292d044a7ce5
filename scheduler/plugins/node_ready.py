"""NodeReady: keep pods off nodes whose Ready condition is not True or that carry the
not-ready/unreachable taints, unless the pod tolerates both (as DaemonSet pods do)."""

from __future__ import annotations

from scheduler.framework import CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.resources import NOT_READY_TAINT, UNREACHABLE_TAINT
from scheduler.plugins.helpers.nodetraits import traits
from scheduler.plugins.helpers.taints import tolerated, tolerations

NAME = "NodeReady"
_TAINTS = (
    {"key": NOT_READY_TAINT, "effect": "NoSchedule"},
    {"key": UNREACHABLE_TAINT, "effect": "NoSchedule"},
)


class Plugin:
    name = NAME
    filter_reads_pods = False  # the node, the pod and objects: never placed pods

    def __init__(self, args: None = None) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        if node.ready:
            return Status.success()
        tols = tolerations(pod)
        if all(tolerated(tols, taint) for taint in _TAINTS):
            return Status.success()
        return Status.reject("node(s) were not ready")

    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        known = traits(snap)
        if known is not None and not known.not_ready:
            return {}
        not_ready = [i for i, node in enumerate(nodes) if not node.ready]
        if not not_ready:
            return {}
        status = self.filter(state, pod, nodes[not_ready[0]], snap)  # the same for every one
        return {} if status.ok else dict.fromkeys(not_ready, status)
