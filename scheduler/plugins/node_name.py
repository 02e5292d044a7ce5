"""NodeName: a pod that names its node fits only there.

The cache never queues a pod whose spec.nodeName is already set (it is bound, not ours to
bind), so this filter matters only for the extender and for tools that judge such a pod; it is
in the default profile because upstream's is, and its reason text is upstream's.
"""

from __future__ import annotations

from scheduler.framework import CycleState, NodeInfo, PodInfo, Snapshot, Status

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"
_WANTED = NAME + ".wanted"


class Plugin:
    name = NAME
    filter_reads_pods = False  # the node, the pod and objects: never placed pods
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: None = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool:
        wanted = (pod.raw.get("spec") or {}).get("nodeName") or ""
        state[_WANTED] = wanted
        return bool(wanted)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        wanted = state.get(_WANTED, pod.node_name)
        if wanted and wanted != node.name:
            return Status.reject(REASON, unresolvable=True)
        return Status.success()
