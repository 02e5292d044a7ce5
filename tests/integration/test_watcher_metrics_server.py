"""The metrics-server provider against upstream metrics-server (`metrics_plane`): kwok's
kubelets report the use written on pods and nodes, metrics-server scrapes them every 10 s and
serves metrics.k8s.io through the apiserver's aggregation layer.

One stand-in is left: a NodeMetrics answer metrics-server would never give (usage that does not
parse, a node that does not exist), served through a CustomResourceDefinition in the
metrics.k8s.io group on the ordinary `sandbox` (which has no APIService for that group).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.cluster import build
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import RESOURCE_METRICS_PATH, NodeSpec, create_nodes, wait_ready
from sandbox.peers import metrics_server
from shared.quantities import bytes_value
from tests.fixtures.ports import wait_for
from watcher.config import Config
from watcher.errors import ProviderError
from watcher.providers.metrics_server import MetricsServerProvider

GROUP, VERSION = metrics_server.GROUP, metrics_server.VERSION
K8S = Path(__file__).resolve().parents[2] / "k8s"
NAMESPACE = "ms-load"
GI = 1024**3
# name, allocatable cpu/memory, background cores/bytes, pod cores/bytes: 50 % and 50 % of
# ms-a's allocatable (1.75 of 3.5 cores, 7 of 14 Gi), 25 % and 25 % of ms-b's.
NODES = {
    "ms-a": ("3500m", "14Gi", 0.25, 1 * GI, 1.5, 6 * GI),
    "ms-b": ("2", "8Gi", 0.1, 1 * GI, 0.4, 1 * GI),
}
UNSCRAPEABLE = "ms-unscrapeable"


def _pod(name: str, node: str, cores: float, memory: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "annotations": {
                metrics_server.USAGE_CPU: str(cores),
                metrics_server.USAGE_MEMORY: str(memory),
            },
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "image": "example.invalid/app:1"}],
        },
    }


@pytest.fixture(scope="module")
def loaded(metrics_plane: ControlPlane):
    """Two nodes with a known use and one whose kubelet path answers 404; returns an admin
    ApiClient once metrics-server reports the two."""
    api = metrics_plane.api_client()
    core = client.CoreV1Api(api)
    specs = [NodeSpec("ms-a", cpu="4", memory="16Gi"), NodeSpec("ms-b", cpu="2", memory="8Gi")]
    create_nodes(api, [*specs, NodeSpec(UNSCRAPEABLE)])
    core.patch_node(
        UNSCRAPEABLE, {"metadata": {"annotations": {RESOURCE_METRICS_PATH: "/nowhere"}}}
    )
    ensure_namespace(api, NAMESPACE)
    for name, (cpu, memory, bg_cpu, bg_memory, cores, pod_memory) in NODES.items():
        # Allocatable below capacity, as a kubelet reserves some.
        core.patch_node_status(name, {"status": {"allocatable": {"cpu": cpu, "memory": memory}}})
        background = {
            metrics_server.BACKGROUND_CPU: str(bg_cpu),
            metrics_server.BACKGROUND_MEMORY: str(bg_memory),
            metrics_server.BACKGROUND_WOBBLE: "0",
            metrics_server.BACKGROUND_PERIOD: "60",
            metrics_server.BACKGROUND_PHASE: "0",
        }
        core.patch_node(name, {"metadata": {"annotations": background}})
        core.create_namespaced_pod(NAMESPACE, _pod(f"{name}-app", name, cores, pod_memory))
    wait_ready(api, [*NODES, UNSCRAPEABLE])
    metrics_server.wait_node_metrics(metrics_plane, list(NODES), timeout=60)
    # A container's first sample has no CPU yet (kwok's counter starts at 0, which
    # metrics-server drops): pods are reported a scrape after their node.
    provider = _provider(api)
    wait_for(lambda: len(provider.pod_metrics(NAMESPACE)) == len(NODES), timeout=40)
    yield api
    api.close()


def _provider(api: client.ApiClient, **settings) -> MetricsServerProvider:
    config = Config(provider="metrics-server", provider_timeout=5.0, **settings)
    return MetricsServerProvider(config, config.metric_specs(), api)


def test_node_and_pod_metrics_as_metrics_server_serves_them(metrics_plane, loaded):
    with metrics_plane.session() as s:
        doc = s.get(f"{metrics_plane.base_url}/apis/{GROUP}/{VERSION}/nodes", timeout=5).json()
    items = {i["metadata"]["name"]: i for i in doc["items"]}
    assert UNSCRAPEABLE not in items  # metrics-server leaves out a node it cannot scrape
    # Its own units and fields: nanocores, bytes as a quantity, a window and a timestamp.
    assert items["ms-a"]["usage"]["cpu"].endswith("n")
    assert bytes_value(items["ms-a"]["usage"]["memory"]) == 7 * GI
    assert items["ms-a"]["window"] and items["ms-a"]["timestamp"]

    provider = _provider(loaded)
    fetched = provider.fetch()
    assert not fetched.errors
    cpu, memory = (dict(fetched.series[k]) for k in ("cpu", "memory"))
    assert UNSCRAPEABLE not in cpu
    # The CPU rate spans two scrapes, timed by kwok and by metrics-server apart: close, not exact.
    assert cpu["ms-a"] == pytest.approx(50.0, abs=1.0)
    assert memory["ms-a"] == 50.0
    assert cpu["ms-b"] == pytest.approx(25.0, abs=1.0)
    assert memory["ms-b"] == 25.0

    pods = provider.pod_metrics(NAMESPACE)
    cores, pod_memory = pods[(NAMESPACE, "ms-a-app")]
    assert cores == pytest.approx(1500, abs=20)
    assert pod_memory == 6 * GI
    assert set(pods) == {(NAMESPACE, "ms-a-app"), (NAMESPACE, "ms-b-app")}


def test_kubectl_top_nodes(metrics_plane, loaded):
    out = subprocess.run(
        [str(build.binary("kubectl")), "--kubeconfig", str(metrics_plane.kubeconfig), "top",
         "nodes", "--no-headers"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    # NAME CPU(cores) CPU% MEMORY(bytes) MEMORY%; kubectl divides by allocatable too.
    assert rows["ms-a"][3] == "50%"
    assert rows["ms-b"][1] in ("24%", "25%", "26%")


def test_watcher_reads_metrics_server(metrics_plane, loaded, make_watcher):
    watcher = make_watcher("", provider="metrics-server", kubeconfig=str(metrics_plane.kubeconfig))
    nodes = watcher.wait_nodes(list(NODES))
    assert nodes["ms-a"]["metrics"]["cpu"]["latest"] == pytest.approx(50.0, abs=1.0)
    assert nodes["ms-a"]["metrics"]["memory"]["latest"] == 50.0
    assert nodes["ms-b"]["metrics"]["memory"]["latest"] == 25.0
    assert UNSCRAPEABLE not in nodes  # no data, never 0 %
    envelope = watcher.json("/watcher")
    assert envelope["source"] == "KubernetesMetricsServer"

    parity = make_watcher(
        "", provider="metrics-server", use_capacity=True, kubeconfig=str(metrics_plane.kubeconfig)
    )
    nodes = parity.wait_nodes(["ms-a"])
    # 1.75 cores of 4 capacity, 7 Gi of 16 Gi capacity
    assert nodes["ms-a"]["metrics"]["cpu"]["latest"] == pytest.approx(43.75, abs=1.0)
    assert nodes["ms-a"]["metrics"]["memory"]["latest"] == 43.75


def _watcher_rbac() -> list[dict]:
    """The watcher's ServiceAccount, ClusterRole and ClusterRoleBinding from the manifests users
    apply (k8s/ballast.yaml, rendered from the chart; k8s/watcher-rbac.yaml before it)."""
    path = K8S / "ballast.yaml"
    if not path.is_file():
        path = K8S / "watcher-rbac.yaml"
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")
    return [
        d
        for d in yaml.safe_load_all(path.read_text())
        if d and d["kind"] in kinds and d["metadata"]["name"].endswith("watcher")
    ]


def _service_account_client(
    plane: ControlPlane, api: client.ApiClient, docs: list[dict]
) -> client.ApiClient:
    """Applies the watcher's RBAC as the manifests have it and returns a client with its
    ServiceAccount's token: what the watcher runs as in a cluster."""
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding")
    subject = binding["subjects"][0]
    ensure_namespace(api, subject["namespace"])
    rbac, core = client.RbacAuthorizationV1Api(api), client.CoreV1Api(api)
    for doc in docs:
        try:
            if doc["kind"] == "ServiceAccount":
                core.create_namespaced_service_account(subject["namespace"], doc)
            elif doc["kind"] == "ClusterRole":
                rbac.create_cluster_role(doc)
            else:
                rbac.create_cluster_role_binding(doc)
        except ApiException as exc:
            if exc.status != 409:
                raise
    token = core.create_namespaced_service_account_token(
        subject["name"], subject["namespace"], {"spec": {"expirationSeconds": 600}}
    ).status.token
    config = client.Configuration()
    config.host = plane.base_url
    config.ssl_ca_cert = str(plane.ca_file)
    config.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(config)


