"""kube-scheduler's sampling at scale (percentageOfNodesToScore): how many feasible nodes a cycle
looks for before it stops filtering and scores those. The cycle filters with it; the rebalancer
predicts with it where a replacement may land."""

from __future__ import annotations

# kube-scheduler's numbers for percentageOfNodesToScore.
MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5
BASE_PERCENTAGE = 50


def nodes_to_find(total: int, percentage: int) -> int:
    """How many feasible nodes are enough (kube-scheduler's numFeasibleNodesToFind)."""
    if total < MIN_FEASIBLE_NODES or percentage >= 100:
        return total
    if percentage <= 0:
        percentage = max(BASE_PERCENTAGE - total // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(total * percentage // 100, MIN_FEASIBLE_NODES)
