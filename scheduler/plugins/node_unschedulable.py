"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from scheduler.framework import CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.resources import UNSCHEDULABLE_TAINT
from scheduler.plugins.helpers.nodetraits import traits
from scheduler.plugins.helpers.taints import tolerated, tolerations

NAME = "NodeUnschedulable"
_TAINT = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}


class Plugin:
    name = NAME
    filter_reads_pods = False  # the node, the pod and objects: never placed pods

    def __init__(self, args: None = None) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        if node.unschedulable and not tolerated(tolerations(pod), _TAINT):
            return Status.reject("node(s) were unschedulable", unresolvable=True)
        return Status.success()

    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        known = traits(snap)
        if known is not None and not known.cordoned:
            return {}
        cordoned = [i for i, node in enumerate(nodes) if node.unschedulable]
        if not cordoned or tolerated(tolerations(pod), _TAINT):
            return {}
        status = Status.reject("node(s) were unschedulable", unresolvable=True)
        return dict.fromkeys(cordoned, status)
