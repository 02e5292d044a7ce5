"""charts/ballast installed on the sandbox's real node (sandbox/cluster/realnode.py) from the
images `make image` built, imported into its containerd: every part's pod runs Ready under the
chart's security context and probes, reaching the apiserver through the `kubernetes` Service and
the others through cluster DNS (sandbox/cluster/servicenet.py); the chart's scheduler binds a pod
that starts; a new Redis password through `helm upgrade` restarts Redis and the watcher, which
is Ready again on it; `helm uninstall` leaves nothing. Then the node stops and leaves no
iptables rule, bridge or process behind.

The watcher reads a Prometheus that scrapes a node-exporter, both pods of the test in namespace
`monitoring`, where the chart looks by default (prometheus-k8s.monitoring.svc).
"""

from __future__ import annotations

import json
import secrets
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from sandbox.cluster import build, processes, realnode
from sandbox.cluster.namespaces import delete_namespace, ensure_namespace
from sandbox.peers.helm import chart
from tests.containers.conftest import BALLAST, NODE_EXPORTER, PROMETHEUS, REDIS, Podman
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import running

T = 10
NAMESPACE = chart.NAMESPACE
RELEASE = chart.RELEASE
MONITORING = "monitoring"
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"
PARTS = ("watcher", "scheduler", "rebalancer", "redis")
NAMESPACED = "deployments,statefulsets,replicasets,pods,services,configmaps,secrets," \
    "serviceaccounts,poddisruptionbudgets,roles,rolebindings,networkpolicies"  # fmt: skip
READY_TIMEOUT = 180.0


BUILTIN_CHAINS = {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}


def _rules() -> set[str]:
    """Every iptables and ip6tables rule and chain of the machine, counters left out."""
    lines = set()
    for save in ("iptables-save", "ip6tables-save"):
        out = subprocess.run([save], capture_output=True, text=True, timeout=30, check=True)
        lines |= {f"{save}: {line}" for line in _tables_in_use(out.stdout)}
    return lines


def _tables_in_use(saved: str) -> list[str]:
    """The lines of a save, without tables that hold only their built-in chains at ACCEPT: the
    kernel creates a table the first time anything touches it (on a fresh machine the kubelet
    is the first to touch ip6tables) and never takes it away, so such a table is no rule
    left behind; any rule, other chain or other policy in it still counts."""
    kept: list[str] = []
    table: list[str] = []
    for raw in saved.splitlines():
        if raw.startswith("#"):
            continue
        line = raw.split(" [", 1)[0] if raw.startswith(":") else raw
        table.append(line)
        if line == "COMMIT":
            if not all(_accepting_builtin(b) for b in table[1:-1]):
                kept.extend(table)
            table = []
    return kept + table


def _accepting_builtin(line: str) -> bool:
    """A chain line of a built-in chain whose policy is ACCEPT (counters already cut off)."""
    name, _, policy = line[1:].partition(" ")
    return line.startswith(":") and name in BUILTIN_CHAINS and policy == "ACCEPT"


@pytest.fixture(scope="module")
def node(podman: Podman, sandbox, tmp_path_factory) -> Iterator[realnode.RealNode]:
    assert realnode.kubelet_binary().is_file(), "no kubelet: `make kubelet-build` builds it"
    folder = tmp_path_factory.mktemp("chart-node")
    images = (realnode.PAUSE_IMAGE, BALLAST, REDIS, PROMETHEUS, NODE_EXPORTER)
    archives = realnode.save_images(images, folder / "images")
    assert len(archives) == len(images)
    rules = _rules()
    node = realnode.RealNode(sandbox, folder / "node", die_with_parent=True)
    try:
        node.start(archives)
        for archive in archives:
            archive.unlink()
        node.rules_before = rules  # type: ignore[attr-defined]
        yield node
    finally:
        node.stop()


