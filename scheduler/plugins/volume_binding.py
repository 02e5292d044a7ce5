"""VolumeBinding: a pod's PersistentVolumeClaims must be usable on the node (upstream v1.34).

PreFilter, per claim-backed volume in spec order (generic ephemeral volumes use the claim
"<pod>-<volume>", which must be controlled by the pod): a missing claim, a Lost one, or one being
deleted rejects the pod; then every claim that is not fully bound (spec.volumeName and the
`pv.kubernetes.io/bind-completed` annotation) must be WaitForFirstConsumer, else
`pod has unbound immediate PersistentVolumeClaims`. All of these are unresolvable.

Filter, per node: each bound claim's PV must exist and its `spec.nodeAffinity.required` match
the node's labels. The unbound WaitForFirstConsumer claims, smallest request first: one already
carrying `volume.kubernetes.io/selected-node` for another node fails at once; the others take
the smallest Available PV of their class whose size, volume mode, access modes, attributes
class, selector and node affinity fit (or the PV pre-bound to them); what is left must be
provisionable: a provisioner other than `kubernetes.io/no-provisioner` and `allowedTopologies`
matching the node. Reasons as upstream, all unresolvable, in its order.

WaitForFirstConsumer is built, not refused: a user asking for it expects a provisioner to create
the volume where the pod goes, which is only possible if the scheduler says where. Filter keeps,
per feasible node, what binding there would take; `pre_bind` (its PreBind extension point)
writes it for the chosen node before the pod's Binding: the `selected-node` annotation on claims
to provision, and the claimRef on a matched static PV, as upstream's PreBind does. Each write
carries the object's resourceVersion, so a concurrent change fails the binding (the pod is
requeued) instead of being overwritten. Unlike upstream, Ballast does not then wait up to
bindTimeoutSeconds for the PV controller to finish: the kubelet waits for the bound volume
anyway, and a binder thread held for minutes would stall other pods. Storage capacity
(CSIStorageCapacity) and in-tree to CSI translation of PVs are not checked.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler.framework import CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.clusterindex import PVCS, PVS, STORAGE_CLASSES
from scheduler.framework.labels import LabelSelector
from scheduler.plugins.helpers import volumes as vol
from shared.quantities import QuantityError, parse_quantity

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "VolumeBinding"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
TIMEOUT = (5.0, 15.0)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Args:
    bind_timeout_seconds: int = 600  # accepted for upstream configs; Ballast does not wait


def parse_args(f: Fields) -> Args:
    timeout = f.integer("bindTimeoutSeconds", 600, lo=0)
    if f.has("shape"):
        raise f.error("shape", "volume capacity scoring (StorageCapacityScoring) is not supported")
    f.finish()
    return Args(timeout)


@dataclass
class _Claims:
    """The pod's claims sorted as upstream's binder sorts them, read once per cycle."""

    bound: list[dict[str, Any]]
    delayed: list[dict[str, Any]]  # unbound, WaitForFirstConsumer, smallest request first
    volumes: list[_Candidates]  # per delayed claim


@dataclass
class _Candidates:
    """The PVs that could take one unbound claim on some node: every check of upstream's
    FindMatchingVolume but the node affinity, done once per cycle instead of once per node."""

    pre_bound: list[dict[str, Any]]  # claimRef names the claim; the first usable one decides
    available: list[dict[str, Any]]  # unclaimed, Available, fitting; smallest first


@dataclass
class Plan:
    """What binding the pod's claims on one node takes: static PVs to claim, claims to provision."""

    static: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    provisions: list[dict[str, Any]] = field(default_factory=list)


