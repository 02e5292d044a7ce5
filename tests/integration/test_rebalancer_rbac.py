"""The rebalancer's RBAC from the chart, applied to the sandbox: `kubectl auth can-i` as its
service account for what it needs and for what it must never do."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
import yaml

from sandbox.cluster import build
from sandbox.cluster.namespaces import delete_namespace, ensure_namespace
from sandbox.peers.helm import chart
from scheduler.rebalancer import settings

NAMESPACE = "ballast-rebalancer-rbac"
WHO = f"system:serviceaccount:{NAMESPACE}:ballast-rebalancer"
RBAC = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")

ALLOWED = [
    ("list", "pods", None),
    ("watch", "pods", None),
    ("list", "nodes", None),
    ("watch", "replicasets.apps", None),
    ("list", "statefulsets.apps", None),
    ("list", "poddisruptionbudgets.policy", None),
    ("create", "pods#eviction", "default"),
    ("create", "events", "default"),
    ("create", "events.events.k8s.io", "app"),
    ("list", "events", "default"),
    ("create", "leases.coordination.k8s.io", NAMESPACE),
    ("update", "leases.coordination.k8s.io/ballast-rebalancer", NAMESPACE),
]
DENIED = [
    ("delete", "pods", "default"),
    ("patch", "pods", "default"),
    ("update", "pods", "default"),
    ("create", "pods", "default"),
    ("create", "pods#binding", "default"),
    ("patch", "pods#status", "default"),
    ("get", "pods", "default"),
    ("patch", "nodes", None),
    ("delete", "nodes", None),
    ("get", "secrets", NAMESPACE),
    ("list", "events", "app"),
    ("delete", "events", "default"),
    ("update", "leases.coordination.k8s.io/ballast-scheduler", NAMESPACE),
    ("delete", "replicasets.apps", "default"),
    ("update", "deployments.apps", "default"),
]


def kubectl(plane, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(build.binary("kubectl")), f"--kubeconfig={plane.kubeconfig}",
         "--request-timeout=20s", *args],
        input=stdin, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.fixture(scope="module")
def applied(sandbox, kube_api) -> Iterator[None]:
    ensure_namespace(kube_api, NAMESPACE)
    rendered = chart.template(
        namespace=NAMESPACE,
        extra=["--set=rebalancer.enabled=true", "--show-only=templates/rebalancer.yaml"],
    )
    objects = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] in RBAC]
    assert {d["kind"] for d in objects} == set(RBAC)
    for d in objects:  # helm leaves the release namespace to `helm install`; one Role is in default
        if d["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            d["metadata"].setdefault("namespace", NAMESPACE)
    text = yaml.safe_dump_all(objects)
    result = kubectl(sandbox, "apply", "-f", "-", stdin=text)
    assert result.returncode == 0, result.stderr
    yield
    kubectl(sandbox, "delete", "--ignore-not-found", "-f", "-", stdin=text)
    delete_namespace(kube_api, NAMESPACE, finalize=False)


def can_i(plane, verb: str, resource: str, namespace: str | None) -> str:
    scope = ["-n", namespace] if namespace else ["--all-namespaces"]
    target = resource.split("#")
    if len(target) == 2:
        scope.append(f"--subresource={target[1]}")
    result = kubectl(plane, "auth", "can-i", verb, target[0], f"--as={WHO}", *scope)
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), result.stderr
    return answer


def test_the_rebalancer_may_what_it_needs(sandbox, applied):
    refused = [c for c in ALLOWED if can_i(sandbox, *c) != "yes"]
    assert refused == []


def test_the_rebalancer_may_nothing_else(sandbox, applied):
    allowed = [c for c in DENIED if can_i(sandbox, *c) != "no"]
    assert allowed == []


def test_the_chart_renders_a_config_the_rebalancer_loads():
    rendered = chart.template(
        namespace=NAMESPACE,
        extra=[
            "--set=rebalancer.enabled=true",
            "--set=rebalancer.dryRun=true",
            "--show-only=templates/rebalancer.yaml",
        ],
    )
    cm = next(d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "ConfigMap")
    cfg = settings.parse(yaml.safe_load(cm["data"]["rebalancer-config.yaml"]))
    assert cfg.rebalancer.dry_run and cfg.rebalancer.lease_name == "ballast-rebalancer"
    assert cfg.rebalancer.profile == "ballast"
    assert cfg.scheduler.leader_election.resource_namespace == NAMESPACE
    assert cfg.scheduler.watcher_address.startswith("http://ballast-watcher.")