def _values(node: str, tag: str) -> dict:
    on_node = {"nodeSelector": {"kubernetes.io/hostname": node}}
    return {
        "image": {"repository": BALLAST.split(":")[0], "tag": tag, "pullPolicy": "Never"},
        # One replica each: the chart's requests (watcher 200m, scheduler and rebalancer 500m,
        # Redis 50m) fit the node's two cores once, not twice.
        "watcher": {"replicas": 1, "pollInterval": 5, **on_node},
        "scheduler": {"replicas": 1, **on_node},
        "rebalancer": {"enabled": True, "replicas": 1, **on_node},
        "redis": {"image": REDIS, **on_node},
    }


def _monitoring(core: client.CoreV1Api, apps: client.AppsV1Api, node: str) -> None:
    """Prometheus (prometheus-k8s:9090) scraping a node-exporter, its series under the node's
    name as the watcher maps them (`instance`)."""
    config = {
        "global": {"scrape_interval": "5s"},
        "scrape_configs": [{
            "job_name": "node",
            "static_configs": [{"targets": ["node-exporter:9100"], "labels": {"instance": node}}],
        }],
    }  # fmt: skip
    core.create_namespaced_config_map(
        MONITORING,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="prometheus"),
            data={"prometheus.yml": yaml.safe_dump(config)},
        ),
        _request_timeout=T,
    )
    for name, image, port, args, mounts in (
        ("node-exporter", NODE_EXPORTER, 9100, [], []),
        ("prometheus-k8s", PROMETHEUS, 9090,
         ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"],
         [("config", "/etc/prometheus"), ("data", "/prometheus")]),
    ):  # fmt: skip
        labels = {"app": name}
        config = client.V1ConfigMapVolumeSource(name="prometheus")
        volumes = [
            client.V1Volume(name="config", config_map=config),
            client.V1Volume(name="data", empty_dir=client.V1EmptyDirVolumeSource()),
        ]
        pod = client.V1PodSpec(
            node_selector={"kubernetes.io/hostname": node},
            containers=[client.V1Container(
                name=name, image=image, image_pull_policy="Never", args=args,
                ports=[client.V1ContainerPort(container_port=port)],
                volume_mounts=[client.V1VolumeMount(name=v, mount_path=p) for v, p in mounts],
            )],
            volumes=volumes if mounts else None,
        )  # fmt: skip
        deploy = client.V1Deployment(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1DeploymentSpec(
                replicas=1,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels), spec=pod
                ),
            ),
        )
        apps.create_namespaced_deployment(MONITORING, deploy, _request_timeout=T)
        service = client.V1Service(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1ServiceSpec(selector=labels, ports=[client.V1ServicePort(port=port)]),
        )
        core.create_namespaced_service(MONITORING, service, _request_timeout=T)


def _pods(core: client.CoreV1Api, part: str) -> list[client.V1Pod]:
    selector = f"{INSTANCE},app.kubernetes.io/name=ballast-{part}"
    return core.list_namespaced_pod(NAMESPACE, label_selector=selector, _request_timeout=T).items


def _ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def _explain(core: client.CoreV1Api, node: realnode.RealNode, namespaces: tuple[str, ...]) -> str:
    """What a timed-out wait shows: each pod's state, the events and the node's logs."""
    said = []
    for ns in namespaces:
        for pod in core.list_namespaced_pod(ns, _request_timeout=T).items:
            states = [(s.name, s.ready, s.restart_count, s.state, s.last_state)
                      for s in pod.status.container_statuses or []]  # fmt: skip
            said.append(
                f"{ns}/{pod.metadata.name} {pod.spec.node_name} {pod.status.phase} {states}"
            )
            # From the kubelet's log folder: the apiserver has no client certificate for it.
            folder = node.state_dir / "pod-logs" / f"{ns}_{pod.metadata.name}_{pod.metadata.uid}"
            for log in sorted(folder.glob("*/*.log")):
                said.append(f"--- {log.parent.name}\n{processes.log_tail(log, 15)}")
        events = core.list_namespaced_event(ns, _request_timeout=T).items
        said += [f"{e.involved_object.name}: {e.reason}: {e.message}" for e in events[-30:]]
    for name in ("kubelet", "kube-proxy", "coredns"):
        said.append(f"--- {name}\n{processes.log_tail(node.log_dir / f'{name}.log', 15)}")
    return "\n".join(said)


