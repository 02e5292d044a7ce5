"""The volume plugins on the real apiserver with the Ballast runtime.

The sandbox's kube-controller-manager runs the PV controller, but no provisioner creates
volumes. A bound claim is made as the PV controller leaves it (spec.volumeName, the
bind-completed annotation, a PV whose claimRef points back), and a static PV is marked Available
through its status at once rather than when the controller gets to it. What these tests see is
the scheduler's side: where pods go, which stay pending with which FailedScheduling text, what
it writes on claims and volumes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

from sandbox.cluster.nodes import NodeSpec
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    T,
    create_pods,
    events_for,
    placement,
    pod_body,
    pods,
    running,
    wait_bound,
)

ZONE = "topology.kubernetes.io/zone"
DRIVER = "csi.ballast.test"
VOLUME_PLUGINS = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone")
PROFILE = {
    "profiles": [
        {
            "schedulerName": "ballast",
            "plugins": {"filter": {"enabled": [{"name": n} for n in VOLUME_PLUGINS]}},
        }
    ]
}


class Storage:
    """Creates claims, volumes, classes and CSINodes; removes the cluster-scoped ones (and
    their protection finalizers, so the removal does not wait for the protection controllers)."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api, self.ns = api, namespace
        self.core, self.storage = client.CoreV1Api(api), client.StorageV1Api(api)
        self.created: list[tuple[str, str]] = []

    def storage_class(
        self, name: str, mode: str, provisioner: str = DRIVER, zones: list[str] | None = None
    ) -> str:
        name = f"{self.ns}-{name}"
        body: dict[str, Any] = {
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": mode,
        }
        if zones:
            body["allowedTopologies"] = [
                {"matchLabelExpressions": [{"key": ZONE, "values": zones}]}
            ]
        self.storage.create_storage_class(body, _request_timeout=T)
        self.created.append(("storageclass", name))
        return name

    def volume(
        self,
        name: str,
        claim: str | None = None,
        zone: str | None = None,
        sc: str = "",
        available: bool = False,
        modes: tuple[str, ...] = ("ReadWriteOnce",),
        claim_uid: str = "",
    ) -> str:
        name = f"{self.ns}-{name}"
        spec: dict[str, Any] = {
            "capacity": {"storage": "1Gi"},
            "accessModes": list(modes),
            "csi": {"driver": DRIVER, "volumeHandle": name},
            "storageClassName": sc,
        }
        if claim:
            spec["claimRef"] = {"namespace": self.ns, "name": claim}
            if claim_uid:
                spec["claimRef"]["uid"] = claim_uid
        if zone:
            term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
        labels = {ZONE: zone} if zone else {}
        body = {"metadata": {"name": name, "labels": labels}, "spec": spec}
        self.core.create_persistent_volume(body, _request_timeout=T)
        self.created.append(("pv", name))
        if available:  # the PV controller's job, done here so the test need not wait for it
            status = {"status": {"phase": "Available"}}
            self.core.patch_persistent_volume_status(name, status, _request_timeout=T)
        return name

    def claim(
        self, name: str, sc: str = "", volume: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",)
    ) -> str:
        spec: dict[str, Any] = {
            "accessModes": list(modes),
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": sc,
        }
        meta: dict[str, Any] = {"name": name}
        if volume:
            spec["volumeName"] = volume
            meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        body = {"metadata": meta, "spec": spec}
        made = self.core.create_namespaced_persistent_volume_claim(
            self.ns, body, _request_timeout=T
        )
        return made.metadata.uid

    def bound_claim(self, name: str, zone: str | None = None, modes=("ReadWriteOnce",)) -> None:
        # The claim first, so the volume's claimRef carries its uid as the PV controller leaves
        # it: a claimRef without one races the controller, which may mark the claim Lost.
        uid = self.claim(name, volume=f"{self.ns}-{name}", modes=modes)
        self.volume(name, name, zone, modes=modes, claim_uid=uid)

    def csi_node(self, node: str, count: int) -> None:
        drivers = [{"name": DRIVER, "nodeID": node, "allocatable": {"count": count}}]
        body = {"metadata": {"name": node}, "spec": {"drivers": drivers}}
        self.storage.create_csi_node(body, _request_timeout=T)
        self.created.append(("csinode", node))

    def read_claim(self, name: str) -> dict[str, Any]:
        resp = self.core.read_namespaced_persistent_volume_claim(
            name, self.ns, _preload_content=False, _request_timeout=T
        )
        return json.loads(resp.data)

    def read_volume(self, name: str) -> dict[str, Any]:
        resp = self.core.read_persistent_volume(name, _preload_content=False, _request_timeout=T)
        return json.loads(resp.data)

    def cleanup(self) -> None:
        unprotect = {"metadata": {"finalizers": None}}
        claims = self.core.list_namespaced_persistent_volume_claim(self.ns, _request_timeout=T)
        for item in claims.items:
            self._gone(
                self.core.patch_namespaced_persistent_volume_claim,
                item.metadata.name,
                self.ns,
                unprotect,
            )
            self._gone(
                self.core.delete_namespaced_persistent_volume_claim, item.metadata.name, self.ns
            )
        for kind, name in self.created:
            if kind == "pv":
                self._gone(self.core.patch_persistent_volume, name, unprotect)
                self._gone(self.core.delete_persistent_volume, name)
            elif kind == "storageclass":
                self._gone(self.storage.delete_storage_class, name)
            else:
                self._gone(self.storage.delete_csi_node, name)

    @staticmethod
    def _gone(call: Any, *args: Any) -> None:
        try:
            call(*args, _request_timeout=T)
        except ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture
