"""kube-controller-manager in the sandbox, with kwok's fake nodes and Ballast placing the pods.

Each test drives one controller the way a user would and waits for the cluster to get there:
a Deployment rolls out, its ReplicaSet replaces deleted and evicted pods, the disruption
controller computes a PDB's status (and the eviction API obeys it), the garbage collector
removes what a deleted Deployment owned, a Job completes when kwok ends its pods, and the
serviceaccount controller gives a namespace created by hand its `default` ServiceAccount.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.cluster.namespaces import delete_namespace
from sandbox.cluster.nodes import NodeSpec, create_nodes, delete_nodes, wait_ready
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import events, running

T = 10
ROLLOUT = 60.0  # seconds: the controllers, Ballast and kwok each act within a second or two


@pytest.fixture(scope="module", autouse=True)
def cluster(kube_api: client.ApiClient) -> Iterator[None]:
    """Two kwok nodes and Ballast's scheduler (profile `ballast`) for the whole module."""
    names = create_nodes(kube_api, [NodeSpec(f"ctl-{i}", cpu="4") for i in range(2)])
    wait_ready(kube_api, names)
    with running(kube_api):
        yield
    delete_nodes(kube_api, names)


def template(app: str) -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
    }
    spec = {"schedulerName": "ballast", "containers": [container]}
    return {
        "metadata": {"labels": {"app": app}},
        "spec": spec | {"terminationGracePeriodSeconds": 0},
    }


def create_deployment(api: client.ApiClient, namespace: str, name: str, replicas: int) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template(name),
        },
    }
    client.AppsV1Api(api).create_namespaced_deployment(namespace, body, _request_timeout=T)


def wait_available(api: client.ApiClient, namespace: str, name: str, replicas: int) -> None:
    apps = client.AppsV1Api(api)

    def available() -> bool:
        status = apps.read_namespaced_deployment(name, namespace, _request_timeout=T).status
        return status.available_replicas == replicas and status.updated_replicas == replicas

    wait_for(available, ROLLOUT, 0.2, f"Deployment {name} to have {replicas} available replicas")


def live_pods(api: client.ApiClient, namespace: str, app: str) -> list[client.V1Pod]:
    pods = client.CoreV1Api(api).list_namespaced_pod(
        namespace, label_selector=f"app={app}", _request_timeout=T
    )
    return [p for p in pods.items if p.metadata.deletion_timestamp is None]


def evict(api: client.ApiClient, namespace: str, pod: str) -> None:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=namespace))
    client.CoreV1Api(api).create_namespaced_pod_eviction(pod, namespace, body, _request_timeout=T)


def test_deployment_rolls_out_with_pods_bound_by_ballast(kube_api, namespace):
    create_deployment(kube_api, namespace, "web", 3)
    wait_available(kube_api, namespace, "web", 3)
    pods = live_pods(kube_api, namespace, "web")
    assert len(pods) == 3
    for pod in pods:
        (owner,) = pod.metadata.owner_references
        assert owner.kind == "ReplicaSet" and pod.metadata.name.startswith(owner.name + "-")
        assert pod.spec.node_name in ("ctl-0", "ctl-1") and pod.status.phase == "Running"
    # Raw JSON: the controllers' core/v1 events have no eventTime, which the client's model
    # refuses.
    found = events(kube_api, namespace)
    scheduled = {e["regarding"]["name"] for e in found if e.get("reason") == "Scheduled"}
    assert scheduled >= {p.metadata.name for p in pods}


def test_replicaset_replaces_deleted_and_evicted_pods(kube_api, namespace):
    create_deployment(kube_api, namespace, "api", 2)
    wait_available(kube_api, namespace, "api", 2)
    deleted, evicted = sorted(p.metadata.name for p in live_pods(kube_api, namespace, "api"))
    client.CoreV1Api(kube_api).delete_namespaced_pod(
        deleted, namespace, grace_period_seconds=0, _request_timeout=T
    )
    evict(kube_api, namespace, evicted)

    def replaced() -> bool:
        pods = live_pods(kube_api, namespace, "api")
        names = {p.metadata.name for p in pods}
        running = all(p.spec.node_name and p.status.phase == "Running" for p in pods)
        return len(pods) == 2 and not names & {deleted, evicted} and running

    wait_for(replaced, ROLLOUT, 0.2, "the ReplicaSet to replace a deleted and an evicted pod")


