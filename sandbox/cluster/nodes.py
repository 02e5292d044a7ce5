"""Fake nodes that kwok manages: plain Node objects with kwok's annotation and any capacity."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.cluster import defaults
from sandbox.cluster.errors import NodesNotReadyError

T = defaults.REQUEST_TIMEOUT
# kwok serves every node's kubelet endpoints on its one port, so metrics-server (0.7+) follows
# this annotation to the node's /metrics/resource; harmless without metrics-server.
RESOURCE_METRICS_PATH = "metrics.k8s.io/resource-metrics-path"


def resource_metrics_path(node: str) -> str:
    return f"/metrics/nodes/{node}/metrics/resource"


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpu: str = defaults.NODE_CPU
    memory: str = defaults.NODE_MEMORY
    labels: dict[str, str] = field(default_factory=dict)
    # Each taint as {"key": ..., "value": ..., "effect": "NoSchedule"}.
    taints: list[dict[str, str]] = field(default_factory=list)
    pods: int = defaults.NODE_PODS
    # More resources in capacity and allocatable (sandbox/load/gpusim.py's nvidia.com/gpu).
    extended: dict[str, str] = field(default_factory=dict)


def numbered(count: int, prefix: str = defaults.NODE_NAME_PREFIX, **kwargs) -> list[NodeSpec]:
    return [NodeSpec(f"{prefix}{i}", **kwargs) for i in range(count)]


def node_body(spec: NodeSpec) -> client.V1Node:
    key, value = defaults.KWOK_NODE_ANNOTATION
    labels = {
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    } | spec.labels
    capacity = {"cpu": spec.cpu, "memory": spec.memory, "pods": str(spec.pods), **spec.extended}
    return client.V1Node(
        metadata=client.V1ObjectMeta(
            name=spec.name,
            labels=labels,
            annotations={key: value, RESOURCE_METRICS_PATH: resource_metrics_path(spec.name)},
        ),
        spec=client.V1NodeSpec(taints=[client.V1Taint(**t) for t in spec.taints] or None),
        # The apiserver keeps a node's status on create; kwok then only adds conditions.
        status=client.V1NodeStatus(capacity=capacity, allocatable=dict(capacity)),
    )


def create_nodes(api: client.ApiClient, specs: Iterable[NodeSpec]) -> list[str]:
    """Creates the nodes (an existing node of the same name is replaced); returns their names."""
    core = client.CoreV1Api(api)
    names = []
    for spec in specs:
        body = node_body(spec)
        try:
            core.create_node(body, _request_timeout=T)
        except ApiException as exc:
            if exc.status != 409:
                raise
            core.delete_node(spec.name, _request_timeout=T)
            _wait_gone(core, spec.name)
            core.create_node(body, _request_timeout=T)
        names.append(spec.name)
    return names


def delete_nodes(api: client.ApiClient, names: Iterable[str]) -> None:
    core = client.CoreV1Api(api)
    for name in names:
        try:
            core.delete_node(name, _request_timeout=T)
        except ApiException as exc:
            if exc.status != 404:
                raise


def ready_nodes(api: client.ApiClient) -> set[str]:
    items = client.CoreV1Api(api).list_node(_request_timeout=T).items
    return {
        n.metadata.name
        for n in items
        if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
    }


def wait_ready(
    api: client.ApiClient, names: Iterable[str], timeout: float = defaults.NODES_READY_TIMEOUT
) -> None:
    """Waits until kwok reports every named node Ready; raises TimeoutError naming the others."""
    waiting = set(names)
    deadline = time.monotonic() + timeout
    while True:
        waiting -= ready_nodes(api)
        if not waiting:
            return
        if time.monotonic() > deadline:
            shown = ", ".join(sorted(waiting)[:5])
            raise NodesNotReadyError(
                f"{len(waiting)} node(s) not Ready after {timeout:.0f} s ({shown}); "
                "is kwok running? see its log in the sandbox state folder"
            )
        time.sleep(0.2)


def _wait_gone(core: client.CoreV1Api, name: str) -> None:
    deadline = time.monotonic() + T
    while time.monotonic() < deadline:
        try:
            core.read_node(name, _request_timeout=T)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        time.sleep(0.05)
    raise TimeoutError(f"node {name} still exists {T:.0f} s after its deletion")
