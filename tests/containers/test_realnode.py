"""A real node in the sandbox (sandbox/cluster/realnode.py): a kubelet built from the pinned
module with containerd, runc and the bridge CNI plugin runs a pod that Ballast's scheduler bound,
from an image `make image` built, under the chart's container security settings and its probe.
"""

from __future__ import annotations

import ipaddress
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from sandbox.cluster import processes, realnode
from tests.containers.conftest import REDIS, Podman
from tests.fixtures.ports import free_port, wait_for


@pytest.fixture
def real_node(podman: Podman, sandbox, tmp_path: Path) -> Iterator[realnode.RealNode]:
    assert realnode.kubelet_binary().is_file(), "no kubelet: `make kubelet-build` builds it"
    archives = []
    for image in (realnode.PAUSE_IMAGE, REDIS):
        archive = tmp_path / f"{image.rsplit('/', 1)[-1].replace(':', '_')}.tar"
        podman("save", "--format", "oci-archive", "-o", str(archive), image)
        archives.append(archive)
    node = realnode.RealNode(sandbox, tmp_path / "node", die_with_parent=True)
    try:
        node.start(archives)
        yield node
    finally:
        node.stop()


@pytest.fixture
def ballast_scheduler(sandbox, tmp_path: Path) -> Iterator[None]:
    config = tmp_path / "scheduler.yaml"
    # No watcher: the scheduler places without load data (a failure in metrics never stops it).
    config.write_text(
        f"leaderElection: {{leaderElect: false}}\nwatcherAddress: http://127.0.0.1:{free_port()}\n"
    )
    log = tmp_path / "scheduler.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ballast.cli", "scheduler", "--config", str(config),
             "--kubeconfig", str(sandbox.kubeconfig), "--metrics-listen",
             f"127.0.0.1:{free_port()}"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_pod_bound_by_ballast_runs_on_the_real_node(
    real_node, ballast_scheduler, kube_api, namespace
):
    password = secrets.token_hex(12)
    core = client.CoreV1Api(kube_api)
    # The chart's Redis container (templates/redis.yaml, _helpers.tpl's security settings).
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="redis-on-a-real-node"),
        spec=client.V1PodSpec(
            scheduler_name="ballast",
            node_selector={"kubernetes.io/hostname": real_node.name},
            automount_service_account_token=False,
            security_context=client.V1PodSecurityContext(
                run_as_non_root=True, run_as_user=999, run_as_group=999, fs_group=999,
                seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault"),
            ),
            containers=[
                client.V1Container(
                    name="redis",
                    image=REDIS,
                    image_pull_policy="Never",
                    args=["--save", "", "--appendonly", "no", "--requirepass", "$(REDIS_PASSWORD)"],
                    env=[
                        client.V1EnvVar(name="REDIS_PASSWORD", value=password),
                        client.V1EnvVar(name="REDISCLI_AUTH", value="$(REDIS_PASSWORD)"),
                    ],
                    readiness_probe=client.V1Probe(
                        _exec=client.V1ExecAction(command=["redis-cli", "ping"]),
                        period_seconds=2,
                    ),
                    security_context=client.V1SecurityContext(
                        read_only_root_filesystem=True,
                        allow_privilege_escalation=False,
                        capabilities=client.V1Capabilities(drop=["ALL"]),
                    ),
                    volume_mounts=[client.V1VolumeMount(name="data", mount_path="/data")],
                )
            ],
            volumes=[client.V1Volume(name="data", empty_dir=client.V1EmptyDirVolumeSource())],
        ),
    )  # fmt: skip
    core.create_namespaced_pod(namespace, pod, _request_timeout=10)

    def ready():
        got = core.read_namespaced_pod(pod.metadata.name, namespace, _request_timeout=10)
        conditions = {c.type: c.status for c in got.status.conditions or []}
        return got if conditions.get("Ready") == "True" else None

    try:
        running = wait_for(ready, timeout=120, interval=1, what="the pod Ready on the real node")
    except AssertionError as exc:
        got = core.read_namespaced_pod(pod.metadata.name, namespace, _request_timeout=10)
        events = core.list_namespaced_event(namespace, _request_timeout=10).items
        said = "\n".join(f"{e.reason}: {e.message}" for e in events)
        log = processes.log_tail(real_node.log_dir / "kubelet.log", 40)
        raise AssertionError(f"{exc}\n{got.status}\n{said}\n--- kubelet\n{log}") from None
    assert running.spec.node_name == real_node.name
    assert ipaddress.ip_address(running.status.pod_ip) in ipaddress.ip_network(realnode.SUBNET)
    # Its own network namespace on the node's bridge, reached from the host; the password the
    # kubelet expanded from $(REDIS_PASSWORD) is the one Redis requires.
    ping = subprocess.run(
        ["redis-cli", "-h", running.status.pod_ip, "ping"],
        env={"REDISCLI_AUTH": password, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=10,
    )  # fmt: skip
    assert ping.stdout.strip() == "PONG", ping
