"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints lower the score."""

from __future__ import annotations

from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.plugins.helpers.nodetraits import traits
from scheduler.plugins.helpers.taints import tolerated, tolerations

NAME = "TaintToleration"
_HARD = ("NoSchedule", "NoExecute")
_SOFT = "PreferNoSchedule"


def reverse_normalize(scores: dict[str, int]) -> None:
    """kube-scheduler's DefaultNormalizeScore(reverse): the most penalised node gets 0."""
    highest = max(scores.values(), default=0)
    for node, value in scores.items():
        scores[node] = (
            MAX_NODE_SCORE if highest == 0 else MAX_NODE_SCORE - (MAX_NODE_SCORE * value // highest)
        )


# Upstream 1.34's one text for every untolerated taint (older releases named the taint).
REASON = "node(s) had untolerated taint(s)"


class Plugin:
    name = NAME
    score_reads_loads = False  # placed pods, the node and objects: no watcher figures
    filter_reads_pods = False  # the node, the pod and objects: never placed pods

    def __init__(self, args: None = None) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        if not node.taints:
            return Status.success()
        tols = tolerations(pod)
        for taint in node.taints:
            if taint.get("effect") in _HARD and not tolerated(tols, taint):
                return Status.reject(REASON, unresolvable=True)
        return Status.success()

    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        known = traits(snap)
        if known is not None and not known.tainted:
            return {}
        rejected = {}
        for i, node in enumerate(nodes):
            if node.taints:
                status = self.filter(state, pod, node, snap)
                if not status.ok:
                    rejected[i] = status
        return rejected

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        # Only a PreferNoSchedule taint somewhere can make nodes differ.
        known = traits(snap)
        if known is not None and not known.tainted:
            return False
        return any(t.get("effect") == _SOFT for n in nodes if n.taints for t in n.taints)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        tols = [t for t in tolerations(pod) if (t.get("effect") or _SOFT) == _SOFT]
        soft = [t for t in node.taints if t.get("effect") == _SOFT]
        return sum(1 for taint in soft if not tolerated(tols, taint))

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        reverse_normalize(scores)
