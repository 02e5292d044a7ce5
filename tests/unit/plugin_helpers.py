"""Builders for pods, nodes and snapshots shared by the plugin unit tests."""

from __future__ import annotations

from typing import Any

from scheduler.framework import MetricStats, NodeInfo, NodeLoad, PodInfo, Snapshot
from scheduler.framework.resources import node_info, pod_info


def container(cpu: str | None = None, memory: str | None = None, **kw: Any) -> dict[str, Any]:
    """A container; cpu/memory are requests, limits given as limits={...}."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(kw.pop("requests", {}))
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if "limits" in kw:
        resources["limits"] = kw.pop("limits")
    return {"name": kw.pop("name", "c"), "resources": resources, **kw}


def make_pod(
    name: str = "p",
    containers: list[dict[str, Any]] | None = None,
    uid: str | None = None,
    **spec: Any,
) -> PodInfo:
    doc = {
        "metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"},
        "spec": {"containers": containers if containers is not None else [], **spec},
    }
    return pod_info(doc)


def make_node(
    name: str = "n1",
    cpu: str = "1",
    memory: str = "1Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    allocatable: dict[str, Any] | None = None,
    **extra: Any,
) -> NodeInfo:
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), **extra}
    doc = {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable or capacity,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    return node_info(doc)


def stats(
    avg: float | None = None,
    std: float | None = None,
    latest: float | None = None,
    state: str = "fresh",
    age: float = 1.0,
    horizon: float | None = None,
    expiry: float | None = None,
    p95: float | None = None,
    peak: float | None = None,
) -> MetricStats:
    return MetricStats(
        avg=avg,
        std=std,
        latest=latest,
        state=state,
        age=age,
        last_sample=0.0,
        p95=p95,
        horizon=horizon,
        expiry=expiry,
        peak=peak,
    )


def snapshot(
    nodes: list[NodeInfo],
    loads: dict[str, dict[str, MetricStats]] | None = None,
    recent: dict[str, int] | None = None,
) -> Snapshot:
    return Snapshot(
        nodes={n.name: n for n in nodes},
        loads={k: NodeLoad(metrics=v, source="ballast") for k, v in (loads or {}).items()},
        now=1000.0,
        recent_cpu_m=recent or {},
    )
