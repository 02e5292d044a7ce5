"""VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits on upstream's cases,
with the volume objects put into the cluster index by hand."""

from __future__ import annotations

from typing import Any

from scheduler.framework import CycleState, Snapshot, Status, snapshot_of
from scheduler.framework.clusterindex import CSI_NODES, PVCS, PVS, STORAGE_CLASSES, object_key
from scheduler.plugins import (
    node_volume_limits,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from scheduler.plugins.helpers.volumes import SELECTED_NODE
from tests.unit.plugin_helpers import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
WFFC, IMMEDIATE = "WaitForFirstConsumer", "Immediate"


# --- builders -----------------------------------------------------------------------------
def pvc(
    name: str,
    sc: str | None = "fast",
    volume: str = "",
    bound: bool = False,
    size: str = "1Gi",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
    }
    if sc is not None:
        spec["storageClassName"] = sc
    if volume:
        spec["volumeName"] = volume
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "annotations": ann,
            **meta,
        },
        "spec": spec,
        "status": {"phase": "Bound" if bound else "Pending"},
    }


def pv(
    name: str,
    sc: str = "fast",
    size: str = "1Gi",
    zones: list[str] | None = None,
    labels: dict[str, str] | None = None,
    claim: str | None = None,
    phase: str = "Available",
    csi: tuple[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "storageClassName": sc,
        "capacity": {"storage": size},
        "accessModes": list(modes),
    }
    if zones is not None:
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": zones}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    if claim is not None:
        spec["claimRef"] = {"namespace": "ns", "name": claim}
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    return {
        "metadata": {"name": name, "labels": labels or {}, "resourceVersion": "3"},
        "spec": spec,
        "status": {"phase": phase},
    }


def storage_class(
    name: str = "fast",
    mode: str = WFFC,
    provisioner: str = "csi.example.com",
    zones: list[str] | None = None,
) -> dict[str, Any]:
    sc: dict[str, Any] = {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones is not None:
        sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    return sc


def csi_node(name: str, driver: str, count: int) -> dict[str, Any]:
    drivers = [{"name": driver, "nodeID": name, "allocatable": {"count": count}}]
    return {"metadata": {"name": name}, "spec": {"drivers": drivers}}


def claim_pod(name: str, *claims: str, ephemeral: tuple[str, ...] = (), **kw: Any):
    volumes: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    volumes += [{"name": e, "ephemeral": {"volumeClaimTemplate": {}}} for e in ephemeral]
    return make_pod(name, volumes=volumes, **kw)


def zoned_nodes():
    return [make_node(f"nz{z}", labels={ZONE: f"z{z}"}) for z in (1, 2, 3)]


def cluster(nodes, *objects: tuple[str, dict[str, Any]], placed=()) -> Snapshot:
    snap = snapshot_of(nodes, list(placed))
    for kind, obj in objects:
        snap.cluster.put(kind, object_key(obj), obj)
    return snap


def feasible(plugin, pod, snap) -> tuple[list[str] | Status, dict[str, tuple[str, ...]]]:
    """Node names passing the plugin, or the PreFilter's rejection; and per-node reasons."""
    state = CycleState()
    verdict = plugin.pre_filter(state, pod, snap)
    if isinstance(verdict, Status):
        return verdict, {}
    if not verdict:
        return sorted(snap.nodes), {}
    ok, why = [], {}
    for node in snap.nodes.values():
        status = plugin.filter(state, pod, node, snap)
        if status.ok:
            ok.append(node.name)
        else:
            why[node.name] = status.reasons
    return sorted(ok), why


# --- VolumeBinding ------------------------------------------------------------------------
def test_binding_skips_pods_without_claims():
    snap = cluster(zoned_nodes())
    assert volume_binding.Plugin().pre_filter(CycleState(), make_pod("p"), snap) is False


def test_binding_missing_claim_lost_deleting_and_foreign_ephemeral():
    snap = cluster(
        zoned_nodes(),
        (PVCS, {**pvc("lost", volume="gone"), "status": {"phase": "Lost"}}),
        (PVCS, pvc("dying", deletionTimestamp="2026-01-01T00:00:00Z")),
        (PVCS, pvc("p-scratch", ownerReferences=[{"uid": "someone", "controller": True}])),
    )
    plugin = volume_binding.Plugin()
    cases = [
        (("p", "nope"), (), 'persistentvolumeclaim "nope" not found'),
        (
            ("p", "lost"),
            (),
            'persistentvolumeclaim "lost" bound to non-existent persistentvolume "gone"',
        ),
        (("p", "dying"), (), 'persistentvolumeclaim "dying" is being deleted'),
        (
            ("q",),
            ("scratch",),
            "waiting for ephemeral volume controller to create the persistentvolumeclaim "
            '"q-scratch"',
        ),
        (("p",), ("scratch",), "PVC ns/p-scratch was not created for pod ns/p (pod is not owner)"),
    ]
    for args, ephemeral, text in cases:
        verdict, _ = feasible(plugin, claim_pod(*args, ephemeral=ephemeral), snap)
        assert isinstance(verdict, Status) and verdict.reasons == (text,)
        assert verdict.unresolvable


def test_binding_unbound_immediate_claims_and_prebound_claims():
    snap = cluster(
        zoned_nodes(),
        (STORAGE_CLASSES, storage_class("std", mode=IMMEDIATE)),
        (STORAGE_CLASSES, storage_class("late")),
        (PVCS, pvc("a", sc="std")),
        (PVCS, pvc("b", sc=None)),
        (PVCS, pvc("c", sc="unknown-class")),
        (PVCS, pvc("d", sc="late", volume="pv-d")),  # pre-bound, not yet bound
    )
    for claim in "abcd":
        verdict, _ = feasible(volume_binding.Plugin(), claim_pod("p", claim), snap)
        assert verdict.reasons == ("pod has unbound immediate PersistentVolumeClaims",)


def test_binding_bound_pv_node_affinity_pins_the_zone():
    snap = cluster(
        zoned_nodes(),
        (PVCS, pvc("data", volume="pv1", bound=True)),
        (PVS, pv("pv1", zones=["z2"], claim="data", phase="Bound")),
    )
    ok, why = feasible(volume_binding.Plugin(), claim_pod("p", "data"), snap)
    assert ok == ["nz2"]
    assert why["nz1"] == ("node(s) didn't match PersistentVolume's node affinity",)


def test_binding_bound_claim_whose_pv_is_gone():
    snap = cluster(zoned_nodes(), (PVCS, pvc("data", volume="pv1", bound=True)))
    ok, why = feasible(volume_binding.Plugin(), claim_pod("p", "data"), snap)
    assert ok == []
    assert set(why.values()) == {
        ("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",)
    }


def test_binding_match_fields_in_pv_affinity_see_no_node_name():
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["nz1"]}]}
    volume = pv("pv1", claim="data", phase="Bound")
    volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    snap = cluster(zoned_nodes(), (PVCS, pvc("data", volume="pv1", bound=True)), (PVS, volume))
    assert feasible(volume_binding.Plugin(), claim_pod("p", "data"), snap)[0] == []


