"""LoadVariationRiskBalancing: prefer nodes whose mean plus deviation of load is lowest
(Trimaran).

Per resource (cpu in millicores, memory in MiB, capacity from status.allocatable):
mu = clamp((avg_used + request) / capacity, 0, 1), sigma = clamp(std_used / capacity, 0, 1),
sigma = sigma ** (1 / sensitivity) (sensitivity 0 makes it 0), sigma = clamp(sigma * margin,
0, 1), score = (1 - (mu + sigma) / 2) * 100. The node's score is the lower of cpu and memory,
rounded as Go rounds. Usage comes through loadview, so a node without data is judged by its
allocation rather than scored 0.

Ballast-only, `orderSaturated` (`learned` by default; `never` or false is upstream exactly;
`always` or true): where the pod would take a resource past its capacity (avg_used + request >
capacity), mu is not clamped at 1 (nor avg_used at capacity) and the score is clamped at 0
instead, so saturated nodes are ordered by their predicted overflow plus deviation rather than
by the deviation alone, and one never outscores an unsaturated node of the same deviation. A
node within capacity scores as upstream (docs/placement.md, "Saturated scores"). `learned` does
so only for a prediction from the pod's workload profile: a request-based overflow is a guess,
and such a pod is scored as upstream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scheduler.framework import CPU, MAX_NODE_SCORE, MEMORY, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.framework.resources import go_round_array
from scheduler.plugins.helpers.estimator import (
    ORDER_LEARNED,
    EstimatorArgs,
    estimate,
    orders_saturated,
    parse_estimator_args,
    parse_order_saturated,
)
from scheduler.plugins.helpers.loadview import UNSERVED, recent_cpu_m, trimaran_spec, usage

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "LoadVariationRiskBalancing"
MEGA_FACTOR = 1.0 / 1024.0 / 1024.0


@dataclass(frozen=True)
class Args:
    safe_variance_margin: float = 1.0
    safe_variance_sensitivity: float = 1.0
    watcher_address: str = ""
    estimator: EstimatorArgs = EstimatorArgs()
    order_saturated: str = ORDER_LEARNED


def parse_args(f: Fields) -> Args:
    d = Args()
    margin = f.number("safeVarianceMargin", d.safe_variance_margin)
    sensitivity = f.number("safeVarianceSensitivity", d.safe_variance_sensitivity)
    # upstream's defaulting replaces negative values by the default rather than refusing them
    args = Args(
        safe_variance_margin=margin if margin >= 0 else d.safe_variance_margin,
        safe_variance_sensitivity=sensitivity if sensitivity >= 0 else d.safe_variance_sensitivity,
        watcher_address=trimaran_spec(f),
        estimator=parse_estimator_args(f),
        order_saturated=parse_order_saturated(f, d.order_saturated),
    )
    f.finish()
    return args


def resource_scores(
    used_avg: np.ndarray,
    used_std: np.ndarray,
    request: float,
    capacity: np.ndarray,
    margin: float,
    sens: float,
    order_saturated: bool = False,
) -> np.ndarray:
    """Unrounded 0..100 scores of one resource over nodes, upstream's computeScore (inputs
    clamped first, then GetMuSigma, then the sensitivity root and the margin); with
    `order_saturated`, mu unclamped where it passes 1 (the module's docstring)."""
    valid = capacity > 0
    cap = np.where(valid, capacity, 1.0)
    request = max(request, 0.0)
    mu_raw = (np.maximum(used_avg, 0.0) + request) / cap
    used_avg = np.maximum(np.minimum(used_avg, cap), 0.0)
    used_std = np.maximum(np.minimum(used_std, cap), 0.0)
    mu = np.maximum(np.minimum((used_avg + request) / cap, 1.0), 0.0)
    if order_saturated:
        mu = np.where(mu_raw > 1.0, mu_raw, mu)
    sigma = np.maximum(np.minimum(used_std / cap, 1.0), 0.0)
    if sens >= 0:
        # Go: 1/0 is +Inf and x**+Inf is 0 for 0 <= x < 1, 1 for x == 1
        sigma = sigma ** (1 / sens if sens else math.inf)
    sigma = np.maximum(np.minimum(sigma * margin, 1.0), 0.0)
    scores = (1.0 - (mu + sigma) / 2) * MAX_NODE_SCORE
    if order_saturated:
        scores = np.maximum(scores, 0.0)
    return np.where(valid, scores, 0.0)


def resource_score(
    used_avg: float, used_std: float, request: float, capacity: float, margin: float, sens: float
) -> float:
    """resource_scores for one node."""
    one = resource_scores(
        np.array([used_avg]), np.array([used_std]), request, np.array([capacity]), margin, sens
    )
    return float(one[0])


class Plugin:
    name = NAME
    score_falls_with_load = True  # mu grows with the node's use, sigma does not move

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def _scores(
        self,
        state: CycleState,
        nodes: list[NodeInfo],
        snap: Snapshot,
        resource: str,
        request: float,
        order_saturated: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, served) of one resource over the nodes."""
        used = [usage(state, node, snap, resource) for node in nodes]
        capacity = np.array([node.allocatable.get(resource, 0) for node in nodes], dtype=float)
        if resource == MEMORY:
            capacity *= MEGA_FACTOR
            request *= MEGA_FACTOR
        used_avg = np.array([u.avg for u in used]) * capacity / 100
        if resource == CPU and snap.recent_cpu_m:
            # Pods bound since the window's last sample count on their node, as for
            # TargetLoadPacking; upstream leaves them out, and a burst then piles onto the
            # node that looked idlest (docs/plugins.md).
            used_avg = used_avg + np.array(
                [recent_cpu_m(snap, node, u) for node, u in zip(nodes, used, strict=True)]
            )
        used_std = np.array([u.std for u in used]) * capacity / 100
        a = self.args
        scores = resource_scores(
            used_avg,
            used_std,
            request,
            capacity,
            a.safe_variance_margin,
            a.safe_variance_sensitivity,
            order_saturated,
        )
        return scores, np.array([u.reason != UNSERVED for u in used], dtype=bool)

    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        if not nodes:
            return []
        # The pod's requests, as upstream counts it, unless its workload has a profile.
        requested = (pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0))
        pod_use = estimate(pod, snap.workloads, self.args.estimator, requested)
        # a request-based prediction is the guess the overflow order would amplify (module doc)
        ordered = orders_saturated(self.args.order_saturated, pod_use)
        cpu, cpu_ok = self._scores(state, nodes, snap, CPU, float(pod_use.cpu_m), ordered)
        mem, mem_ok = self._scores(state, nodes, snap, MEMORY, float(pod_use.memory), ordered)
        # upstream scores from the resources that have data; allocation stands in for both
        # only when neither has any
        both = np.minimum(cpu, mem)
        total = np.where(cpu_ok & ~mem_ok, cpu, np.where(mem_ok & ~cpu_ok, mem, both))
        return go_round_array(total).astype(np.int64).tolist()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        return self.score_all(state, pod, [node], snap)[0]
