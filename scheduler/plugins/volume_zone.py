"""VolumeZone: a bound PV's zone and region labels must match the node's (upstream v1.34).

PreFilter reads, for each `persistentVolumeClaim` volume (not generic ephemeral ones, as
upstream), the bound PV's labels among `topology.kubernetes.io/zone|region` and the
`failure-domain.beta.kubernetes.io/zone|region` ones; a value may list several zones joined by
"__". An unbound claim of a WaitForFirstConsumer class is skipped (VolumeBinding places it); any
other unbound claim, a missing claim, class or PV rejects the pod, unresolvably, with upstream's
texts. Filter: a node with none of the four labels passes; otherwise every PV label must find
the node's value (under the same key, or its GA name for a beta key) among its zones.
"""

from __future__ import annotations

from scheduler.framework import CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.clusterindex import PVCS, PVS, STORAGE_CLASSES
from scheduler.plugins.helpers import volumes as vol

NAME = "VolumeZone"
REASON = "node(s) had no available volume zone"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
_MULTI_ZONE_SEPARATOR = "__"

Topology = tuple[str, frozenset[str]]  # (label key, the PV's values)


class Plugin:
    name = NAME
    filter_reads_pods = False  # the node, the pod and objects: never placed pods
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: None = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        names = [c.name for c in vol.claims(pod) if not c.ephemeral]
        if not names:
            return False
        waiting = vol.unsynced(snap, PVCS, PVS, STORAGE_CLASSES)
        if waiting is not None:
            return waiting
        found: list[Topology] = []
        for name in names:
            problem = _topologies(pod, name, snap, found)
            if problem:
                return Status.reject(problem, unresolvable=True)
        state[NAME] = found
        return bool(found)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        labels = node.labels
        if not any(key in labels for key in _LABELS):
            return Status.success()
        for key, zones in state[NAME]:
            value = labels.get(key)
            if value is None:
                value = labels.get(_GA.get(key, key))
            if value is None or value not in zones:
                return Status.reject(REASON, unresolvable=True)
        return Status.success()


def _topologies(pod: PodInfo, claim: str, snap: Snapshot, out: list[Topology]) -> str:
    """Append the zone labels of the claim's PV to `out`; returns upstream's text on a problem."""
    if not claim:
        return "PersistentVolumeClaim had no name"
    pvc = vol.get(snap, PVCS, f"{pod.namespace}/{claim}")
    if pvc is None:
        return vol.not_found(PVCS, claim)
    pv_name = vol.spec(pvc).get("volumeName") or ""
    if not pv_name:
        class_name = vol.claim_class(pvc)
        if not class_name:
            return "PersistentVolumeClaim had no pv name and storageClass name"
        sc = vol.get(snap, STORAGE_CLASSES, class_name)
        if sc is None:
            return vol.not_found(STORAGE_CLASSES, class_name)
        if sc.get("volumeBindingMode") == "WaitForFirstConsumer":
            return ""
        return "PersistentVolume had no name"
    pv = vol.get(snap, PVS, pv_name)
    if pv is None:
        return vol.not_found(PVS, pv_name)
    labels = vol.meta(pv).get("labels") or {}
    for key in _LABELS:
        if key in labels:
            zones = [z.strip() for z in labels[key].split(_MULTI_ZONE_SEPARATOR)]
            if all(zones):  # upstream ignores a value with an empty element
                out.append((key, frozenset(zones)))
    return ""
