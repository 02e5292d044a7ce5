"""Pods and nodes from the API's JSON (camelCase dicts) to the framework's PodInfo and NodeInfo.

Effective requests and limits follow kube-scheduler: the sum over containers, raised to the
largest init container (an init container runs beside the sidecars started before it), sidecars
(init containers with restartPolicy Always) added for the whole life of the pod, plus overhead.
Quantities are integers: CPU in millicores, everything else in base units (bytes, counts).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import numpy as np

from scheduler.framework.types import CPU, MEMORY, PODS, HostPort, NodeInfo, PodInfo, Resources
from shared.quantities import bytes_value, cpu_millis

# kube-scheduler's stand-in requests for containers that set none (NonZeroRequested), so an
# empty pod still moves the allocation-based scores.
DEFAULT_NONZERO_CPU_M = 100
DEFAULT_NONZERO_MEMORY = 200 * 1024 * 1024
# TargetLoadPacking's prediction for a container without limits or requests (upstream's)
DEFAULT_REQUESTS_CPU_M = 1000
DEFAULT_REQUESTS_MULTIPLIER = 1.5

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def go_round(x: float) -> int:
    """Go's math.Round: halves away from zero (Python's round() goes to even)."""
    whole = math.trunc(x)
    # x - whole is exact for binary floats, so no 0.49999999999999994 + 0.5 surprise
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return int(whole)


def go_round_array(x: np.ndarray) -> np.ndarray:
    """Go's math.Round over an array (numpy's round() goes to even)."""
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole)


def parse_resources(values: dict[str, Any] | None) -> Resources:
    """A ResourceList ({"cpu": "250m", "memory": "1Gi", ...}) in Ballast's integer units."""
    out: Resources = {}
    for name, quantity in (values or {}).items():
        out[name] = cpu_millis(quantity) if name == CPU else bytes_value(quantity)
    return out


def _add_into(total: Resources, part: Resources) -> None:
    for name, value in part.items():
        total[name] = total.get(name, 0) + value


def _max_into(total: Resources, part: Resources) -> None:
    for name, value in part.items():
        if value > total.get(name, 0):
            total[name] = value


def _container_values(container: dict[str, Any], kind: str, nonzero: bool) -> Resources:
    values = parse_resources((container.get("resources") or {}).get(kind))
    if nonzero:
        values.setdefault(CPU, DEFAULT_NONZERO_CPU_M)
        values.setdefault(MEMORY, DEFAULT_NONZERO_MEMORY)
    return values


def effective(spec: dict[str, Any], kind: str, nonzero: bool = False) -> Resources:
    """The pod's effective `kind` ("requests" or "limits"), as kube-scheduler computes it."""
    total: Resources = {}
    for container in spec.get("containers") or []:
        _add_into(total, _container_values(container, kind, nonzero))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in spec.get("initContainers") or []:
        values = _container_values(container, kind, nonzero)
        if container.get("restartPolicy") == "Always":
            # a sidecar keeps running beside the app containers and every later init container
            _add_into(total, values)
            _add_into(sidecars, values)
            during = dict(sidecars)
        else:
            during = dict(values)
            _add_into(during, sidecars)
        _max_into(init_peak, during)
    _max_into(total, init_peak)
    _add_into(total, parse_resources(spec.get("overhead")))
    return total


def parse_time(text: str | None) -> float:
    """RFC 3339 ("2024-05-01T10:00:00Z") to Unix seconds; 0.0 when absent."""
    if not text:
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def host_ports(spec: dict[str, Any]) -> tuple[HostPort, ...]:
    """The host ports the pod holds while it runs: its containers' and its sidecars' (init
    containers with restartPolicy Always), as upstream's GetHostPorts; an empty hostIP is every
    IP ("0.0.0.0") and an empty protocol TCP, as upstream sanitises them."""
    ports: list[HostPort] = []
    running = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in running + list(spec.get("containers") or []):
        for port in container.get("ports") or []:
            number = port.get("hostPort") or 0
            if isinstance(number, int) and number > 0:
                protocol = port.get("protocol") or "TCP"
                ports.append((protocol, port.get("hostIP") or "0.0.0.0", number))
    return tuple(ports)


