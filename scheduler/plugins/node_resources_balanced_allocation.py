"""NodeResourcesBalancedAllocation: prefer nodes whose resources fill evenly.

Fractions f_r = requested_r (with the pod, real requests) / allocatable_r, capped at 1, over the
configured resources (cpu and memory by default); score = int((1 - std(f)) * 100), the
population standard deviation, as kube-scheduler computes it.
"""

from __future__ import annotations

import math

from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.plugins.helpers.resource_weights import Args, parse_args

__all__ = ["NAME", "Args", "Plugin", "parse_args"]

NAME = "NodeResourcesBalancedAllocation"


def balance_score(fractions: list[float]) -> int:
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif fractions:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


class Plugin:
    name = NAME
    score_reads_loads = False  # placed pods, the node and objects: no watcher figures

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        # kube-scheduler skips pods that request none of the resources: nothing to balance
        return any(pod.requests.get(r, 0) for r, _ in self.args.resources)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        fractions = []
        for resource, _ in self.args.resources:
            allocatable = node.allocatable.get(resource, 0)
            if allocatable == 0:
                continue
            requested = node.requested.get(resource, 0) + pod.requests.get(resource, 0)
            fractions.append(min(requested / allocatable, 1.0))
        return balance_score(fractions)
