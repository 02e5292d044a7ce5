"""Taints against tolerations, as Kubernetes matches them: TaintToleration's filter and the
plugins that look at taints themselves (NodeReady, NodeUnschedulable, PodTopologySpread's
nodeTaintsPolicy)."""

from __future__ import annotations

from typing import Any

from scheduler.framework import PodInfo


def tolerations(pod: PodInfo) -> list[dict[str, Any]]:
    return (pod.raw.get("spec") or {}).get("tolerations") or []


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """Kubernetes' ToleratesTaint: effect and key must match (empty matches all), then value
    equality unless the operator is Exists."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def tolerated(tols: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in tols)
