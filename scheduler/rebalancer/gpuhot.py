"""GPU-hot nodes: hot for GPU pods only.

When the judging profile scores with GpuLoad, a node whose GPUs run hot is a rebalancing
candidate whatever its CPU says, but only its GPU pods (pods requesting one of GpuLoad's
`resourceNames`) may leave it: moving a CPU pod off it relieves no GPU. A node is GPU-hot when
some GPU's window average utilisation is above `utilHigh`, or its framebuffer memory in use is
above `memoryHigh` percent of the GPU's total. Only fresh figures count, by GpuLoad's own rule:
a node with any GPU past its freshness horizon, or no GPU data at all, is never GPU-hot (an
outage of dcgm-exporter must not start evictions). The CPU rules (classify.py) are untouched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scheduler.framework import PodInfo
from scheduler.framework.gpus import GpuLoads, GpuStats

GPU_HOT = "gpu-hot"  # the reason label in metrics and decisions


@dataclass(frozen=True)
class GpuRule:
    util_high: float = 90.0  # % busy, the GPU window's average
    memory_high: float = 90.0  # % of the GPU's framebuffer in use, latest


def hot_gpus(gpus: tuple[GpuStats, ...], rule: GpuRule) -> list[GpuStats]:
    """The GPUs above either threshold."""
    out = []
    for g in gpus:
        memory = 100.0 * g.fb_used / g.fb_total if g.fb_total > 0 else 0.0
        if g.util > rule.util_high or memory > rule.memory_high:
            out.append(g)
    return out


def gpu_hot_nodes(
    nodes: Iterable[str], gpus: GpuLoads, now: float, rule: GpuRule
) -> dict[str, list[GpuStats]]:
    """Node -> its hot GPUs, for the nodes that are GPU-hot on fresh figures only."""
    out: dict[str, list[GpuStats]] = {}
    for node in nodes:
        # Every GPU of the node fresh, as GpuLoad's filter requires before it refuses a node.
        if gpus.stale(node, now):
            continue
        hot = hot_gpus(gpus.live(node, now), rule)
        if hot:
            out[node] = hot
    return out


def requests_gpu(pod: PodInfo, names: tuple[str, ...]) -> bool:
    return any(pod.requests.get(n, 0) > 0 for n in names)


def gpu_candidates(
    pods: Iterable[PodInfo], names: tuple[str, ...], hot: Iterable[GpuStats] = ()
) -> list[PodInfo]:
    """The pods that may leave a GPU-hot node: those requesting a GPU resource; the ones the
    pod mapping shows on a hot GPU first (moving them relieves that GPU), order kept otherwise."""
    on_hot = {p for g in hot for p in (g.pods or ())}
    mine = [p for p in pods if requests_gpu(p, names)]
    return sorted(mine, key=lambda p: p.key not in on_hot)


def gpu_resource_names(profile: Any) -> tuple[str, ...] | None:
    """GpuLoad's `resourceNames` when the profile uses it (filter or score), else None: the
    rebalancer then ignores GPUs altogether."""
    plugins = [p for p, _ in getattr(profile, "scores", ())]
    plugins += list(getattr(profile, "filters", ()))
    for plugin in plugins:
        if getattr(plugin, "reads_gpus", False):
            args = getattr(plugin, "args", None)
            return tuple(getattr(args, "resource_names", ()))
    return None