def test_rbac_exactly_as_the_manifests_grant_it(metrics_plane, loaded):
    docs = _watcher_rbac()
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    pod_metrics_granted = any(
        GROUP in r.get("apiGroups", []) and "pods" in r.get("resources", []) for r in role["rules"]
    )
    with _service_account_client(metrics_plane, loaded, docs) as as_watcher:
        provider = _provider(as_watcher)
        fetched = provider.fetch()
        assert not fetched.errors and dict(fetched.series["cpu"])["ms-a"] > 0

        review = client.AuthorizationV1Api(as_watcher)

        def can(verb: str, resource: str, group: str = "") -> bool:
            attrs = {"verb": verb, "resource": resource, "group": group}
            body = {"spec": {"resourceAttributes": attrs}}
            return review.create_self_subject_access_review(body).status.allowed

        # `kubectl auth can-i` as the watcher's account: what the provider calls, nothing else.
        assert can("list", "nodes", GROUP) and can("get", "nodes", GROUP)
        assert can("list", "nodes") and can("watch", "nodes")
        # Pods: a metadata-only list for the workload join (docs/profiles.md), nothing more.
        assert can("list", "pods") and not can("get", "pods") and not can("watch", "pods")
        assert not can("update", "nodes")
        assert not can("list", "secrets")
        # PodMetrics (pod_metrics, for the usage-profiles work) only where the role grants it.
        assert can("list", "pods", GROUP) == pod_metrics_granted
        if pod_metrics_granted:
            assert provider.pod_metrics(NAMESPACE)
        else:
            with pytest.raises(ProviderError) as denied:
                provider.pod_metrics(NAMESPACE)
            assert denied.value.reason == "http_403"