def test_binding_wffc_static_pv_or_provisioning_by_allowed_topology():
    nodes = zoned_nodes()
    local = cluster(
        nodes,
        (STORAGE_CLASSES, storage_class("local", provisioner="kubernetes.io/no-provisioner")),
        (PVCS, pvc("data", sc="local", size="5Gi")),
        (PVS, pv("small", sc="local", size="1Gi", zones=["z1"])),
        (PVS, pv("big", sc="local", size="10Gi", zones=["z3"])),
        (PVS, pv("taken", sc="local", size="10Gi", zones=["z2"], claim="other")),
    )
    ok, why = feasible(volume_binding.Plugin(), claim_pod("p", "data"), local)
    assert ok == ["nz3"]
    assert why["nz2"] == ("node(s) didn't find available persistent volumes to bind",)
    dynamic = cluster(
        nodes,
        (STORAGE_CLASSES, storage_class("zonal", zones=["z1", "z2"])),
        (PVCS, pvc("data", sc="zonal")),
    )
    assert feasible(volume_binding.Plugin(), claim_pod("p", "data"), dynamic)[0] == ["nz1", "nz2"]


def test_binding_matching_prefers_the_smallest_fitting_pv_and_checks_modes_and_selector():
    pod = claim_pod("p", "data")
    claim = pvc("data", sc="local", size="2Gi", modes=("ReadWriteOncePod",))
    claim["spec"]["selector"] = {"matchLabels": {"tier": "gold"}}
    snap = cluster(
        [make_node("n1")],
        (STORAGE_CLASSES, storage_class("local", provisioner="kubernetes.io/no-provisioner")),
        (PVCS, claim),
        (
            PVS,
            pv(
                "huge", sc="local", size="9Gi", labels={"tier": "gold"}, modes=("ReadWriteOncePod",)
            ),
        ),
        (
            PVS,
            pv(
                "fits", sc="local", size="3Gi", labels={"tier": "gold"}, modes=("ReadWriteOncePod",)
            ),
        ),
        (PVS, pv("rwo", sc="local", size="2Gi", labels={"tier": "gold"})),
        (PVS, pv("plain", sc="local", size="2Gi", modes=("ReadWriteOncePod",))),
        (PVS, pv("bound", sc="local", size="2Gi", labels={"tier": "gold"}, phase="Bound")),
    )
    plugin, state = volume_binding.Plugin(), CycleState()
    assert plugin.pre_filter(state, pod, snap) is True
    assert plugin.filter(state, pod, snap.nodes["n1"], snap).ok
    plan = pod.memo[volume_binding.NAME]["n1"]
    assert [v["metadata"]["name"] for v, _ in plan.static] == ["fits"]
    assert plan.provisions == []


