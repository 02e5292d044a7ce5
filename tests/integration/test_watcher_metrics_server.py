"""The metrics-server provider reading metrics.k8s.io/v1beta1 NodeMetrics from a real apiserver.

The sandbox has no metrics-server, so the test serves the same API path with a CustomResource
definition in the metrics.k8s.io group: the apiserver answers the provider's list exactly as it
would for metrics-server (same path, same JSON shape), and the test writes the usage it reports.
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.nodes import NodeSpec
from tests.fixtures.ports import wait_for

GROUP, VERSION, PLURAL = "metrics.k8s.io", "v1beta1", "nodes"
SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": f"{PLURAL}.{GROUP}",
        # *.k8s.io groups need this annotation; the test's stand-in is not an approved API.
        "annotations": {"api-approved.kubernetes.io": "unapproved, test only"},
    },
    "spec": {
        "group": GROUP,
        "scope": "Cluster",
        "names": {"plural": PLURAL, "singular": "nodemetrics", "kind": "NodeMetrics"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def node_metrics_api(kube_api):
    ext = client.ApiextensionsV1Api(kube_api)
    ext.create_custom_resource_definition(CRD, _request_timeout=10)
    custom = client.CustomObjectsApi(kube_api)

    def served() -> bool:
        custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, _request_timeout=5)
        return True

    wait_for(served, timeout=30, what="the NodeMetrics API")
    yield custom
    try:
        ext.delete_custom_resource_definition(CRD["metadata"]["name"], _request_timeout=10)
    except ApiException:
        pass


def test_usage_as_percent_of_allocatable(
    sandbox, kube_api, kube_nodes, node_metrics_api, make_watcher
):
    node, other = kube_nodes(
        [
            NodeSpec("ms-node-a", cpu="4", memory="16Gi"),
            NodeSpec("ms-node-b", cpu="2", memory="8Gi"),
        ]
    )
    # Allocatable below capacity, as kubelet reserves some.
    client.CoreV1Api(kube_api).patch_node_status(
        node, {"status": {"allocatable": {"cpu": "3500m", "memory": "14Gi"}}}
    )
    for name, cpu, memory in ((node, "1750m", "7Gi"), (other, "500m", "2Gi")):
        node_metrics_api.create_cluster_custom_object(
            GROUP,
            VERSION,
            PLURAL,
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "NodeMetrics",
                "metadata": {"name": name},
                "window": "30s",
                "usage": {"cpu": cpu, "memory": memory},
            },
        )
    watcher = make_watcher("", provider="metrics-server", kubeconfig=str(sandbox.kubeconfig))
    nodes = watcher.wait_nodes([node, other])
    assert nodes[node]["metrics"]["cpu"]["latest"] == 50.0  # 1750m of 3500m allocatable
    assert nodes[node]["metrics"]["memory"]["latest"] == 50.0
    assert nodes[other]["metrics"]["cpu"]["latest"] == 25.0
    envelope = watcher.json("/watcher")
    assert envelope["source"] == "KubernetesMetricsServer"

    parity = make_watcher(
        "", provider="metrics-server", use_capacity=True, kubeconfig=str(sandbox.kubeconfig)
    )
    nodes = parity.wait_nodes([node])
    assert nodes[node]["metrics"]["cpu"]["latest"] == 43.75  # 1750m of 4 CPUs capacity
