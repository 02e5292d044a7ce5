"""The sandbox control plane is a real one: RBAC, binding conflicts, kwok's nodes and pods."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from kubernetes import client

from sandbox.cluster import build, versions
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.processes import alive, recorded
from tests.fixtures.ports import wait_for

T = 10


def _pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        # A scheduler name nobody serves: only this test's binding places the pod.
        "spec": {
            "schedulerName": "nobody",
            "containers": [{"name": "c", "image": "registry.invalid/none:1"}],
        },
    }


def _bind(sandbox: ControlPlane, namespace: str, pod: str, node: str) -> int:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    url = f"{sandbox.base_url}/api/v1/namespaces/{namespace}/pods/{pod}/binding"
    with sandbox.session() as s:
        return s.post(url, json=body, timeout=T).status_code


def test_nodes_go_ready_with_their_capacity(kube_api, kube_nodes):
    names = kube_nodes(3, cpu="8", memory="32Gi", labels={"zone": "a"})
    core = client.CoreV1Api(kube_api)
    for name in names:
        node = core.read_node(name, _request_timeout=T)
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True"
        assert node.status.allocatable["cpu"] == "8"
        assert node.status.allocatable["memory"] == "32Gi"
        assert node.metadata.labels["zone"] == "a"
        assert not node.spec.taints  # TaintNodesByCondition is off: no not-ready taint


def test_bound_pod_goes_running_and_second_binding_conflicts(
    sandbox, kube_api, kube_nodes, namespace
):
    first, second = kube_nodes(2)
    core = client.CoreV1Api(kube_api)
    core.create_namespaced_pod(namespace, _pod("p"), _request_timeout=T)
    assert core.read_namespaced_pod("p", namespace, _request_timeout=T).status.phase == "Pending"

    assert _bind(sandbox, namespace, "p", first) == 201
    wait_for(
        lambda: (
            core.read_namespaced_pod("p", namespace, _request_timeout=T).status.phase == "Running"
        ),
        timeout=30,
        what="kwok to run the bound pod",
    )
    assert _bind(sandbox, namespace, "p", second) == 409
    assert core.read_namespaced_pod("p", namespace, _request_timeout=T).spec.node_name == first


def test_service_account_without_rights_is_forbidden(sandbox, kube_api, namespace):
    core = client.CoreV1Api(kube_api)
    sa = client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="nobody"))
    core.create_namespaced_service_account(namespace, sa, _request_timeout=T)
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    token = core.create_namespaced_service_account_token(
        "nobody", namespace, request, _request_timeout=T
    ).status.token

    headers = {"Authorization": f"Bearer {token}"}
    url = f"{sandbox.base_url}/api/v1/namespaces/{namespace}/pods"
    answer = requests.get(url, headers=headers, verify=str(sandbox.ca_file), timeout=T)
    assert answer.status_code == 403
    # Authenticated as the service account (not 401), then refused by RBAC.
    assert f"system:serviceaccount:{namespace}:nobody" in answer.json()["message"]
    # The same request as the admin succeeds, so it is the identity that was refused.
    with sandbox.session() as s:
        assert s.get(url, timeout=T).status_code == 200


def test_namespace_fixture_gives_a_default_service_account(kube_api, namespace):
    core = client.CoreV1Api(kube_api)
    assert core.read_namespaced_service_account("default", namespace, _request_timeout=T)


def _ballast(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ballast.cli", "sandbox", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_up_env_down(tmp_path: Path):
    state = str(tmp_path / "state")
    ports = ["--apiserver-port", "0", "--etcd-port", "0", "--etcd-peer-port", "0"]
    up = _ballast("up", "--nodes", "2", "--state-dir", state, *ports)
    try:
        assert up.returncode == 0, up.stderr
        assert "sandbox up in" in up.stdout

        env_lines = _ballast("env", "--state-dir", state).stdout
        assert f"export KUBECONFIG={tmp_path / 'state' / 'kubeconfig'}" in env_lines
        kubectl = build.binary("kubectl")
        env = dict(os.environ, KUBECONFIG=str(tmp_path / "state" / "kubeconfig"))
        nodes = subprocess.run(
            [str(kubectl), "get", "nodes", "--no-headers"],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        assert nodes.returncode == 0, nodes.stderr
        statuses = [line.split()[1] for line in nodes.stdout.splitlines()]
        assert statuses == ["Ready", "Ready"]

        again = _ballast("up", "--state-dir", state, *ports)
        assert again.returncode == 1
        assert "is running" in again.stderr
    finally:
        procs = recorded(Path(state) / "pids")
        down = _ballast("down", "--state-dir", state)
    assert down.returncode == 0, down.stderr
    assert {p.name for p in procs} == {"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}
    assert not [p.name for p in procs if alive(p)]
    assert (Path(state) / "logs" / "kube-controller-manager.log").stat().st_size > 0


def test_cli_up_without_controllers(tmp_path: Path):
    state = str(tmp_path / "state")
    ports = ["--apiserver-port", "0", "--etcd-port", "0", "--etcd-peer-port", "0"]
    up = _ballast("up", "--nodes", "1", "--no-controllers", "--state-dir", state, *ports)
    try:
        assert up.returncode == 0, up.stderr
        assert "controllers" not in up.stdout.splitlines()[0]
    finally:
        procs = recorded(Path(state) / "pids")
        _ballast("down", "--state-dir", state)
    assert {p.name for p in procs} == {"etcd", "kube-apiserver", "kwok"}


def test_cli_says_when_a_port_is_in_use(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        up = _ballast("up", "--state-dir", str(tmp_path), "--apiserver-port", port)
    assert up.returncode == 1
    assert f"port {port} on 127.0.0.1 (kube-apiserver) is in use" in up.stderr
    assert "Traceback" not in up.stderr
    assert not (tmp_path / "pids").exists()  # refused before starting anything


@pytest.mark.parametrize(
    "name, args, version",
    [
        ("etcd", ["--version"], versions.ETCD_VERSION),
        ("kube-apiserver", ["--version"], versions.KUBERNETES_VERSION),
        ("kubectl", ["version", "--client"], versions.KUBERNETES_VERSION),
        ("kwok", ["--version"], versions.KWOK_VERSION),
        ("kube-controller-manager", ["--version"], versions.KUBERNETES_VERSION),
        (versions.helm_binary(), ["version", "--short"], versions.HELM_VERSION),
    ],
)
def test_built_binaries_report_the_pinned_versions(name, args, version):
    run = subprocess.run(
        [str(build.binary(name)), *args], capture_output=True, text=True, timeout=30
    )
    assert version in run.stdout + run.stderr
