"""Which workload a pod belongs to, from its metadata alone: the watcher and the scheduler
both call `workload_of`, so a profile the watcher learns is found by the pod the scheduler
places.

A pod's controller owner names the workload: a ReplicaSet `<deployment>-<pod-template-hash>`
stands for its Deployment (the Deployment controller names its ReplicaSets that way and puts the
hash on the pods' `pod-template-hash` label), so no ReplicaSet has to be read; StatefulSets,
DaemonSets and Jobs are their own workload. The revision (`pod-template-hash`, or
`controller-revision-hash` for StatefulSets and DaemonSets) tells one pod template from the next,
so a new rollout starts a new profile and can fall back on the previous one's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TEMPLATE_HASH = "pod-template-hash"
REVISION_HASH = "controller-revision-hash"
KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


@dataclass(frozen=True)
class Workload:
    namespace: str
    kind: str
    name: str
    revision: str = ""  # "" when the controller has no template revision (Job, bare RS)

    @property
    def key(self) -> str:
        """`namespace/Kind/name`: one workload across its revisions."""
        return f"{self.namespace}/{self.kind}/{self.name}"


def controller_of(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, or None (bare pods, malformed refs)."""
    refs = metadata.get("ownerReferences") or metadata.get("owner_references") or []
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind"):
            return ref
    return None


def workload_of(metadata: Mapping[str, Any]) -> Workload | None:
    """The pod's workload, or None when no controller of a known kind owns it."""
    namespace = metadata.get("namespace")
    ref = controller_of(metadata)
    if not namespace or ref is None or not isinstance(ref.get("name"), str):
        return None
    labels = metadata.get("labels") or {}
    kind, name = ref["kind"], ref["name"]
    if kind == "ReplicaSet":
        revision = str(labels.get(TEMPLATE_HASH) or "")
        suffix = f"-{revision}"
        if revision and name.endswith(suffix) and len(name) > len(suffix):
            return Workload(namespace, "Deployment", name[: -len(suffix)], revision)
        return Workload(namespace, "ReplicaSet", name, revision)
    if kind in ("StatefulSet", "DaemonSet"):
        return Workload(namespace, kind, name, str(labels.get(REVISION_HASH) or ""))
    if kind == "Job":
        return Workload(namespace, kind, name)
    return None


def parse_key(key: str) -> tuple[str, str, str] | None:
    """`namespace/Kind/name` -> its parts, or None when it is not one."""
    parts = key.split("/")
    if len(parts) != 3 or not all(parts) or parts[1] not in KINDS:
        return None
    return parts[0], parts[1], parts[2]
