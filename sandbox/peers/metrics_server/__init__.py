"""metrics-server in the sandbox, fed by kwok's simulated kubelets.

The path a real cluster has: metrics-server scrapes every node's kubelet `/metrics/resource`,
keeps the last two samples, and serves `metrics.k8s.io/v1beta1` through the apiserver's
aggregation layer (an APIService). Here kwok plays every kubelet on its one port, each node under
`/metrics/nodes/<node>/metrics/resource`; metrics-server (0.7+) finds that path in the node
annotation `metrics.k8s.io/resource-metrics-path`, which `sandbox.cluster.nodes` puts on every node.

What the kubelets report is computed by kwok from `kwok_config()`: a `Metric` (the resource
endpoint's series) and a `ClusterResourceUsage` (each container's use), both CEL expressions over
annotations, so nothing has to be written per scrape:

- a pod uses `USAGE_CPU` cores and `USAGE_MEMORY` bytes, reached linearly over `USAGE_RAMP`
  seconds after `USAGE_SINCE` (Unix seconds); without `USAGE_CPU` it uses nothing;
- a node adds its background: `BACKGROUND_CPU` cores wobbling by the fraction `BACKGROUND_WOBBLE`
  with period `BACKGROUND_PERIOD` and phase `BACKGROUND_PHASE` (a sine, as in the simulator), and
  `BACKGROUND_MEMORY` bytes.

The closed-loop simulator (`sandbox.load.simulator`) writes these once per pod and node, so the same
seeded load reaches the watcher through Prometheus or through metrics-server. A test can write
them itself for exact figures.
"""

from __future__ import annotations

import base64
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.cluster import build, processes, versions
from sandbox.cluster.certs import ensure_aggregation_pki
from sandbox.cluster.nodes import resource_metrics_path
from sandbox.load.usage import (
    BACKGROUND_CPU,
    BACKGROUND_MEMORY,
    BACKGROUND_PERIOD,
    BACKGROUND_PHASE,
    BACKGROUND_WOBBLE,
    USAGE_CPU,
    USAGE_MEMORY,
    USAGE_RAMP,
    USAGE_SINCE,
)
from shared.quantities import QuantityError, bytes_value, cpu_millis

if TYPE_CHECKING:
    from sandbox.cluster.controlplane import ControlPlane

NAME = "metrics-server"
GROUP, VERSION = "metrics.k8s.io", "v1beta1"
APISERVICE = f"{VERSION}.{GROUP}"
NAMESPACE = "kube-system"
# metrics-server's own default is 60 s; its published manifests, kwokctl and most managed
# clusters run 15 s. Below 10 s it refuses to start.
RESOLUTION = 15.0
STATE_FILE = "metrics-server.json"
REQUEST_TIMEOUT = 5.0
AVAILABLE_TIMEOUT = 60.0

# A fresh `ballast sandbox up --with-metrics-server` node's background: an idle machine.
IDLE_CPU = 0.05
IDLE_MEMORY = 0.10


# -- what kwok serves ---------------------------------------------------------------------------
def _annotation(obj: str, key: str) -> str:
    return f'double({obj}.metadata.annotations["{key}"])'


def _has(obj: str, key: str) -> str:
    return f'"{key}" in {obj}.metadata.annotations'


def cos_expression(x: str) -> str:
    """cos(x) as CEL arithmetic (kwok's CEL has no trigonometry): x reduced to [0, 2 pi), then
    cos(r) = -cos(r - pi), a Taylor polynomial to degree 18 on [-pi, pi) (error < 4e-9).

    Only +, -, *, / and double()/int() conversions, which Python spells the same way once
    double is float, so a unit test evaluates the same string."""
    two_pi = repr(2 * math.pi)
    reduced = f"(({x}) - {two_pi} * double(int(({x}) / {two_pi})))"
    y = f"({reduced} - {math.pi!r})"
    z = f"({y} * {y})"
    # cos(y) = 1 - z/2 (1 - z/12 (1 - z/30 (...))): the divisors are (2k-1)(2k).
    poly = "1.0"
    for k in range(9, 0, -1):
        poly = f"(1.0 - {z} / {float((2 * k - 1) * 2 * k)!r} * {poly})"
    return f"(-{poly})"