def test_binding_a_pv_prebound_to_the_claim_decides_alone():
    # upstream: a PV whose claimRef names the claim wins, or the node fails, whatever else fits
    snap = cluster(
        zoned_nodes(),
        (STORAGE_CLASSES, storage_class("local", provisioner="kubernetes.io/no-provisioner")),
        (PVCS, pvc("data", sc="local")),
        (PVS, pv("mine", sc="local", zones=["z1"], claim="data", phase="Pending")),
        (PVS, pv("spare", sc="local", zones=["z2"])),
    )
    assert feasible(volume_binding.Plugin(), claim_pod("p", "data"), snap)[0] == ["nz1"]


def test_binding_claim_with_a_selected_node_stays_there():
    snap = cluster(
        zoned_nodes(),
        (STORAGE_CLASSES, storage_class()),
        (PVCS, pvc("data", annotations={SELECTED_NODE: "nz2"})),
    )
    ok, why = feasible(volume_binding.Plugin(), claim_pod("p", "data"), snap)
    assert ok == ["nz2"]
    assert why["nz1"] == ("node(s) didn't find available persistent volumes to bind",)


def test_binding_plan_per_node_for_prebind():
    pod = claim_pod("p", "data", "logs")
    snap = cluster(
        zoned_nodes(),
        (STORAGE_CLASSES, storage_class()),
        (PVCS, pvc("data")),
        (PVCS, pvc("logs", volume="pv-logs", bound=True)),
        (PVS, pv("pv-logs", claim="logs", phase="Bound")),
    )
    plugin, state = volume_binding.Plugin(), CycleState()
    plugin.pre_filter(state, pod, snap)
    for node in snap.nodes.values():
        assert plugin.filter(state, pod, node, snap).ok
    plans = pod.memo[volume_binding.NAME]
    assert sorted(plans) == ["nz1", "nz2", "nz3"]
    assert [c["metadata"]["name"] for c in plans["nz1"].provisions] == ["data"]
    # a new cycle forgets the old plans
    plugin.pre_filter(CycleState(), pod, snap)
    assert pod.memo[volume_binding.NAME] == {}