def storage(kube_api, namespace) -> Iterator[Storage]:
    made = Storage(kube_api, namespace)
    yield made
    made.cleanup()


@pytest.fixture
def zones(kube_nodes, namespace) -> tuple[dict[str, str], dict[str, str]]:
    """Three nodes of this test, one per zone: ({node: zone}, the nodeSelector keeping the
    test's pods on them)."""
    label = {"ballast-test": namespace}
    by_node = {f"{namespace}-{z}": f"{namespace}-{z}" for z in "abc"}
    kube_nodes([NodeSpec(n, labels=label | {ZONE: z}) for n, z in by_node.items()])
    return by_node, label


def volume_pod(name: str, label: dict[str, str], *claims: str) -> dict[str, Any]:
    body = pod_body(name, node_selector=label)
    body["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return body


def wait_failed(api: client.ApiClient, namespace: str, pod: str, text: str) -> str:
    """The note of the pod's FailedScheduling event that contains `text`."""

    def found() -> str | None:
        notes = [e.get("note") or "" for e in events_for(api, namespace, pod, "FailedScheduling")]
        return next((n for n in notes if text in n), None)

    return wait_for(found, timeout=20, what=f"FailedScheduling of {pod} saying {text!r}")


def test_pv_node_affinity_and_zone_pin_the_pod(kube_api, namespace, zones, storage):
    nodes, label = zones
    storage.bound_claim("data", zone=f"{namespace}-b")
    with running(kube_api, PROFILE):
        create_pods(kube_api, namespace, [volume_pod(f"p{i}", label, "data") for i in range(3)])
        placed = wait_bound(kube_api, namespace, 3)
    assert {nodes[n] for n in placed.values()} == {f"{namespace}-b"}


def test_missing_and_unbound_immediate_claims_stay_pending(kube_api, namespace, zones, storage):
    _, label = zones
    immediate = storage.storage_class("now", "Immediate")
    storage.claim("unbound", sc=immediate)
    with running(kube_api, PROFILE):
        create_pods(
            kube_api,
            namespace,
            [volume_pod("orphan", label, "later"), volume_pod("waiting", label, "unbound")],
        )
        note = wait_failed(kube_api, namespace, "orphan", 'persistentvolumeclaim "later" not found')
        assert re.search(
            r'0/\d+ nodes are available: persistentvolumeclaim "later" not found\.', note
        )
        wait_failed(
            kube_api, namespace, "waiting", "pod has unbound immediate PersistentVolumeClaims"
        )
        # The claim appears, bound: the parked pod is woken by the claim's watch event.
        storage.bound_claim("later")
        wait_bound(kube_api, namespace, 1)
        assert placement(kube_api, namespace)["waiting"] == ""


def test_read_write_once_pod_claim_in_use(kube_api, namespace, zones, storage):
    _, label = zones
    storage.bound_claim("solo", modes=("ReadWriteOncePod",))
    with running(kube_api, PROFILE):
        create_pods(kube_api, namespace, [volume_pod("first", label, "solo")])
        wait_bound(kube_api, namespace, 1)
        create_pods(kube_api, namespace, [volume_pod("second", label, "solo")])
        wait_failed(
            kube_api,
            namespace,
            "second",
            "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
            "already in-use by another pod",
        )
        assert placement(kube_api, namespace)["second"] == ""
        client.CoreV1Api(kube_api).delete_namespaced_pod(
            "first", namespace, grace_period_seconds=0, _request_timeout=T
        )
        wait_for(
            lambda: placement(kube_api, namespace).get("second"),
            timeout=20,
            what="the second pod bound once the first is gone",
        )


def test_csinode_attach_limit(kube_api, namespace, zones, storage):
    nodes, label = zones
    for node in nodes:
        storage.csi_node(node, 1)
    for i in range(4):
        storage.bound_claim(f"c{i}")
    with running(kube_api, PROFILE):
        create_pods(kube_api, namespace, [volume_pod(f"p{i}", label, f"c{i}") for i in range(3)])
        placed = wait_bound(kube_api, namespace, 3)
        assert sorted(placed.values()) == sorted(nodes)  # one volume per node fits
        create_pods(kube_api, namespace, [volume_pod("extra", label, "c3")])
        note = wait_failed(kube_api, namespace, "extra", "node(s) exceed max volume count")
        assert "3 node(s) exceed max volume count" in note, note
        # The same volume again is not a new attachment on the node that has it.
        create_pods(kube_api, namespace, [volume_pod("again", label, "c0")])
        wait_bound(kube_api, namespace, 4)
        assert placement(kube_api, namespace)["again"] == placed["p0"]


def test_wait_for_first_consumer_selected_node_and_static_pv(kube_api, namespace, zones, storage):
    nodes, label = zones
    zone_c, zone_a = f"{namespace}-c", f"{namespace}-a"
    late = storage.storage_class("late", "WaitForFirstConsumer", zones=[zone_c])
    local = storage.storage_class("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")
    storage.claim("dynamic", sc=late)
    static_pv = storage.volume("static", zone=zone_a, sc=local, available=True)
    storage.claim("static", sc=local)
    since = pods_version(kube_api, namespace)
    with running(kube_api, PROFILE):
        create_pods(
            kube_api,
            namespace,
            [volume_pod("maker", label, "dynamic"), volume_pod("user", label, "static")],
        )
        placed = wait_bound(kube_api, namespace, 2)
    assert nodes[placed["maker"]] == zone_c  # the class's allowedTopologies
    claim = storage.read_claim("dynamic")
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == placed["maker"]
    # Written before the binding: etcd revisions of one apiserver are ordered. (The PV
    # controller may annotate the claim again afterwards, so its current version says nothing.)
    bound_at = binding_version(kube_api, namespace, "maker", since)
    assert selected_version(kube_api, namespace, "dynamic", since) < bound_at

    assert nodes[placed["user"]] == zone_a  # the only PV that fits is in zone a
    pv = storage.read_volume(static_pv)
    assert pv["spec"]["claimRef"]["name"] == "static"
    assert pv["spec"]["claimRef"]["uid"] == storage.read_claim("static")["metadata"]["uid"]
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert "volume.kubernetes.io/selected-node" not in (
        storage.read_claim("static")["metadata"].get("annotations") or {}
    )


def pods_version(api: client.ApiClient, namespace: str) -> str:
    resp = client.CoreV1Api(api).list_namespaced_pod(
        namespace, _preload_content=False, _request_timeout=T
    )
    return json.loads(resp.data)["metadata"]["resourceVersion"]


def first_version(list_call, namespace: str, name: str, since: str, test) -> int | None:
    """The etcd revision of the first change to `name` since `since` that passes `test`,
    replayed by a watch."""
    resp = list_call(
        namespace,
        watch=True,
        resource_version=since,
        timeout_seconds=5,
        field_selector=f"metadata.name={name}",
        _preload_content=False,
        _request_timeout=(T, 10),
    )
    try:
        for line in iter_resp_lines(resp):
            obj = json.loads(line).get("object") or {}
            if test(obj):
                return int(obj["metadata"]["resourceVersion"])
    finally:
        resp.release_conn()
    return None


def binding_version(api: client.ApiClient, namespace: str, pod: str, since: str) -> int:
    """The etcd revision at which the pod got its node."""
    core = client.CoreV1Api(api)
    found = first_version(
        core.list_namespaced_pod,
        namespace,
        pod,
        since,
        lambda o: (o.get("spec") or {}).get("nodeName"),
    )
    if found is None:
        raise AssertionError(
            f"no watch event shows {pod} bound; pods: {list(pods(api, namespace))}"
        )
    return found


def selected_version(api: client.ApiClient, namespace: str, claim: str, since: str) -> int:
    """The etcd revision at which the claim got the selected-node annotation."""

    def selected(obj: dict) -> bool:
        return "volume.kubernetes.io/selected-node" in (obj["metadata"].get("annotations") or {})

    core = client.CoreV1Api(api)
    found = first_version(
        core.list_namespaced_persistent_volume_claim, namespace, claim, since, selected
    )
    assert found is not None, f"no watch event shows {claim} with a selected node"
    return found
