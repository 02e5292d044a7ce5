"""NodeVolumeLimits: a node's CSI attach limits (upstream v1.34's CSILimits).

A node publishes its limit per CSI driver in its CSINode object,
`spec.drivers[].allocatable.count`; a node without one (or a driver without a count) has no
limit. Volumes are counted by unique name "driver/handle", so a volume shared by pods of a node
counts once: a claim bound to a CSI PV gives (csi.driver, csi.volumeHandle); an unbound claim,
or one whose PV is gone, counts as a new volume of its StorageClass's provisioner. The node is
infeasible, `node(s) exceed max volume count` (resolvable), when for some driver the volumes of
the placed pods plus the pod's volumes not already there exceed the limit.

As upstream: inline `csi:` volumes are not counted. Not done: in-tree volumes that upstream
translates to their CSI driver when the CSINode lists the plugin as migrated (AWS EBS, GCE PD,
Azure, Cinder, vSphere, Portworx) are not counted, and VolumeAttachment objects are not read.
"""

from __future__ import annotations

import secrets
from typing import Any

from scheduler.framework import CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.clusterindex import CSI_NODES, PVCS, PVS, STORAGE_CLASSES
from scheduler.plugins.helpers import volumes as vol

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"
# Provisioners whose volumes upstream counts only after translating them to CSI.
_IN_TREE = frozenset(
    "kubernetes.io/" + p
    for p in (
        "aws-ebs",
        "gce-pd",
        "azure-disk",
        "azure-file",
        "cinder",
        "vsphere-volume",
        "portworx-volume",
    )
)


class Plugin:
    name = NAME
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: None = None) -> None:
        # Upstream's stand-in handle for a volume not provisioned yet is random per scheduler
        # run, so it can never collide with a real handle.
        self._prefix = secrets.token_hex(16)

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        if not vol.claims(pod):
            return False
        waiting = vol.unsynced(snap, PVCS, PVS, STORAGE_CLASSES, CSI_NODES)
        if waiting is not None:
            return waiting
        mine: dict[str, str] = {}
        problem = self._attachable(pod, snap, mine, new=True)
        state[NAME] = (mine, problem)
        return True

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        mine, problem = state[NAME]
        if problem:
            return Status.reject(problem, unresolvable=True)
        if not mine:
            return Status.success()
        limits = _limits(vol.get(snap, CSI_NODES, node.name))
        if not limits:
            return Status.success()
        attached: dict[str, str] = {}
        for other in node.pods.values():
            # Most placed pods have no claim: skip them without a call (this loop runs for
            # every node with a limit, for every pod with a claim).
            found = other.memo.get(vol.MEMO)
            if found is None:
                found = vol.claims(other)
            if found:
                self._attachable(other, snap, attached, new=False)
        used: dict[str, int] = {}
        for driver in attached.values():
            used[driver] = used.get(driver, 0) + 1
        adding: dict[str, int] = {}
        for unique, driver in mine.items():
            if unique not in attached:
                adding[driver] = adding.get(driver, 0) + 1
        for driver, count in adding.items():
            limit = limits.get(driver)
            if limit is not None and used.get(driver, 0) + count > limit:
                return Status.reject(REASON)
        return Status.success()

    def _attachable(self, pod: PodInfo, snap: Snapshot, out: dict[str, str], new: bool) -> str:
        """Add the pod's attachable volumes (unique name -> driver) to `out`. For the pod being
        scheduled a missing or foreign claim is upstream's error; placed pods skip it."""
        for claim in vol.claims(pod):
            if not claim.name:
                if new:
                    return "PersistentVolumeClaim had no name"
                continue
            pvc = vol.get(snap, PVCS, f"{pod.namespace}/{claim.name}")
            if pvc is None:
                if new:
                    missing = vol.not_found(PVCS, claim.name)
                    return f"looking up PVC {pod.namespace}/{claim.name}: {missing}"
                continue
            if claim.ephemeral and not vol.controlled_by(pvc, pod.uid):
                if new:
                    return (
                        f"PVC {pod.namespace}/{claim.name} was not created for pod "
                        f"{pod.namespace}/{pod.name} (pod is not owner)"
                    )
                continue
            driver, handle = self._driver_of(pvc, snap)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        return ""

    def _driver_of(self, pvc: dict[str, Any], snap: Snapshot) -> tuple[str, str]:
        pv_name = vol.spec(pvc).get("volumeName")
        pv = vol.get(snap, PVS, pv_name) if pv_name else None
        if pv is not None:
            csi = vol.spec(pv).get("csi")
            if csi is None:
                return "", ""  # in-tree PV: counted by upstream only once translated
            return csi.get("driver") or "", csi.get("volumeHandle") or ""
        class_name = vol.claim_class(pvc)
        sc = vol.get(snap, STORAGE_CLASSES, class_name) if class_name else None
        if sc is None:
            return "", ""
        provisioner = sc.get("provisioner") or ""
        if provisioner in _IN_TREE:
            return "", ""
        m = vol.meta(pvc)
        return provisioner, f"{self._prefix}-{m.get('namespace')}/{m.get('name')}"


def _limits(csi_node: dict[str, Any] | None) -> dict[str, int]:
    if csi_node is None:
        return {}
    out = {}
    for driver in vol.spec(csi_node).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            out[driver.get("name", "")] = int(count)
    return out