def test_claim_ref_patch_only_when_something_changes():
    claim = pvc("data")
    patch = volume_binding._claim_ref_patch(pv("pv1"), claim)
    assert patch["spec"]["claimRef"]["uid"] == "uid-data"
    assert patch["metadata"] == {
        "resourceVersion": "3",
        "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"},
    }
    prebound = pv("pv1", claim="data")
    prebound["spec"]["claimRef"]["uid"] = "uid-data"
    assert volume_binding._claim_ref_patch(prebound, claim) is None


def test_binding_waits_for_unsynced_stores():
    snap = cluster(zoned_nodes())
    snap.cluster.synced.discard(PVS)
    verdict, _ = feasible(volume_binding.Plugin(), claim_pod("p", "data"), snap)
    assert verdict.reasons == ("waiting for the scheduler's persistentvolumes cache to sync",)
    assert not verdict.unresolvable


# --- VolumeZone ---------------------------------------------------------------------------
def test_zone_matches_pv_zone_and_multi_zone_values():
    volume = pv("pv1", claim="data", phase="Bound", labels={ZONE: "z1__z3"})
    snap = cluster(
        [*zoned_nodes(), make_node("bare")],
        (PVCS, pvc("data", volume="pv1", bound=True)),
        (PVS, volume),
    )
    ok, why = feasible(volume_zone.Plugin(), claim_pod("p", "data"), snap)
    assert ok == ["bare", "nz1", "nz3"]  # a node without zone labels is not judged
    assert why["nz2"] == ("node(s) had no available volume zone",)


def test_zone_beta_label_on_pv_matches_ga_label_on_node():
    volume = pv("pv1", phase="Bound", labels={"failure-domain.beta.kubernetes.io/zone": "z2"})
    snap = cluster(zoned_nodes(), (PVCS, pvc("data", volume="pv1", bound=True)), (PVS, volume))
    assert feasible(volume_zone.Plugin(), claim_pod("p", "data"), snap)[0] == ["nz2"]


def test_zone_prefilter_texts():
    snap = cluster(
        zoned_nodes(),
        (STORAGE_CLASSES, storage_class("late")),
        (STORAGE_CLASSES, storage_class("now", mode=IMMEDIATE)),
        (PVCS, pvc("wffc", sc="late")),
        (PVCS, pvc("imm", sc="now")),
        (PVCS, pvc("nocls", sc=None)),
        (PVCS, pvc("badcls", sc="nope")),
        (PVCS, pvc("nopv", volume="ghost", bound=True)),
    )
    plugin = volume_zone.Plugin()
    assert plugin.pre_filter(CycleState(), claim_pod("p", "wffc"), snap) is False
    cases = {
        "imm": "PersistentVolume had no name",
        "nocls": "PersistentVolumeClaim had no pv name and storageClass name",
        "badcls": 'storageclass.storage.k8s.io "nope" not found',
        "nopv": 'persistentvolume "ghost" not found',
        "absent": 'persistentvolumeclaim "absent" not found',
    }
    for claim, text in cases.items():
        verdict = plugin.pre_filter(CycleState(), claim_pod("p", claim), snap)
        assert verdict.reasons == (text,) and verdict.unresolvable


# --- VolumeRestrictions -------------------------------------------------------------------
def test_rwop_claim_in_use_rejects_every_node():
    nodes = zoned_nodes()
    holder = claim_pod("holder", "solo")
    snap = cluster(
        nodes,
        (PVCS, pvc("solo", modes=("ReadWriteOncePod",))),
        (PVCS, pvc("shared")),
        placed=[(holder, "nz1"), (claim_pod("other", "shared"), "nz2")],
    )
    plugin = volume_restrictions.Plugin()
    ok, why = feasible(plugin, claim_pod("p", "solo"), snap)
    assert ok == [] and set(why.values()) == {(volume_restrictions.RWOP_CONFLICT,)}
    assert feasible(plugin, claim_pod("p", "shared"), snap)[0] == ["nz1", "nz2", "nz3"]
    snap.cluster.remove_pod(holder.uid)
    assert feasible(plugin, claim_pod("p", "solo"), snap)[0] == ["nz1", "nz2", "nz3"]
    verdict, _ = feasible(plugin, claim_pod("p", "absent"), snap)
    assert verdict.reasons == ('persistentvolumeclaim "absent" not found',)