def pod_info(pod: dict[str, Any]) -> PodInfo:
    """Parse a pod once; raises ValueError (QuantityError for a quantity) naming what is wrong
    when a field is malformed, whatever its JSON type."""
    try:
        return _pod_info(pod)
    except (TypeError, AttributeError, KeyError) as exc:
        raise ValueError(f"malformed pod ({type(exc).__name__}: {exc})") from exc


def _pod_info(pod: dict[str, Any]) -> PodInfo:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    nonzero = effective(spec, "requests", nonzero=True)
    affinity = spec.get("affinity") or {}
    anti = affinity.get("podAntiAffinity") or {}
    return PodInfo(
        name=meta.get("name", ""),
        namespace=meta.get("namespace") or "default",
        uid=meta.get("uid", ""),
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        priority=int(spec.get("priority") or 0),
        created=parse_time(meta.get("creationTimestamp")),
        node_name=spec.get("nodeName") or "",
        phase=(pod.get("status") or {}).get("phase") or "",
        requests=effective(spec, "requests"),
        limits=effective(spec, "limits"),
        raw=pod,
        nonzero_requests={CPU: nonzero.get(CPU, 0), MEMORY: nonzero.get(MEMORY, 0)},
        labels=dict(meta.get("labels") or {}),
        host_ports=host_ports(spec),
        has_pod_affinity=bool(_has_terms(affinity.get("podAffinity")) or _has_terms(anti)),
        has_required_anti_affinity=bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution")),
    )


def _has_terms(section: dict[str, Any] | None) -> bool:
    section = section or {}
    return bool(
        section.get("requiredDuringSchedulingIgnoredDuringExecution")
        or section.get("preferredDuringSchedulingIgnoredDuringExecution")
    )


def _is_ready(status: dict[str, Any], taints: list[dict[str, Any]]) -> bool:
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    tainted = any(t.get("key") in (NOT_READY_TAINT, UNREACHABLE_TAINT) for t in taints)
    return ready and not tainted


def node_info(node: dict[str, Any]) -> NodeInfo:
    """Parse a node (no pods yet); allocatable falls back to capacity when absent. Raises
    ValueError when a field is malformed, whatever its JSON type."""
    try:
        return _node_info(node)
    except (TypeError, AttributeError, KeyError) as exc:
        raise ValueError(f"malformed node ({type(exc).__name__}: {exc})") from exc


def _node_info(node: dict[str, Any]) -> NodeInfo:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    taints = list(spec.get("taints") or [])
    capacity = parse_resources(status.get("capacity"))
    allocatable = parse_resources(status.get("allocatable")) or dict(capacity)
    return NodeInfo(
        name=meta.get("name", ""),
        labels=dict(meta.get("labels") or {}),
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
        ready=_is_ready(status, taints),
        capacity=capacity,
        allocatable=allocatable,
        raw=node,
    )


def predicted_cpu_m(
    pod: PodInfo,
    default_m: int = DEFAULT_REQUESTS_CPU_M,
    multiplier: float = DEFAULT_REQUESTS_MULTIPLIER,
) -> int:
    """TargetLoadPacking's guess of a pod's CPU use in millicores.

    Per regular container (init containers have finished by then): its limit, else its request
    times `multiplier` rounded as Go rounds, else `default_m`; plus the pod's overhead.
    """
    spec = pod.raw.get("spec") or {}
    total = 0
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        if CPU in limits:
            total += cpu_millis(limits[CPU])
        elif CPU in requests:
            total += go_round(float(cpu_millis(requests[CPU])) * multiplier)
        else:
            total += default_m
    overhead = (spec.get("overhead") or {}).get(CPU)
    if overhead is not None:
        total += cpu_millis(overhead)
    return total


def pods_allowed(node: NodeInfo) -> int:
    """How many pods the node takes; a node that does not say takes none, as in Kubernetes."""
    return node.allocatable.get(PODS, 0)