def _wait_parts_ready(core, node: realnode.RealNode, what: str, old: dict[str, set[str]]) -> dict:
    """Waits until each part has exactly one pod, Ready, on the node and not one of `old`'s."""

    def ready() -> dict[str, client.V1Pod] | None:
        found = {}
        for part in PARTS:
            pods = [p for p in _pods(core, part) if p.metadata.deletion_timestamp is None]
            # By uid: Redis' StatefulSet gives its new pod the old one's name.
            if len(pods) != 1 or pods[0].metadata.uid in old.get(part, set()):
                return None
            if not _ready(pods[0]) or pods[0].spec.node_name != node.name:
                return None
            found[part] = pods[0]
        return found

    try:
        return wait_for(ready, READY_TIMEOUT, 1, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_explain(core, node, (NAMESPACE, MONITORING))}") from None


def _as_run(node: realnode.RealNode, pod: client.V1Pod) -> tuple[int, str, int]:
    """The pod's first container's process as the host sees it: its uid, the options of its
    root mount, its effective capabilities."""
    cid = pod.status.container_statuses[0].container_id.split("://", 1)[1]
    tasks = node.ctr("tasks", "ls").stdout.splitlines()[1:]
    pid = next(line.split()[1] for line in tasks if line.split()[0] == cid)
    status = Path(f"/proc/{pid}/status").read_text()
    uid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:")))
    caps = int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("CapEff:")), 16)  # fmt: skip
    mounts = Path(f"/proc/{pid}/mounts").read_text().splitlines()
    root = next(line.split()[3] for line in mounts if line.split()[1] == "/")
    return uid, root, caps


def _watcher_readyz(pod: client.V1Pod) -> dict:
    url = f"http://{pod.status.pod_ip}:2020/readyz"
    with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 -- a pod of the test
        return json.loads(answer.read())


def _redis_ping(pod: client.V1Pod, password: str) -> str:
    done = subprocess.run(
        ["redis-cli", "-h", pod.status.pod_ip, "ping"],
        env={"REDISCLI_AUTH": password, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=10,
    )  # fmt: skip
    return (done.stdout + done.stderr).strip()


def _helm(sandbox, *args: str) -> None:
    chart.helm(*args, f"--namespace={NAMESPACE}", kubeconfig=sandbox.kubeconfig)


def _check_serving(pods: dict[str, client.V1Pod], password: str) -> None:
    """Redis answers `password`, and the watcher's /readyz names no store trouble."""
    assert _redis_ping(pods["redis"], password) == "PONG"
    readyz = _watcher_readyz(pods["watcher"])
    assert readyz["ready"] and not [r for r in readyz["reasons"] if r.startswith("store")], readyz


def _place_a_pod(core: client.CoreV1Api, node: realnode.RealNode) -> None:
    """A pod for the chart's scheduler (no other scheduler serves its profile): bound by it,
    started by the kubelet."""
    name = "placed-by-the-chart"
    container = client.V1Container(
        name="sleep", image=BALLAST, image_pull_policy="Never",
        command=["python", "-c", "import time; time.sleep(3600)"],
    )  # fmt: skip
    spec = client.V1PodSpec(
        scheduler_name="ballast",
        node_selector={"kubernetes.io/hostname": node.name},
        containers=[container],
    )
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name=name), spec=spec)
    core.create_namespaced_pod("default", pod, _request_timeout=T)

    def started():
        got = core.read_namespaced_pod(name, "default", _request_timeout=T)
        return got if got.status.phase == "Running" else None

    try:
        placed = wait_for(started, 90, 1, "the chart's scheduler to place a running pod")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_explain(core, node, (NAMESPACE, 'default'))}") from None
    assert placed.spec.node_name == node.name
    where = f"involvedObject.name={name}"
    events = core.list_namespaced_event("default", field_selector=where, _request_timeout=T)
    scheduled = [e for e in events.items if e.reason == "Scheduled"]
    by = {e.reporting_component or e.source.component for e in scheduled}
    assert scheduled and by == {"ballast"}, by
    core.delete_namespaced_pod(name, "default", grace_period_seconds=0, _request_timeout=T)


