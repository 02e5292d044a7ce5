"""NodeResourcesLeastAllocated: prefer nodes with the most room left after the pod.

Per resource: (allocatable - requested) * 100 / allocatable, with the pod counted and
kube-scheduler's non-zero stand-ins (100m cpu, 200Mi memory) for containers without requests;
0 when the node lacks room. Weighted mean over the configured resources (cpu and memory,
weight 1 each, by default), integer arithmetic as in kube-scheduler.
"""

from __future__ import annotations

from scheduler.framework import CPU, MAX_NODE_SCORE, MEMORY, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.plugins.helpers.resource_weights import Args, parse_args

__all__ = ["NAME", "Args", "Plugin", "parse_args"]

NAME = "NodeResourcesLeastAllocated"


def requested_with(pod: PodInfo, node: NodeInfo, resource: str) -> int:
    if resource in (CPU, MEMORY):
        return node.nonzero_requested.get(resource, 0) + pod.nonzero_requests.get(resource, 0)
    return node.requested.get(resource, 0) + pod.requests.get(resource, 0)


class Plugin:
    name = NAME
    score_reads_loads = False  # placed pods, the node and objects: no watcher figures

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        total = weights = 0
        for resource, weight in self.args.resources:
            allocatable = node.allocatable.get(resource, 0)
            if allocatable == 0:
                continue  # kube-scheduler leaves resources the node lacks out of the mean
            requested = requested_with(pod, node, resource)
            free = allocatable - requested
            total += (free * MAX_NODE_SCORE // allocatable if free >= 0 else 0) * weight
            weights += weight
        return total // weights if weights else 0