def test_disruption_controller_fills_pdb_status_and_evictions_obey_it(kube_api, namespace):
    create_deployment(kube_api, namespace, "db", 3)
    wait_available(kube_api, namespace, "db", 3)
    policy = client.PolicyV1Api(kube_api)
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
    }
    policy.create_namespaced_pod_disruption_budget(namespace, pdb, _request_timeout=T)

    def status(allowed: int):
        def check():
            s = policy.read_namespaced_pod_disruption_budget("db", namespace, _request_timeout=T)
            s = s.status
            return s if s and s.observed_generation and s.disruptions_allowed == allowed else None

        return wait_for(check, ROLLOUT, 0.2, f"the PDB's disruptionsAllowed to be {allowed}")

    filled = status(1)
    assert (filled.current_healthy, filled.desired_healthy, filled.expected_pods) == (3, 2, 3)

    patch = {"spec": {"minAvailable": 3}}
    policy.patch_namespaced_pod_disruption_budget("db", namespace, patch, _request_timeout=T)
    status(0)
    victim = live_pods(kube_api, namespace, "db")[0].metadata.name
    with pytest.raises(ApiException) as refused:
        evict(kube_api, namespace, victim)
    assert refused.value.status == 429 and "disruption budget" in refused.value.body


def test_garbage_collector_removes_what_a_deleted_deployment_owned(kube_api, namespace):
    create_deployment(kube_api, namespace, "gc", 2)
    wait_available(kube_api, namespace, "gc", 2)
    apps = client.AppsV1Api(kube_api)
    assert apps.list_namespaced_replica_set(namespace, _request_timeout=T).items
    apps.delete_namespaced_deployment(
        "gc", namespace, propagation_policy="Background", _request_timeout=T
    )

    def collected() -> bool:
        sets = apps.list_namespaced_replica_set(namespace, _request_timeout=T).items
        return not sets and not live_pods(kube_api, namespace, "gc")

    wait_for(collected, ROLLOUT, 0.2, "the garbage collector to delete the ReplicaSet and pods")


def test_job_completes_when_kwok_ends_its_pods(kube_api, namespace):
    pod = template("batch")
    pod["spec"]["restartPolicy"] = "Never"
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch"},
        "spec": {"completions": 3, "parallelism": 2, "backoffLimit": 0, "template": pod},
    }
    batch = client.BatchV1Api(kube_api)
    batch.create_namespaced_job(namespace, body, _request_timeout=T)

    def complete():
        status = batch.read_namespaced_job("batch", namespace, _request_timeout=T).status
        done = [c for c in status.conditions or [] if c.type == "Complete" and c.status == "True"]
        return status if done else None

    status = wait_for(complete, ROLLOUT, 0.2, "the Job to complete")
    assert status.succeeded == 3 and not status.failed


def test_serviceaccount_controller_gives_a_new_namespace_its_default_account(kube_api):
    core = client.CoreV1Api(kube_api)
    name = "ctl-bare-namespace"
    body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name))
    core.create_namespace(body, _request_timeout=T)  # no sandbox helper: the controllers only
    try:
        wait_for(
            lambda: core.read_namespaced_service_account("default", name, _request_timeout=T),
            ROLLOUT,
            0.2,
            "the serviceaccount controller to create `default`",
        )
        wait_for(
            lambda: core.read_namespaced_config_map("kube-root-ca.crt", name, _request_timeout=T),
            ROLLOUT,
            0.2,
            "the root-CA publisher to create kube-root-ca.crt",
        )
    finally:
        delete_namespace(kube_api, name, finalize=False)