def node_background_cpu_seconds() -> str:
    """The integral of the background, B (1 + w sin(omega t + phi)), since the node was created:
    B (t - t0 + w / omega (cos(omega t0 + phi) - cos(omega t + phi))), written with the node's
    age for t - t0 and a constant that keeps the counter at or above 0 in place of the first
    cosine (a rate does not see constants)."""
    b, w = _annotation("node", BACKGROUND_CPU), _annotation("node", BACKGROUND_WOBBLE)
    period, phase = _annotation("node", BACKGROUND_PERIOD), _annotation("node", BACKGROUND_PHASE)
    omega = f"({2 * math.pi!r} / {period})"
    angle = f"({omega} * UnixSecond(Now()) + {phase})"
    return f"{b} * (SinceSecond(node) + {w} / {omega} * (1.0 - {cos_expression(angle)}))"


def _pod_ramp() -> str:
    since, ramp = _annotation("pod", USAGE_SINCE), _annotation("pod", USAGE_RAMP)
    share = f"((UnixSecond(Now()) - {since}) / {ramp})"
    clamped = f"({share} >= 1.0 ? 1.0 : ({share} <= 0.0 ? 0.0 : {share}))"
    ramped = f"{_has('pod', USAGE_RAMP)} && {_has('pod', USAGE_SINCE)} && {ramp} > 0.0"
    return f"(({ramped}) ? {clamped} : 1.0)"


def _pod_usage(key: str) -> str:
    return f"{_has('pod', key)} ? {_annotation('pod', key)} * {_pod_ramp()} : 0.0"


def _node_series(name: str, help_text: str, kind: str, value: str) -> dict[str, Any]:
    return {"name": name, "dimension": "node", "help": help_text, "kind": kind, "value": value}


def _pod_series(name: str, help_text: str, kind: str, value: str, container: bool) -> dict:
    labels = [
        {"name": "namespace", "value": "pod.metadata.namespace"},
        {"name": "pod", "value": "pod.metadata.name"},
    ]
    if container:
        labels.insert(0, {"name": "container", "value": "container.name"})
    return {
        "name": name,
        "dimension": "container" if container else "pod",
        "help": help_text,
        "kind": kind,
        "labels": labels,
        "value": value,
    }


def kwok_config() -> list[dict[str, Any]]:
    """kwok's Metric (the kubelet's /metrics/resource series, as kwok's own metrics-resource
    example names them) and the ClusterResourceUsage every pod's containers follow."""
    has_bg = _has("node", BACKGROUND_CPU)
    node_cpu = f'node.CumulativeUsage("cpu") + ({has_bg} ? {node_background_cpu_seconds()} : 0.0)'
    bg_memory = (
        f"({_has('node', BACKGROUND_MEMORY)} ? {_annotation('node', BACKGROUND_MEMORY)} : 0.0)"
    )
    series = [
        _node_series("scrape_error", "1 if there was an error getting metrics", "gauge", "0"),
        _node_series(
            "node_cpu_usage_seconds_total", "Cumulative node CPU in core-seconds", "counter",
            node_cpu,
        ),
        _node_series(
            "node_memory_working_set_bytes", "Node working set in bytes", "gauge",
            f'node.Usage("memory") + {bg_memory}',
        ),
        _pod_series(
            "container_start_time_seconds", "Container start time (Unix seconds)", "gauge",
            "double(int(pod.metadata.creationTimestamp))", container=True,
        ),
        _pod_series(
            "container_cpu_usage_seconds_total", "Cumulative container CPU in core-seconds",
            "counter", 'pod.CumulativeUsage("cpu", container.name)', container=True,
        ),
        _pod_series(
            "container_memory_working_set_bytes", "Container working set in bytes", "gauge",
            'pod.Usage("memory", container.name)', container=True,
        ),
        _pod_series(
            "pod_cpu_usage_seconds_total", "Cumulative pod CPU in core-seconds", "counter",
            'pod.CumulativeUsage("cpu")', container=False,
        ),
        _pod_series(
            "pod_memory_working_set_bytes", "Pod working set in bytes", "gauge",
            'pod.Usage("memory")', container=False,
        ),
    ]  # fmt: skip
    metric = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Metric",
        "metadata": {"name": "metrics-resource"},
        "spec": {"path": resource_metrics_path("{nodeName}"), "metrics": series},
    }
    usage = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterResourceUsage",
        "metadata": {"name": "usage-from-annotations"},
        "spec": {
            "usages": [
                {
                    "usage": {
                        "cpu": {"expression": _pod_usage(USAGE_CPU)},
                        "memory": {"expression": _pod_usage(USAGE_MEMORY)},
                    }
                }
            ]
        },
    }
    return [metric, usage]


