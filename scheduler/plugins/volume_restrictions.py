"""VolumeRestrictions: volumes that cannot be shared (upstream v1.34).

ReadWriteOncePod: a claim with that access mode already used by a placed pod (bound or
assumed, anywhere in the cluster) makes every node infeasible for another pod using it,
`node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already
in-use by another pod` (resolvable: the other pod may go). A `persistentVolumeClaim` volume whose
claim does not exist rejects the pod in PreFilter (unresolvable, upstream's text).

The in-tree disks upstream still checks, on the node only: a GCE PD of the same name, an AWS
EBS volume of the same id, an iSCSI disk of the same IQN, an RBD image of the same pool and
image with a shared monitor, unless both mounts are read-only (EBS: always a conflict);
`node(s) had no available disk`.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework import CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.clusterindex import PVCS
from scheduler.plugins.helpers import volumes as vol

NAME = "VolumeRestrictions"
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
_IN_TREE = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
_OWN = NAME + ".own"  # PodInfo.memo key


class Plugin:
    name = NAME
    skip_holds_with_fewer_pods = True  # its skip reads only the pod (no in-tree disk, no claim)

    def __init__(self, args: None = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        in_tree, names = _own_volumes(pod)
        if not in_tree and not names:
            return False
        conflicts = 0
        if names:
            waiting = vol.unsynced(snap, PVCS)
            if waiting is not None:
                return waiting
            rwop = set()
            for name in names:
                pvc = vol.get(snap, PVCS, f"{pod.namespace}/{name}")
                if pvc is None:
                    return Status.reject(vol.not_found(PVCS, name), unresolvable=True)
                if "ReadWriteOncePod" in (vol.spec(pvc).get("accessModes") or ()):
                    rwop.add(name)
            if rwop:
                conflicts = _claims_in_use(pod.namespace, rwop, snap)
        if not in_tree and not conflicts:
            return False
        state[NAME] = (in_tree, conflicts)
        return True

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        in_tree, conflicts = state[NAME]
        for mine in in_tree:
            for other in node.pods.values():
                if any(_conflict(mine, theirs) for theirs in _volumes(other)):
                    return Status.reject(DISK_CONFLICT)
        if conflicts:
            return Status.reject(RWOP_CONFLICT)
        return Status.success()


def _volumes(pod: PodInfo) -> list[dict[str, Any]]:
    return (pod.raw.get("spec") or {}).get("volumes") or []


def _own_volumes(pod: PodInfo) -> tuple[list[dict[str, Any]], list[str]]:
    """The pod's in-tree disks and the names of its claims (not ephemeral), read once per pod:
    this PreFilter reads placed pods (claims in use), so a preemption runs it again on each of
    its hundreds of trials, and nearly every pod has neither (the API's service-account
    volume is projected)."""
    found = pod.memo.get(_OWN)
    if found is None:
        in_tree = [v for v in _volumes(pod) if any(k in v for k in _IN_TREE)]
        names = [c.name for c in vol.claims(pod) if not c.ephemeral]
        found = pod.memo[_OWN] = (in_tree, names)
    return found


def _claims_in_use(namespace: str, names: set[str], snap: Snapshot) -> int:
    """How many of `names` placed pods of the namespace use (upstream's IsPVCUsedByPods)."""
    used: set[str] = set()
    for other in snap.cluster.in_namespace(namespace).values():
        for claim in vol.claims(other):
            if not claim.ephemeral and claim.name in names:
                used.add(claim.name)
    return len(used)


def _conflict(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """isVolumeConflict for one pair of volumes."""
    for kind, same in _SAME.items():
        a, b = mine.get(kind), theirs.get(kind)
        if a is not None and b is not None and same(a, b):
            if kind == "awsElasticBlockStore":
                return True
            return not (a.get("readOnly") and b.get("readOnly"))
    return False


def _same_rbd(a: dict[str, Any], b: dict[str, Any]) -> bool:
    shared = set(a.get("monitors") or ()) & set(b.get("monitors") or ())
    return bool(shared) and a.get("pool") == b.get("pool") and a.get("image") == b.get("image")


_SAME = {
    "gcePersistentDisk": lambda a, b: a.get("pdName") == b.get("pdName"),
    "awsElasticBlockStore": lambda a, b: a.get("volumeID") == b.get("volumeID"),
    "iscsi": lambda a, b: a.get("iqn") == b.get("iqn"),
    "rbd": _same_rbd,
}