class Plugin:
    name = NAME
    filter_reads_pods = False  # the node, the pod and objects: never placed pods
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def pre_bind(self, api: client.ApiClient, pod: PodInfo, node: str) -> str:
        return pre_bind(api, pod, node)

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        pod.memo.pop(NAME, None)  # plans of an earlier cycle are stale
        claims = vol.claims(pod)
        if not claims:
            return False
        waiting = vol.unsynced(snap, PVCS, PVS, STORAGE_CLASSES)
        if waiting is not None:
            return waiting
        pvcs = []
        for claim in claims:
            pvc = vol.get(snap, PVCS, f"{pod.namespace}/{claim.name}")
            problem = _claim_problem(pod, claim, pvc)
            if problem:
                return Status.reject(problem, unresolvable=True)
            pvcs.append(pvc)
        bound, delayed = [], []
        for pvc in pvcs:
            if vol.fully_bound(pvc):
                bound.append(pvc)
            elif _delay_binding(pvc, snap) and not vol.spec(pvc).get("volumeName"):
                delayed.append(pvc)
            else:  # Immediate, or pre-bound to a PV: the PV controller's job, not ours
                return Status.reject(UNBOUND_IMMEDIATE, unresolvable=True)
        delayed.sort(key=_requested)
        by_class: dict[str, list[dict[str, Any]]] = {vol.claim_class(c): [] for c in delayed}
        if by_class:
            # upstream lists a class's PVs by spec.storageClassName (its cache's index)
            for pv in snap.cluster.objects[PVS].values():
                group = by_class.get(vol.spec(pv).get("storageClassName") or "")
                if group is not None:
                    group.append(pv)
            pod.memo[NAME] = {}
        volumes = [_candidates(c, by_class[vol.claim_class(c)]) for c in delayed]
        state[NAME] = _Claims(bound, delayed, volumes)
        return True

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        claims: _Claims = state[NAME]
        node_ok, pvs_found = _check_bound(claims.bound, node, snap)
        unbound_ok, plan = True, None
        if claims.delayed:
            unbound_ok, plan = _find_volumes(claims, node, snap)
        reasons = []
        if not node_ok:
            reasons.append(NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(BIND_CONFLICT)
        if not pvs_found:
            reasons.append(PV_NOT_EXIST)
        if reasons:
            return Status.reject(*reasons, unresolvable=True)
        if plan is not None and (plan.static or plan.provisions):
            pod.memo[NAME][node.name] = plan
        return Status.success()


def _claim_problem(pod: PodInfo, claim: vol.Claim, pvc: dict[str, Any] | None) -> str:
    """Upstream's podHasPVCs verdict on one claim, "" when it is usable."""
    if pvc is None:
        if claim.ephemeral:
            return (
                "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                f'"{claim.name}"'
            )
        return vol.not_found(PVCS, claim.name)
    if (pvc.get("status") or {}).get("phase") == "Lost":
        volume = vol.spec(pvc).get("volumeName") or ""
        return (
            f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume '
            f'"{volume}"'
        )
    if vol.meta(pvc).get("deletionTimestamp"):
        return f'persistentvolumeclaim "{claim.name}" is being deleted'
    if claim.ephemeral and not vol.controlled_by(pvc, pod.uid):
        return (
            f"PVC {pod.namespace}/{claim.name} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)"
        )
    return ""


def _delay_binding(pvc: dict[str, Any], snap: Snapshot) -> bool:
    """IsDelayBindingMode: no class, or a class that does not exist, binds immediately."""
    name = vol.claim_class(pvc)
    if not name:
        return False
    sc = vol.get(snap, STORAGE_CLASSES, name)
    return sc is not None and sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER


def _storage(resources: dict[str, Any] | None) -> Decimal:
    try:
        return parse_quantity((resources or {}).get("storage", 0))
    except QuantityError:
        return Decimal(0)


def _requested(pvc: dict[str, Any]) -> Decimal:
    return _storage((vol.spec(pvc).get("resources") or {}).get("requests"))


def _check_bound(bound: list[dict[str, Any]], node: NodeInfo, snap: Snapshot) -> tuple[bool, bool]:
    """(node affinity satisfied, every PV found); stops at the first failing claim."""
    for pvc in bound:
        pv = vol.get(snap, PVS, vol.spec(pvc)["volumeName"])
        if pv is None:
            return True, False
        if not vol.node_affinity_matches(pv, node.labels):
            return False, True
    return True, True


def _find_volumes(claims: _Claims, node: NodeInfo, snap: Snapshot) -> tuple[bool, Plan | None]:
    """FindPodVolumes for the unbound claims: (satisfied, what binding them here takes)."""
    to_match, plan = [], Plan()
    to_provision: list[dict[str, Any]] = []
    for pvc, candidates in zip(claims.delayed, claims.volumes, strict=True):
        selected = vol.annotations(pvc).get(vol.SELECTED_NODE)
        if selected is None:
            to_match.append((pvc, candidates))
        elif selected != node.name:
            return False, None  # a provisioner is already at work for another node
        else:
            to_provision.append(pvc)
    satisfied = True
    chosen: set[str] = set()
    for pvc, candidates in to_match:
        pv = _matching_volume(candidates, node, chosen)
        if pv is None:
            satisfied = False
            to_provision.append(pvc)
        else:
            chosen.add(vol.meta(pv).get("name", ""))
            plan.static.append((pv, pvc))
    if to_provision:
        # As upstream: provisioning may still satisfy what no static PV did.
        satisfied = _can_provision(to_provision, node, snap)
        plan.provisions = to_provision
    return satisfied, plan if satisfied else None


def _candidates(pvc: dict[str, Any], pvs: list[dict[str, Any]]) -> _Candidates:
    """component-helpers' FindMatchingVolume (scheduler path) up to the node affinity."""
    claim_spec, claim_meta = vol.spec(pvc), vol.meta(pvc)
    wanted = _requested(pvc)
    wanted_class = vol.claim_class(pvc)
    mode = claim_spec.get("volumeMode") or "Filesystem"
    vac = claim_spec.get("volumeAttributesClassName") or ""
    modes = set(claim_spec.get("accessModes") or ())
    raw_selector = claim_spec.get("selector")
    selector = LabelSelector.parse(raw_selector) if raw_selector is not None else None
    pre_bound, available = [], []
    for pv in pvs:
        pv_spec, pv_meta = vol.spec(pv), vol.meta(pv)
        ref = pv_spec.get("claimRef")
        if ref is not None and not _bound_to(ref, claim_meta):
            continue
        size = _storage(pv_spec.get("capacity"))
        if size < wanted:
            continue
        if (pv_spec.get("volumeMode") or "Filesystem") != mode:
            continue
        if (pv_spec.get("volumeAttributesClassName") or "") != vac:
            continue
        if pv_meta.get("deletionTimestamp"):
            continue
        if ref is not None:
            pre_bound.append(pv)
            continue
        if (pv.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(pv_meta.get("labels") or {}):
            continue
        if vol.volume_class(pv) != wanted_class:
            continue
        if not modes <= set(pv_spec.get("accessModes") or ()):
            continue
        available.append((size, pv))
    # Stable: among equal sizes the first listed wins, as upstream's strict comparison does.
    available.sort(key=lambda pair: pair[0])
    return _Candidates(pre_bound, [pv for _, pv in available])


def _matching_volume(
    candidates: _Candidates, node: NodeInfo, chosen: set[str]
) -> dict[str, Any] | None:
    """The PV FindMatchingVolume picks on `node`: a PV pre-bound to the claim decides alone
    (None when the node does not suit it), else the smallest available one the node suits."""
    for pv in candidates.pre_bound:
        if vol.meta(pv).get("name") not in chosen:
            return pv if vol.node_affinity_matches(pv, node.labels) else None
    for pv in candidates.available:
        if vol.meta(pv).get("name") not in chosen and vol.node_affinity_matches(pv, node.labels):
            return pv
    return None


def _bound_to(ref: dict[str, Any], claim_meta: dict[str, Any]) -> bool:
    """IsVolumeBoundToClaim: same name and namespace, and the uid when the ref has one."""
    if ref.get("name") != claim_meta.get("name"):
        return False
    if ref.get("namespace") != claim_meta.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == claim_meta.get("uid")


def _can_provision(pvcs: list[dict[str, Any]], node: NodeInfo, snap: Snapshot) -> bool:
    """checkVolumeProvisions without the capacity check: a provisioner, allowed topology."""
    for pvc in pvcs:
        sc = vol.get(snap, STORAGE_CLASSES, vol.claim_class(pvc))
        if sc is None:
            return False
        if (sc.get("provisioner") or "") in ("", vol.NO_PROVISIONER):
            return False
        if not _topology_matches(sc.get("allowedTopologies") or [], node.labels):
            return False
    return True


def _topology_matches(terms: list[dict[str, Any]], labels: dict[str, str]) -> bool:
    """MatchTopologySelectorTerms: no terms match all; terms ORed; an empty term matches none."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if exprs and all(labels.get(e.get("key", "")) in (e.get("values") or ()) for e in exprs):
            return True
    return False


# --- PreBind: on a binder thread, just before the pod's Binding --------------------------
def pre_bind(api: client.ApiClient, pod: PodInfo, node: str) -> str:
    """Write what the chosen node's plan needs; "" when done, else why the bind must wait."""
    plan = (pod.memo.get(NAME) or {}).get(node)
    if plan is None:
        return ""
    core = client.CoreV1Api(api)
    for pv, pvc in plan.static:
        name = vol.meta(pv).get("name", "")
        patch = _claim_ref_patch(pv, pvc)
        if patch is None:
            continue
        try:
            core.patch_persistent_volume(
                name,
                patch,
                _content_type="application/merge-patch+json",
                _preload_content=False,
                _request_timeout=TIMEOUT,
            )
        except ApiException as exc:
            return f"binding persistentvolume {name}: {_api_message(exc)}"
    for pvc in plan.provisions:
        if vol.annotations(pvc).get(vol.SELECTED_NODE) == node:
            continue
        m = vol.meta(pvc)
        patch = {
            "metadata": {
                "resourceVersion": m.get("resourceVersion"),
                "annotations": {vol.SELECTED_NODE: node},
            }
        }
        try:
            core.patch_namespaced_persistent_volume_claim(
                m.get("name", ""),
                m.get("namespace", ""),
                patch,
                _content_type="application/merge-patch+json",
                _preload_content=False,
                _request_timeout=TIMEOUT,
            )
        except ApiException as exc:
            return f"selecting node for persistentvolumeclaim {m.get('name')}: {_api_message(exc)}"
        log.info("%s: node %s selected for claim %s", pod.key, node, m.get("name"))
    return ""


def _claim_ref_patch(pv: dict[str, Any], pvc: dict[str, Any]) -> dict[str, Any] | None:
    """GetBindVolumeToClaim as a merge patch (None: nothing to change): the claimRef, and the
    controller's mark when the PV was not pre-bound to the claim by its user."""
    m = vol.meta(pvc)
    ref = vol.spec(pv).get("claimRef")
    patch: dict[str, Any] = {"metadata": {"resourceVersion": vol.meta(pv).get("resourceVersion")}}
    if ref is None or any(ref.get(k) != m.get(k) for k in ("name", "namespace", "uid")):
        patch["spec"] = {
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": m.get("namespace"),
                "name": m.get("name"),
                "uid": m.get("uid"),
                "resourceVersion": m.get("resourceVersion"),
            }
        }
    pre_bound = ref is not None and _bound_to(ref, m)
    if not pre_bound and vol.BOUND_BY_CONTROLLER not in vol.annotations(pv):
        patch["metadata"]["annotations"] = {vol.BOUND_BY_CONTROLLER: "yes"}
    return patch if len(patch) > 1 or "annotations" in patch["metadata"] else None


def _api_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body).get("message") or exc.status)
    except (TypeError, ValueError, AttributeError):
        return f"HTTP {exc.status} {exc.reason}"
