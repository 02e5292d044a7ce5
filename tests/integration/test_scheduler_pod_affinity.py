"""InterPodAffinity on the real apiserver: replicas kept apart, followers beside their target,
the first replica of a self-affine group, and the symmetric check of placed pods' rules."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    create_pods,
    placement,
    pod_body,
    pods,
    running,
    wait_bound,
)
from tests.integration.test_scheduler_ports_gates import _failed_note

HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
# Enabled by name so the test holds whether or not the default profile lists it yet.
CONFIG = {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "InterPodAffinity"}]}}}]}


def _pod(
    name: str,
    selector: dict[str, str],
    labels: dict[str, str],
    affinity: dict[str, Any] | None = None,
    anti: dict[str, Any] | None = None,
) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    if affinity:
        rules["podAffinity"] = {REQUIRED: [affinity]}
    if anti:
        rules["podAntiAffinity"] = {REQUIRED: [anti]}
    body = pod_body(name, node_selector=selector, affinity=rules or None)
    body["metadata"]["labels"] = labels
    return body


def _term(**labels: str) -> dict[str, Any]:
    return {"topologyKey": HOST, "labelSelector": {"matchLabels": labels}}


def test_replicas_with_anti_affinity_get_a_node_each_and_the_extra_one_waits(
    kube_api, kube_nodes, namespace
):
    label = {"ballast-test": namespace}
    nodes = kube_nodes(3, cpu="8", labels=label)
    web = {"app": "web"}
    # A real Deployment: its ReplicaSet (kube-controller-manager) creates the four replicas. Its
    # selector is narrower than the rule's, so it does not adopt `plain-web` below.
    replica = web | {"tier": "replica"}
    pod = _pod("", label, replica, anti=_term(**web))
    template = {"metadata": {"labels": replica}, "spec": pod["spec"]}
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"replicas": 4, "selector": {"matchLabels": replica}, "template": template},
    }
    with running(kube_api, CONFIG):
        client.AppsV1Api(kube_api).create_namespaced_deployment(
            namespace, deployment, _request_timeout=10
        )
        placed = wait_bound(kube_api, namespace, 3)
        assert sorted(placed.values()) == sorted(nodes)
        extra = wait_for(
            lambda: next((n for n, node in placement(kube_api, namespace).items() if not node), 0),
            timeout=15,
            what="the fourth replica",
        )
        note = _failed_note(kube_api, namespace, extra)
        assert "3 node(s) didn't match pod anti-affinity rules" in note
        # A pod without rules of its own is kept off them too: the replicas' rules are symmetric.
        create_pods(kube_api, namespace, [_pod("plain-web", label, web)])
        note = _failed_note(kube_api, namespace, "plain-web")
        assert "3 node(s) didn't satisfy existing pods anti-affinity rules" in note
        assert placement(kube_api, namespace)["plain-web"] == ""


def test_follower_lands_beside_its_target_and_a_pod_with_no_target_waits(
    kube_api, kube_nodes, namespace
):
    label = {"ballast-test": namespace}
    kube_nodes(3, cpu="8", labels=label)
    with running(kube_api, CONFIG):
        create_pods(kube_api, namespace, [_pod("db", label, {"app": "db"})])
        target = wait_bound(kube_api, namespace, 1)["db"]
        followers = [_pod(f"f{i}", label, {"app": "f"}, affinity=_term(app="db")) for i in range(3)]
        create_pods(kube_api, namespace, followers)
        placed = wait_bound(kube_api, namespace, 4)
        assert {placed[f"f{i}"] for i in range(3)} == {target}
        # Affinity to pods that do not exist, and the pod is not one of them: nowhere to go.
        create_pods(kube_api, namespace, [_pod("lost", label, {"app": "x"}, _term(app="none"))])
        note = _failed_note(kube_api, namespace, "lost")
        assert "3 node(s) didn't match pod affinity rules" in note


def test_first_replica_of_a_self_affine_group_is_placed_and_the_rest_join_it(
    kube_api, kube_nodes, namespace
):
    label = {"ballast-test": namespace}
    kube_nodes(3, cpu="8", labels=label)
    cache = {"app": "cache"}
    with running(kube_api, CONFIG):
        create_pods(kube_api, namespace, [_pod("c0", label, cache, affinity=_term(**cache))])
        first = wait_bound(kube_api, namespace, 1)["c0"]
        rest = [_pod(f"c{i}", label, cache, affinity=_term(**cache)) for i in range(1, 4)]
        create_pods(kube_api, namespace, rest)
        placed = wait_bound(kube_api, namespace, 4)
        assert set(placed.values()) == {first}


def test_match_label_keys_are_merged_by_the_apiserver_and_honoured(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    (node,) = kube_nodes(1, cpu="8", labels=label)
    term = {**_term(app="web"), "matchLabelKeys": ["version"]}
    bodies = [_pod(f"v{v}", label, {"app": "web", "version": str(v)}, anti=term) for v in (1, 2)]
    with running(kube_api, CONFIG):
        create_pods(kube_api, namespace, bodies)
        # Two versions of one app: the term only keeps pods of the same version apart.
        assert wait_bound(kube_api, namespace, 2) == {"v1": node, "v2": node}
    stored = pods(kube_api, namespace)["v1"]["spec"]["affinity"]["podAntiAffinity"][REQUIRED][0]
    assert {"key": "version", "operator": "In", "values": ["1"]} in (
        stored["labelSelector"]["matchExpressions"]
    )
