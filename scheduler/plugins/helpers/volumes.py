"""What the four volume plugins share: a pod's claims, lookups in the cache's volume stores,
and the storage helpers of Kubernetes' component-helpers (claim class, PV node affinity).

Not a plugin. VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits read the
PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes the cache lists and
watches into `Snapshot.cluster.objects`. A store whose first list has not arrived would look
empty and reject pods for claims that exist, so `unsynced` keeps such pods waiting, retryably.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.framework import PodInfo, Snapshot, Status
from scheduler.framework.clusterindex import PVCS, PVS, STORAGE_CLASSES
from scheduler.plugins.helpers.node_affinity_terms import expression_matches

BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
MEMO = "volumes"  # PodInfo.memo key of the parsed claims

# How the API server words a missing object (the text upstream's listers return).
_RESOURCE = {
    PVCS: "persistentvolumeclaim",
    PVS: "persistentvolume",
    STORAGE_CLASSES: "storageclass.storage.k8s.io",
}


@dataclass(frozen=True)
class Claim:
    """A pod volume backed by a PersistentVolumeClaim (named, or a generic ephemeral one)."""

    volume: str
    name: str
    ephemeral: bool


def claims(pod: PodInfo) -> tuple[Claim, ...]:
    """The pod's claim-backed volumes in spec order, parsed once per PodInfo."""
    found = pod.memo.get(MEMO)
    if found is None:
        found = pod.memo[MEMO] = tuple(_claims(pod))
    return found


def _claims(pod: PodInfo) -> list[Claim]:
    out = []
    for vol in (pod.raw.get("spec") or {}).get("volumes") or ():
        name = vol.get("name", "")
        if vol.get("persistentVolumeClaim") is not None:
            out.append(Claim(name, vol["persistentVolumeClaim"].get("claimName") or "", False))
        elif vol.get("ephemeral") is not None:
            # The ephemeral volume controller names the claim "<pod>-<volume>".
            out.append(Claim(name, f"{pod.name}-{name}", True))
    return out


def unsynced(snap: Snapshot, *kinds: str) -> Status | None:
    """A retryable rejection while one of `kinds` has not been listed yet."""
    missing = [k for k in kinds if k not in snap.cluster.synced]
    if not missing:
        return None
    return Status.reject(f"waiting for the scheduler's {', '.join(missing)} cache to sync")


def get(snap: Snapshot, kind: str, key: str) -> dict[str, Any] | None:
    return snap.cluster.objects[kind].get(key)


def not_found(kind: str, name: str) -> str:
    return f'{_RESOURCE[kind]} "{name}" not found'


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def claim_class(pvc: dict[str, Any]) -> str:
    """The claim's StorageClass name: the beta annotation wins over spec.storageClassName."""
    ann = annotations(pvc)
    if BETA_STORAGE_CLASS in ann:
        return ann[BETA_STORAGE_CLASS]
    return spec(pvc).get("storageClassName") or ""


def volume_class(pv: dict[str, Any]) -> str:
    ann = annotations(pv)
    if BETA_STORAGE_CLASS in ann:
        return ann[BETA_STORAGE_CLASS]
    return spec(pv).get("storageClassName") or ""


def fully_bound(pvc: dict[str, Any]) -> bool:
    """Bound as upstream's binder sees it: a volume name and the PV controller's mark."""
    return bool(spec(pvc).get("volumeName")) and BIND_COMPLETED in annotations(pvc)


def controlled_by(obj: dict[str, Any], uid: str) -> bool:
    """metav1.IsControlledBy: the controller owner reference carries `uid`."""
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("uid") == uid
    return False


def node_affinity_matches(pv: dict[str, Any], labels: dict[str, str]) -> bool:
    """component-helpers' CheckNodeAffinity: the PV's required terms against node labels.

    Upstream builds a Node with labels only, so a matchFields term sees an empty name."""
    required = (spec(pv).get("nodeAffinity") or {}).get("required")
    if required is None:
        return True
    fields = {"metadata.name": ""}
    for term in required.get("nodeSelectorTerms") or ():
        exprs = term.get("matchExpressions") or []
        by_field = term.get("matchFields") or []
        if not exprs and not by_field:
            continue  # an empty term matches nothing
        if all(expression_matches(e, labels) for e in exprs) and all(
            expression_matches(e, fields) for e in by_field
        ):
            return True
    return False