def test_in_tree_disk_conflicts():
    def disk_pod(name: str, **source: Any):
        return make_pod(name, volumes=[{"name": "d", **source}])

    nodes = [make_node("n1"), make_node("n2")]
    gce = {"gcePersistentDisk": {"pdName": "disk-a"}}
    ro = {"gcePersistentDisk": {"pdName": "disk-b", "readOnly": True}}
    ebs = {"awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}
    rbd = {"rbd": {"monitors": ["m1", "m2"], "pool": "p", "image": "i"}}
    snap = cluster(
        nodes,
        placed=[
            (disk_pod("a", **gce), "n1"),
            (disk_pod("b", **ro), "n1"),
            (disk_pod("c", **ebs), "n2"),
            (disk_pod("d", **rbd), "n2"),
        ],
    )
    plugin = volume_restrictions.Plugin()
    assert feasible(plugin, disk_pod("x", **gce), snap)[0] == ["n2"]
    assert feasible(plugin, disk_pod("x", **ro), snap)[0] == ["n1", "n2"]  # both read-only
    assert feasible(plugin, disk_pod("x", **ebs), snap)[0] == ["n1"]  # EBS: always
    other_rbd = {"rbd": {"monitors": ["m2", "m3"], "pool": "p", "image": "i"}}
    ok, why = feasible(plugin, disk_pod("x", **other_rbd), snap)
    assert ok == ["n1"] and why["n2"] == ("node(s) had no available disk",)


# --- NodeVolumeLimits ---------------------------------------------------------------------
def test_csi_limit_counts_unique_volumes_per_driver():
    nodes = [make_node("n1"), make_node("n2"), make_node("n3")]
    drv = "csi.example.com"
    objects = [
        (STORAGE_CLASSES, storage_class()),
        (CSI_NODES, csi_node("n1", drv, 2)),
        (CSI_NODES, csi_node("n2", drv, 1)),
    ]
    for i in range(3):
        objects += [
            (PVCS, pvc(f"c{i}", volume=f"pv{i}", bound=True)),
            (PVS, pv(f"pv{i}", phase="Bound", csi=(drv, f"h{i}"))),
        ]
    objects.append((PVCS, pvc("fresh")))  # unbound: a new volume of the class's provisioner
    placed = [(claim_pod("a", "c0"), "n1"), (claim_pod("b", "c0", "c1"), "n2")]
    snap = cluster(nodes, *objects, placed=placed)
    plugin = node_volume_limits.Plugin()
    # n1 holds c0 (1 of 2): one more fits; n2 holds two of 1 already; n3 has no CSINode
    assert feasible(plugin, claim_pod("p", "c2"), snap)[0] == ["n1", "n3"]
    ok, why = feasible(plugin, claim_pod("p", "c2", "fresh"), snap)
    assert ok == ["n3"] and why["n1"] == ("node(s) exceed max volume count",)
    # a volume already attached on the node is not new there
    assert feasible(plugin, claim_pod("p", "c0", "c2"), snap)[0] == ["n1", "n3"]


def test_csi_limit_missing_claim_and_unsynced_csinodes():
    snap = cluster([make_node("n1")])
    ok, why = feasible(node_volume_limits.Plugin(), claim_pod("p", "nope"), snap)
    assert why["n1"] == ('looking up PVC ns/nope: persistentvolumeclaim "nope" not found',)
    snap.cluster.synced.discard(CSI_NODES)
    verdict, _ = feasible(node_volume_limits.Plugin(), claim_pod("p", "nope"), snap)
    assert verdict.reasons == ("waiting for the scheduler's csinodes cache to sync",)