# -- the processes ------------------------------------------------------------------------------
def _state(plane: ControlPlane) -> Path:
    return plane.state_dir / STATE_FILE


def ports(plane: ControlPlane) -> dict[str, int]:
    """{"kubelet": kwok's server port, "metrics_server": metrics-server's}, as `kwok_args` picked
    them for this run: a restarted metrics-server comes back where the APIService points."""
    return json.loads(_state(plane).read_text())


def kwok_args(plane: ControlPlane) -> list[str]:
    """kwok's extra flags: serve the kubelet endpoints on 127.0.0.1 with a certificate of the
    sandbox CA, report that address and port in each node's status, read `kwok_config()`.
    Picks this run's ports for kwok's server and metrics-server."""
    agg = ensure_aggregation_pki(plane.pki)
    kubelet, server = processes.free_ports(2)
    _state(plane).write_text(json.dumps({"kubelet": kubelet, "metrics_server": server}))
    port = kubelet
    config = plane.state_dir / "kwok-metrics.yaml"
    config.write_text(yaml.safe_dump_all(kwok_config(), sort_keys=False))
    return [
        f"--config={config}",
        f"--server-address=127.0.0.1:{port}",
        "--node-ip=127.0.0.1",
        f"--node-port={port}",
        f"--tls-cert-file={agg.kubelet_cert}",
        f"--tls-private-key-file={agg.kubelet_key}",
        # Otherwise every scrape of a node without pods logs five "pods not found" warnings.
        "--v=ERROR",
    ]


def server_args(plane: ControlPlane, resolution: float | None = None) -> list[str]:
    agg = ensure_aggregation_pki(plane.pki)
    resolution = resolution or RESOLUTION
    return [
        "--bind-address=127.0.0.1",
        f"--secure-port={ports(plane)['metrics_server']}",
        f"--tls-cert-file={agg.metrics_server_cert}",
        f"--tls-private-key-file={agg.metrics_server_key}",
        f"--kubeconfig={plane.kubeconfig}",
        f"--authentication-kubeconfig={plane.kubeconfig}",
        f"--authorization-kubeconfig={plane.kubeconfig}",
        # kwok's kubelets: the node's InternalIP and status port, certificate of the sandbox CA.
        "--kubelet-preferred-address-types=InternalIP",
        "--kubelet-use-node-status-port",
        f"--kubelet-certificate-authority={plane.ca_file}",
        "--kubelet-request-timeout=5s",
        f"--metric-resolution={resolution:g}s",
    ]


class Addon:
    """metrics-server as a control-plane addon, for whoever composes the two (the CLI, the demo,
    the fixtures, the benchmarks): `ControlPlane(..., addons=[metrics_server.Addon()])` starts
    kwok with `kwok_args` and metrics-server once the nodes are Ready."""

    def kwok_args(self, plane: ControlPlane) -> list[str]:
        return kwok_args(plane)

    def start(self, plane: ControlPlane) -> None:
        start(plane)


def start(plane: ControlPlane, resolution: float | None = None) -> None:
    """Starts metrics-server for a running sandbox whose kwok was started with `kwok_args`,
    registers it as the metrics.k8s.io APIService and waits until the aggregator has it.
    `resolution`: seconds between scrapes, RESOLUTION when None (the test fixture lowers it)."""
    binary = build.binary(versions.metrics_server_binary())
    plane.spawn(NAME, [str(binary), *server_args(plane, resolution)])
    with plane.api_client() as api:
        register(plane, api)
        idle_background(api)
        plane.wait_until(NAME, lambda: available(api), AVAILABLE_TIMEOUT)