def _left(sandbox) -> list[str]:
    """The release's objects still in the cluster."""
    kubectl = [str(build.binary("kubectl")), f"--kubeconfig={sandbox.kubeconfig}"]
    found = []
    for kinds in (NAMESPACED, "clusterroles,clusterrolebindings"):
        listed = subprocess.run(
            [*kubectl, "get", kinds, "-A", "-l", INSTANCE, "-o", "name"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        found += listed.stdout.split()
    return found


def test_the_chart_runs_on_the_real_node(node, sandbox, kube_api, tmp_path):
    core, apps = client.CoreV1Api(kube_api), client.AppsV1Api(kube_api)
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(_values(node.name, BALLAST.split(":")[1])))
    first, second = secrets.token_hex(16), secrets.token_hex(16)
    ensure_namespace(kube_api, NAMESPACE)
    ensure_namespace(kube_api, MONITORING)
    try:
        _monitoring(core, apps, node.name)
        # No kube-scheduler in the sandbox: Ballast, in this process, places the chart's own
        # pods as the default scheduler; the test's pod goes to the chart's scheduler.
        with running(kube_api, {"profiles": [{"schedulerName": "default-scheduler"}]}):
            chart_args = [RELEASE, str(chart.CHART), f"--values={values}"]
            _helm(sandbox, "install", *chart_args, f"--set=redis.auth.password={first}")
            pods = _wait_parts_ready(core, node, "every part Ready on the real node", {})
            for part, pod in pods.items():
                container = pod.spec.containers[0]
                assert container.image == (REDIS if part == "redis" else BALLAST), part
                assert container.readiness_probe is not None, part
                # What the chart asked for, as runc ran it: the process's user, its root
                # filesystem read-only, no capability.
                uid, root, caps = _as_run(node, pod)
                assert uid == (999 if part == "redis" else 10001), part
                assert root.startswith("ro"), (part, root)
                assert caps == 0, part
            _check_serving(pods, first)
            _place_a_pod(core, node)

            # A new Redis password: Redis and the watcher restart with it (their checksums).
            old = {part: {pods[part].metadata.uid} for part in ("watcher", "redis")}
            _helm(sandbox, "upgrade", *chart_args, "--reuse-values",
                  f"--set=redis.auth.password={second}")  # fmt: skip
            pods = _wait_parts_ready(core, node, "Redis and the watcher back, new password", old)
            _check_serving(pods, second)
            assert "WRONGPASS" in _redis_ping(pods["redis"], first)

            _helm(sandbox, "uninstall", RELEASE, "--wait", "--timeout=90s")
    finally:
        chart.helm("uninstall", RELEASE, f"--namespace={NAMESPACE}", "--ignore-not-found",
                   kubeconfig=sandbox.kubeconfig, check=False)  # fmt: skip
        delete_namespace(kube_api, MONITORING, finalize=False)
    wait_for(lambda: _left(sandbox) == [], 60, 1, "nothing of the release left")
    # Nor on the node: every container stopped (Prometheus' with its namespace).
    wait_for(lambda: node.ctr("tasks", "ls", "-q").stdout.split() == [], 60, 1,
             "no container left on the node")  # fmt: skip


def test_stopping_the_node_leaves_no_rule_bridge_or_process(node, sandbox):
    """After the chart's test: the node stops, and the machine is as it was before it started."""
    before = node.rules_before  # type: ignore[attr-defined]
    during = _rules()
    # kube-proxy was at work: the kubernetes Service's chain, and the chart's were there.
    assert any("KUBE-SERVICES" in line for line in during - before)
    recorded = processes.recorded(node.pid_dir)
    assert {r.name for r in recorded} >= {"kubelet", "kube-proxy", "coredns", "relay"}
    node.stop()
    after = _rules()
    assert after == before, {"added": sorted(after - before), "removed": sorted(before - after)}
    assert not [r for r in recorded if processes.alive(r)]
    link = subprocess.run(["ip", "link", "show", realnode.BRIDGE], capture_output=True, timeout=10)
    assert link.returncode != 0, "the bridge is still there"
