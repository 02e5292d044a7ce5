"""NodeAffinity: nodeSelector and required node affinity filter; preferred affinity scores.

Required terms are ORed, the expressions and fields inside one term ANDed; a term with neither
matches nothing. Operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels; matchFields on
metadata.name with In/NotIn. The score is the sum of the weights of matching preferred terms,
scaled so the best node gets 100.
"""

from __future__ import annotations

from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.plugins.helpers.node_affinity_terms import (
    node_affinity,
    required_terms,
    term_matches,
)

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"
_REQUIRED = NAME + ".required"
_PREFERRED = NAME + ".preferred"


class Plugin:
    name = NAME
    score_reads_loads = False  # placed pods, the node and objects: no watcher figures
    filter_reads_pods = False  # the node, the pod and objects: never placed pods
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: None = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool:
        selector, terms = required_terms(pod)
        state[_REQUIRED] = (selector, terms)
        return bool(selector) or terms is not None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        selector, terms = state.get(_REQUIRED) or required_terms(pod)
        labels = node.labels
        if any(labels.get(k) != v for k, v in selector.items()):
            return Status.reject(REASON, unresolvable=True)
        if terms is not None and not any(term_matches(t, node) for t in terms):
            return Status.reject(REASON, unresolvable=True)
        return Status.success()

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        preferred = node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
        state[_PREFERRED] = [
            (int(p.get("weight") or 0), p.get("preference") or {}) for p in preferred or []
        ]
        return bool(state[_PREFERRED])

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        if _PREFERRED not in state:
            self.pre_score(state, pod, [node], snap)
        return sum(w for w, term in state[_PREFERRED] if term_matches(term, node))

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        highest = max(scores.values(), default=0)
        if highest > 0:
            for node, value in scores.items():
                scores[node] = MAX_NODE_SCORE * value // highest