def idle_background(api: client.ApiClient) -> list[str]:
    """Gives the nodes that have no background use yet an idle machine's (IDLE_CPU and
    IDLE_MEMORY of allocatable, no wobble), so `kubectl top nodes` shows every node of a fresh
    `ballast sandbox up`: metrics-server leaves out a node whose CPU counter stays at 0. The
    simulator replaces it with its own. Returns the nodes annotated."""
    core = client.CoreV1Api(api)
    done = []
    for node in core.list_node(_request_timeout=REQUEST_TIMEOUT).items:
        if BACKGROUND_CPU in (node.metadata.annotations or {}):
            continue
        alloc = node.status.allocatable or {}
        try:
            cores = cpu_millis(alloc.get("cpu", "0")) / 1000
            memory = bytes_value(alloc.get("memory", "0"))
        except QuantityError:
            continue
        annotations = {
            BACKGROUND_CPU: f"{IDLE_CPU * cores:.6f}",
            BACKGROUND_MEMORY: f"{IDLE_MEMORY * memory:.0f}",
            BACKGROUND_WOBBLE: "0",
            BACKGROUND_PERIOD: "60",
            BACKGROUND_PHASE: "0",
        }
        body = {"metadata": {"annotations": annotations}}
        core.patch_node(node.metadata.name, body, _request_timeout=REQUEST_TIMEOUT)
        done.append(node.metadata.name)
    return done


def stop(plane: ControlPlane) -> None:
    """Stops metrics-server (SIGTERM, as a rollout does) and waits until its port is free; the
    APIService stays, so the aggregator answers 503 for metrics.k8s.io until `start`. A started
    again metrics-server has no samples: a node has metrics only after two scrapes."""
    for rec in processes.recorded(plane.pid_dir):
        if rec.name == NAME:
            processes.stop(rec, 10.0)
    port = ports(plane)["metrics_server"]
    plane.wait_until("kube-apiserver", lambda: processes.port_free(port), 10.0)


def register(plane: ControlPlane, api: client.ApiClient) -> None:
    """The Service and APIService a metrics-server install creates. The Service is an
    ExternalName for 127.0.0.1: the aggregator resolves such a service to its name and port
    itself, where a ClusterIP Service would need a kube-proxy and endpoints the sandbox lacks."""
    port = ports(plane)["metrics_server"]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "type": "ExternalName",
            "externalName": "localhost",
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        },
    }
    ca_bundle = plane.ca_file.read_bytes()
    apiservice = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": APISERVICE},
        "spec": {
            "group": GROUP,
            "version": VERSION,
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
            "service": {"name": NAME, "namespace": NAMESPACE, "port": port},
            "caBundle": base64.b64encode(ca_bundle).decode(),
        },
    }
    core = client.CoreV1Api(api)
    try:
        core.create_namespaced_service(NAMESPACE, service, _request_timeout=REQUEST_TIMEOUT)
    except ApiException as exc:
        if exc.status != 409:
            raise
    reg = client.ApiregistrationV1Api(api)
    try:
        reg.create_api_service(apiservice, _request_timeout=REQUEST_TIMEOUT)
    except ApiException as exc:
        if exc.status != 409:
            raise


def available(api: client.ApiClient) -> bool:
    """The aggregator's verdict: the APIService's Available condition."""
    reg = client.ApiregistrationV1Api(api)
    svc = reg.read_api_service(APISERVICE, _request_timeout=REQUEST_TIMEOUT)
    conditions = (svc.status.conditions if svc.status else None) or []
    return any(c.type == "Available" and c.status == "True" for c in conditions)


def wait_node_metrics(plane: ControlPlane, nodes: list[str], timeout: float = 60.0) -> dict:
    """Waits until metrics-server reports every node in `nodes`; returns NodeMetrics by name.
    It needs two scrapes of a node (one resolution apart) before it has a CPU rate."""
    deadline = time.monotonic() + timeout
    url = f"{plane.base_url}/apis/{GROUP}/{VERSION}/nodes"
    have: dict[str, Any] = {}
    with plane.session() as s:
        while time.monotonic() < deadline:
            try:
                resp = s.get(url, timeout=REQUEST_TIMEOUT)
                if resp.ok:
                    have = {i["metadata"]["name"]: i for i in resp.json().get("items") or []}
                    if all(n in have for n in nodes):
                        return have
            except requests.RequestException:
                pass
            time.sleep(0.5)
    missing = sorted(set(nodes) - set(have))
    raise TimeoutError(f"metrics-server did not report {missing} within {timeout:.0f} s")
