"""Node selector terms matched against a node, as Kubernetes matches them: NodeAffinity's filter
and score, PodTopologySpread's nodeAffinityPolicy and the volume plugins' PV node affinity."""

from __future__ import annotations

from typing import Any

from scheduler.framework import NodeInfo, PodInfo


def node_affinity(pod: PodInfo) -> dict[str, Any]:
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
    required = node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = None if required is None else (required.get("nodeSelectorTerms") or [])
    return selector, terms
