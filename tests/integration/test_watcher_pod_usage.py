"""Pod usage from cAdvisor's series in a real Prometheus, joined to workloads through a real
kube-apiserver, served as workload profiles; with the bad inputs a cluster produces: a pod no
controller owns, a pod with 10,000 containers, a CPU counter that resets."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.fixtures.ports import wait_for

USE_M, USE_BYTES = 300.0, 64 * 1024**2
WIDE = 10_000  # containers in one replica


def deployment(name: str, node: str, replicas: int) -> dict:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeName": node,  # no scheduler in this test: placed where it is created
                    "containers": [{"name": "app", "image": "example.invalid/app:1"}],
                },
            },
        },
    }


@pytest.mark.parametrize("store", ["prometheus", "victoriametrics", "thanos"])
def test_workload_profiles_from_cadvisor_series(
    request, store, sandbox, kube_api, namespace, kube_nodes, exporter, make_watcher
):
    prometheus = request.getfixturevalue(store)  # or VictoriaMetrics, Thanos: the same API
    (node,) = kube_nodes(1)
    apps = client.AppsV1Api(kube_api)
    core = client.CoreV1Api(kube_api)
    apps.create_namespaced_deployment(namespace, deployment("web", node, 3))
    core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "bare"}, "spec": {"nodeName": node, "containers": [
            {"name": "c", "image": "example.invalid/c:1"}]}},
    )  # fmt: skip

    def replicas() -> list[str] | None:
        pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
        return sorted(p.metadata.name for p in pods) if len(pods) == 3 else None

    names = wait_for(replicas, timeout=30, what="the Deployment's three pods")
    wide = {f"c{i}": (USE_M / WIDE, USE_BYTES / WIDE) for i in range(WIDE)}
    exporter.set_pod(namespace, names[0], node, wide)
    for name in names[1:]:
        exporter.set_pod(namespace, name, node, {"app": (USE_M, USE_BYTES)})
    exporter.set_pod(namespace, "bare", node, {"c": (100.0, 1e6)})
    try:
        watcher = make_watcher(
            prometheus.url, kubeconfig=str(sandbox.kubeconfig), warm_start=False, kube_refresh=2
        )

        def profile(min_samples: int) -> dict | None:
            resp = watcher.get(f"/api/v1/workloads/{namespace}/Deployment/web")
            if resp.status_code != 200:
                return None
            doc = resp.json()
            current = doc["revisions"][doc["current"]]
            return doc if current["samples"] >= min_samples else None

        doc = wait_for(lambda: profile(8), timeout=40, what="a profile with 8 samples")
        exporter.reset_pod(namespace, names[1])  # a container restart: its counter from 0
        doc = wait_for(lambda: profile(24), timeout=40, what="a profile with 24 samples")
    finally:
        for name in [*names, "bare"]:
            exporter.remove_pod(namespace, name)

    rev = doc["revisions"][doc["current"]]
    assert doc["kind"] == "Deployment" and doc["name"] == "web"
    assert len(doc["current"]) >= 5  # the pod-template-hash
    assert rev["distinctPods"] == 3 and rev["replicas"] == 3
    # the 10,000-container replica sums to what the others use; the reset never reads as a spike
    assert 0.85 * USE_M <= rev["cpu"]["p50"] <= 1.15 * USE_M
    assert rev["cpu"]["max"] <= 1.3 * USE_M
    assert abs(rev["memory"]["p95"] - USE_BYTES) <= 0.01 * USE_BYTES
    listing = watcher.json(f"/api/v1/workloads?namespace={namespace}")
    assert list(listing["workloads"]) == [f"{namespace}/Deployment/web"]
    assert listing["rejected"].get("no_owner", 0) >= 1  # the bare pod
    assert "negative" not in listing["rejected"]
    assert watcher.get(f"/api/v1/workloads/{namespace}/Deployment/nope").status_code == 404
