"""Host ports, scheduling gates, pods bound by name and refused fields, on the real apiserver."""

from __future__ import annotations

from kubernetes import client

from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    T,
    create_pods,
    events_for,
    placement,
    pod_body,
    running,
    wait_bound,
)
from tests.integration.test_scheduler_pod_condition import condition


def _with_port(body: dict, port: int, **extra: str) -> dict:
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": port, **extra}]
    return body


def _failed_note(api, namespace: str, pod: str) -> str:
    found = wait_for(
        lambda: events_for(api, namespace, pod, "FailedScheduling"),
        timeout=15,
        what=f"FailedScheduling for {pod}",
    )
    return found[-1]["note"]


def test_two_pods_with_one_host_port_never_share_a_node(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    nodes = kube_nodes(2, cpu="8", labels=label)
    # Someone else's pod, bound by name, already holds the port on the first node.
    holder = _with_port(pod_body("holder", scheduler="someone-else"), 8080)
    holder["spec"]["nodeName"] = nodes[0]
    with running(kube_api) as runtime:
        create_pods(kube_api, namespace, [holder])
        bodies = [_with_port(pod_body(f"web{i}", node_selector=label), 8080) for i in range(2)]
        # Another protocol and a specific IP on another port do not conflict with it.
        bodies.append(_with_port(pod_body("udp", node_selector=label), 8080, protocol="UDP"))
        create_pods(kube_api, namespace, bodies)
        placed = wait_bound(kube_api, namespace, 3)  # holder, one web pod, udp
        web = {n: placed[n] for n in placed if n.startswith("web")}
        assert list(web.values()) == [nodes[1]]
        note = _failed_note(
            kube_api, namespace, next(f"web{i}" for i in range(2) if f"web{i}" not in web)
        )
        assert "2 node(s) didn't have free ports for the requested pod ports" in note
        assert runtime.cache.stats()["preassigned_pods"] == 0  # "someone-else" is not ours


def test_gated_pod_waits_silently_and_is_scheduled_when_its_gate_goes(
    kube_api, kube_nodes, namespace
):
    label = {"ballast-test": namespace}
    kube_nodes(1, cpu="4", labels=label)
    gated = pod_body("gated", node_selector=label)
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    with running(kube_api) as runtime:
        create_pods(kube_api, namespace, [gated, pod_body("after", node_selector=label)])
        # "after" was created later: once it is bound, the gated pod has been seen and held.
        wait_for(lambda: placement(kube_api, namespace)["after"], timeout=15, what="after bound")
        assert placement(kube_api, namespace)["gated"] == ""
        assert runtime.cache.stats()["gated_pods"] == 1
        assert not events_for(kube_api, namespace, "gated", "FailedScheduling")
        client.CoreV1Api(kube_api).patch_namespaced_pod(
            "gated", namespace, {"spec": {"schedulingGates": None}}, _request_timeout=T
        )
        wait_bound(kube_api, namespace, 2)
        assert runtime.cache.stats()["gated_pods"] == 0
        assert not events_for(kube_api, namespace, "gated", "FailedScheduling")


def test_pod_created_with_node_name_is_counted_not_bound(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    nodes = kube_nodes(1, cpu="4", labels=label)
    named = _with_port(pod_body("named"), 9000)
    named["spec"]["nodeName"] = nodes[0]
    with running(kube_api) as runtime:
        create_pods(kube_api, namespace, [named])
        wait_for(
            lambda: runtime.cache.stats()["preassigned_pods"] == 1,
            timeout=15,
            what="the pre-assigned pod counted",
        )
        # It holds its port on that node like any placed pod.
        create_pods(kube_api, namespace, [_with_port(pod_body("late", node_selector=label), 9000)])
        note = _failed_note(kube_api, namespace, "late")
        assert "1 node(s) didn't have free ports for the requested pod ports" in note
        assert not events_for(kube_api, namespace, "named", "Scheduled")


def test_pod_using_resource_claims_is_refused_by_name(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    kube_nodes(1, cpu="4", labels=label)
    body = pod_body("dra", node_selector=label)
    body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    with running(kube_api):
        create_pods(kube_api, namespace, [body, pod_body("plain", node_selector=label)])
        note = _failed_note(kube_api, namespace, "dra")
        assert "spec.resourceClaims" in note and "does not support" in note
        cond = wait_for(
            lambda: condition(kube_api, namespace, "dra"), timeout=15, what="PodScheduled"
        )
        assert cond["status"] == "False" and "spec.resourceClaims" in cond["message"]
        wait_for(lambda: placement(kube_api, namespace)["plain"], timeout=15, what="plain bound")
        assert placement(kube_api, namespace)["dra"] == ""
