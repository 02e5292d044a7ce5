"""Pod fields Ballast does not implement: such a pod is refused loudly, never placed as if the
field were absent.

kube-scheduler honours these; a scheduler that silently ignored them would bind a pod where
its claim cannot be allocated or its pod-level resources do not fit. The refusal is a PreFilter
rejection: a FailedScheduling event and PodScheduled=False naming the field, and the pod stays
pending (the user can switch it to a scheduler that supports the field).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.framework.status import Status

# (field path as the user wrote it, test on the pod's spec, why it matters)
_FIELDS: tuple[tuple[str, Callable[[dict[str, Any]], bool], str], ...] = (
    (
        "spec.resourceClaims",
        lambda spec: bool(spec.get("resourceClaims")),
        "dynamic resource allocation (DRA) is not implemented",
    ),
    (
        "spec.resources",
        lambda spec: bool(spec.get("resources")),
        "pod-level resources are not implemented",
    ),
    (
        "spec.containers[].resources.claims",
        lambda spec: any(
            (c.get("resources") or {}).get("claims")
            for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        ),
        "dynamic resource allocation (DRA) is not implemented",
    ),
)


def unsupported_fields(pod_raw: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, why) for every field of the pod that Ballast cannot honour."""
    spec = pod_raw.get("spec") or {}
    return [(path, why) for path, used, why in _FIELDS if used(spec)]


def refusal(pod_raw: dict[str, Any]) -> Status | None:
    """The whole-pod rejection for a pod using unsupported fields, or None."""
    found = unsupported_fields(pod_raw)
    if not found:
        return None
    text = "; ".join(f"{path}: {why}" for path, why in found)
    return Status.reject(
        f"pod uses fields this scheduler does not support ({text}); "
        "use a scheduler that implements them",
        unresolvable=True,
    )