def test_metrics_server_unavailable_then_restarted(metrics_plane, loaded, make_watcher):
    watcher = make_watcher("", provider="metrics-server", kubeconfig=str(metrics_plane.kubeconfig))
    watcher.wait_nodes(["ms-a"])
    metrics_server.stop(metrics_plane)

    def refused() -> str | None:
        try:
            _provider(loaded).pod_metrics()
        except ProviderError as exc:
            return exc.reason
        return None

    # The aggregator answers 503 while the APIService has no server behind it.
    assert wait_for(refused, timeout=30, what="the aggregator to refuse") == "http_503"
    errors = wait_for(
        lambda: watcher.status()["counters"]["pollErrors"].get("http_503"),
        timeout=30,
        what="the watcher's poll errors to count http_503",
    )
    assert errors >= 1
    ready = watcher.get("/readyz")  # still serving its window, the failure named
    assert ready.status_code == 200
    assert any(r.startswith("provider:") for r in ready.json()["reasons"])

    metrics_server.start(metrics_plane)
    # A restarted metrics-server has no samples: a node is back after two scrapes.
    metrics_server.wait_node_metrics(metrics_plane, ["ms-a"], timeout=60)
    wait_for(lambda: not watcher.json("/readyz")["reasons"], timeout=30, what="readyz clear")
    latest = watcher.json("/api/v1/nodes")["nodes"]["ms-a"]["metrics"]["memory"]["latest"]
    assert latest == 50.0


# -- the one stand-in: answers metrics-server does not give ----------------------------------
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": f"nodes.{GROUP}",
        # *.k8s.io groups need this annotation; the test's stand-in is not an approved API.
        "annotations": {"api-approved.kubernetes.io": "unapproved, test only"},
    },
    "spec": {
        "group": GROUP,
        "scope": "Cluster",
        "names": {"plural": "nodes", "singular": "nodemetrics", "kind": "NodeMetrics"},
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
def malformed_node_metrics(kube_api):
    ext = client.ApiextensionsV1Api(kube_api)
    ext.create_custom_resource_definition(CRD, _request_timeout=10)
    custom = client.CustomObjectsApi(kube_api)
    wait_for(
        lambda: (
            custom.list_cluster_custom_object(GROUP, VERSION, "nodes", _request_timeout=5)
            is not None
        ),
        timeout=30,
        what="the NodeMetrics stand-in",
    )
    yield custom
    try:
        ext.delete_custom_resource_definition(CRD["metadata"]["name"], _request_timeout=10)
    except ApiException:
        pass


def test_malformed_answers_are_rejected_not_zero(
    sandbox, kube_nodes, malformed_node_metrics, make_watcher
):
    (good, bad) = kube_nodes(2)
    for name, usage in (
        (good, {"cpu": "1", "memory": "4Gi"}),
        (bad, {"cpu": "lots", "memory": "4Gi"}),
        ("no-such-node", {"cpu": "1", "memory": "1Gi"}),
    ):
        malformed_node_metrics.create_cluster_custom_object(
            GROUP,
            VERSION,
            "nodes",
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeMetrics",
             "metadata": {"name": name}, "window": "15s", "usage": usage},
        )  # fmt: skip
    watcher = make_watcher("", provider="metrics-server", kubeconfig=str(sandbox.kubeconfig))
    nodes = watcher.wait_nodes([good])
    assert nodes[good]["metrics"]["cpu"]["latest"] == 25.0  # 1 of 4 CPUs
    rejected = watcher.status()["counters"]["rejected"]
    assert rejected.get("nan", 0) >= 1  # "lots" CPU
    assert "cpu" not in (nodes.get(bad) or {}).get("metrics", {})
    assert "no-such-node" not in nodes
