"""compose.yaml for real (`make compose-test`): podman-compose brings it up with the images
`make image` builds, against the sandbox's apiserver; the watcher turns Ready behind Redis'
password, node-exporter's numbers reach it through Prometheus, and the scheduler in its container
binds a pod. Everything is torn down after.

The containers share the project's bridge network, as compose makes it; the scheduler reaches
the apiserver, which listens on loopback, through a relay on that network's gateway
(sandbox/cluster/relay.py) and the certificate's name `kubernetes` (tls-server-name).
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from sandbox.cluster.nodes import NodeSpec, create_nodes, delete_nodes, wait_ready
from sandbox.cluster.relay import Relay
from tests.containers.conftest import BALLAST, NODE_EXPORTER, PROMETHEUS, REDIS, ROOT, Podman
from tests.fixtures.ports import free_port, wait_for

# compose/prometheus.yml labels node-exporter's series with this node name.
NODE = "compose-node"
UP_TIMEOUT = 300.0
CNI_NETWORKS = Path("/var/lib/cni/networks")


def _inline_kubeconfig(path: Path, server: str) -> dict:
    """The sandbox's kubeconfig with its files inlined (the container has none of them)."""
    config = yaml.safe_load(path.read_text())
    for section, key in (("clusters", "cluster"), ("users", "user")):
        for entry in config[section]:
            item = entry[key]
            for field in ("certificate-authority", "client-certificate", "client-key"):
                if field in item:
                    data = Path(item.pop(field)).read_bytes()
                    item[f"{field}-data"] = base64.b64encode(data).decode()
    cluster = config["clusters"][0]["cluster"]
    cluster["server"] = server
    cluster["tls-server-name"] = "kubernetes"  # a name the serving certificate carries
    return config


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return json.load(reply)


@pytest.fixture
def compose_up(podman: Podman, sandbox, tmp_path: Path) -> Iterator[dict[str, str]]:
    project = f"ballast-compose-test-{secrets.token_hex(3)}"
    network = f"{project}_default"  # podman-compose's name for the default network
    podman(
        "network", "create", "--label", f"io.podman.compose.project={project}", network
    )  # fmt: skip
    relay = None
    env = dict(podman.env)
    try:
        info = json.loads(podman("network", "inspect", network).stdout)[0]
        gateway = _gateway(info)
        relay = Relay(gateway, sandbox.ports.apiserver)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                _inline_kubeconfig(sandbox.kubeconfig, f"https://{gateway}:{relay.port}")
            )
        )
        kubeconfig.chmod(0o644)  # read by uid 10001 in the container
        watcher_port = free_port()
        env |= {
            "BALLAST_IMAGE": BALLAST,
            "BALLAST_REDIS_IMAGE": REDIS,
            "BALLAST_PROMETHEUS_IMAGE": PROMETHEUS,
            "BALLAST_NODE_EXPORTER_IMAGE": NODE_EXPORTER,
            "BALLAST_REDIS_PASSWORD": secrets.token_hex(16),
            "BALLAST_KUBECONFIG": str(kubeconfig),
            "BALLAST_WATCHER_PUBLISH": f"127.0.0.1:{watcher_port}",
            "BALLAST_PROMETHEUS_PORT": str(free_port()),
        }
        compose = ["podman-compose", "-p", project, "-f", str(ROOT / "compose.yaml")]
        up = subprocess.run(
            [*compose, "up", "-d"], env=env, capture_output=True, text=True, timeout=UP_TIMEOUT
        )
        assert up.returncode == 0, up.stdout + up.stderr
        yield {"project": project, "watcher": f"http://127.0.0.1:{watcher_port}", **env}
    finally:
        # What each container said, for a failure's report (pytest shows it only then).
        names = podman("ps", "-a", "--filter", f"label=io.podman.compose.project={project}",
                       "--format", "{{.Names}}", check=False).stdout.split()  # fmt: skip
        for name in names:
            logs = podman("logs", "--tail", "25", name, check=False)
            print(f"--- {name}\n{logs.stdout}{logs.stderr}")
        subprocess.run(
            ["podman-compose", "-p", project, "-f", str(ROOT / "compose.yaml"), "down", "-t", "5"],
            env=env, capture_output=True, text=True, timeout=UP_TIMEOUT,
        )  # fmt: skip
        podman("network", "rm", "-f", network, check=False)
        # podman's CNI backend keeps the network's host-local address book after `rm`.
        shutil.rmtree(CNI_NETWORKS / network, ignore_errors=True)
        if relay is not None:
            relay.close()


def _gateway(info: dict) -> str:
    # podman 4's CNI backend: plugins[0].ipam.ranges; netavark: subnets[].gateway.
    for subnet in info.get("subnets", []):
        return subnet["gateway"]
    for plugin in info.get("plugins", []):
        for ranges in plugin.get("ipam", {}).get("ranges", []):
            for r in ranges:
                return r["gateway"]
    raise AssertionError(f"no gateway in the network: {info}")


def test_compose_runs_the_stack_and_schedules_a_pod(compose_up, podman, kube_api, namespace):
    project, watcher = compose_up["project"], compose_up["watcher"]
    create_nodes(kube_api, [NodeSpec(NODE)])
    try:
        wait_ready(kube_api, [NODE])
        # /readyz turns 200 only once the watcher reads Redis, which requires the password.
        wait_for(
            lambda: urllib.request.urlopen(f"{watcher}/readyz", timeout=5).status == 200,
            timeout=120,
            interval=1,
            what="the watcher's /readyz",
        )
        # node-exporter -> Prometheus -> watcher: the node's CPU is in the watcher's window.
        node = wait_for(
            lambda: _get_json(f"{watcher}/api/v1/nodes/{NODE}"),
            timeout=120,
            interval=2,
            what=f"the watcher's data for {NODE}",
        )
        assert node["state"] == "fresh" and 0 <= node["metrics"]["cpu"]["avg"] <= 100, node
        # Started clean in a read-only container: nothing there logged an error.
        logs = podman("logs", f"{project}_watcher_1")
        assert "ERROR" not in logs.stdout + logs.stderr, logs.stdout + logs.stderr
        # Redis refuses a client without the password, so the watcher's reads used it.
        redis = f"{project}_redis_1"
        # (the container's own REDISCLI_AUTH, for its healthcheck, is dropped for this one)
        anonymous = podman("exec", redis, "env", "-u", "REDISCLI_AUTH", "redis-cli", "get", "x")
        assert "NOAUTH" in anonymous.stdout + anonymous.stderr

        core = client.CoreV1Api(kube_api)
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name="placed-by-compose"),
            spec=client.V1PodSpec(
                scheduler_name="ballast",
                node_selector={"kubernetes.io/hostname": NODE},
                containers=[client.V1Container(name="c", image="busybox")],
            ),
        )
        core.create_namespaced_pod(namespace, pod, _request_timeout=10)
        # No other scheduler runs in the sandbox: a bound pod was bound by the container.
        bound = wait_for(
            lambda: (
                core.read_namespaced_pod(
                    "placed-by-compose", namespace, _request_timeout=10
                ).spec.node_name
            ),
            timeout=120,
            interval=1,
            what="the scheduler in compose to bind the pod",
        )
        assert bound == NODE
        events = core.list_namespaced_event(namespace, _request_timeout=10).items
        assert any(e.reason == "Scheduled" and e.involved_object.name == "placed-by-compose"
                   for e in events), [(e.reason, e.message) for e in events]  # fmt: skip
    finally:
        delete_nodes(kube_api, [NODE])
