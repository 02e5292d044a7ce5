"""NodeAffinity: nodeSelector and required node affinity filter; preferred affinity scores.

Required terms are ORed, the expressions and fields inside one term ANDed; a term with neither
matches nothing. Operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels; matchFields on
metadata.name with In/NotIn. The score is the sum of the weights of matching preferred terms,
scaled so the best node gets 100.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"
_REQUIRED = NAME + ".required"
_PREFERRED = NAME + ".preferred"


def _node_affinity(pod: PodInfo) -> dict[str, Any]:
    spec = pod.raw.get("spec") or {}
    return ((spec.get("affinity") or {}).get("nodeAffinity")) or {}


def _int(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def expression_matches(expr: dict[str, Any], values_of: dict[str, str]) -> bool:
    """One NodeSelectorRequirement against a node's labels (or fields)."""
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = expr.get("values") or []
    present = key in values_of
    if op == "In":
        return present and values_of[key] in values
    if op == "NotIn":
        return not present or values_of[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        have, want = _int(values_of[key]), _int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False  # an unknown operator never matches, as in Kubernetes


def term_matches(term: dict[str, Any], node: NodeInfo) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(expression_matches(e, node.labels) for e in exprs):
        return False
    node_fields = {"metadata.name": node.name}
    return all(expression_matches(e, node_fields) for e in fields)


def required_terms(pod: PodInfo) -> tuple[dict[str, str], list[dict[str, Any]] | None]:
    """(nodeSelector, required terms or None when the pod states none)."""
    selector = (pod.raw.get("spec") or {}).get("nodeSelector") or {}
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = None if required is None else (required.get("nodeSelectorTerms") or [])
    return selector, terms


class Plugin:
    name = NAME

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
        preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
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
