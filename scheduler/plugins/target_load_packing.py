"""TargetLoadPacking: pack nodes up to a target CPU utilisation, then spread (Trimaran).

U = 100 * (node_used_m + pod_predicted_m + recent_m) / capacity_m, with node_used_m from the
node's CPU usage percent times status.capacity. Below the target T the score rises from T to
100 as U approaches T; above it, it falls from T to 0 at U = 100; past 100 it is 0. Rounded as
Go rounds. Usage comes through loadview (allocation fallback, stale blend); pods bound recently
(Snapshot.recent_cpu_m) count in proportion to how much measured data the usage holds, since
allocation already includes them.

Ballast-only, `orderSaturated` (`learned` by default; `never` or false is upstream exactly;
`always` or true): when the formula gives every node 0 (each would pass 100 % or come within
half a point of it), the tie is broken by the least predicted use: U_max scores 0, U_min 100,
linear between. A pass where any node scores above 0 is upstream's, so no node the formula can
tell apart changes its order or score. Upstream picks at random among the saturated nodes, and
a heavy pod then lands on any of them (docs/placement.md, "Saturated scores"). Only score_all
sees every node, so only it breaks the tie; score() on one node is the plain formula. `learned`
ranks only a prediction from the pod's workload profile: a request-based one is a guess, and
keeps upstream's tie.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scheduler.framework import CPU, MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.framework.resources import (
    DEFAULT_REQUESTS_CPU_M,
    DEFAULT_REQUESTS_MULTIPLIER,
    go_round,
    go_round_array,
    predicted_cpu_m,
)
from scheduler.plugins.helpers.estimator import (
    ORDER_LEARNED,
    EstimatorArgs,
    estimate,
    orders_saturated,
    parse_estimator_args,
    parse_order_saturated,
)
from scheduler.plugins.helpers.loadview import (
    parse_prediction,
    recent_cpu_m,
    trimaran_spec,
    usage,
    usage_arrays,
)

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "TargetLoadPacking"
_KEY = NAME + ".predicted"


@dataclass(frozen=True)
class Args:
    target_utilization: int = 40
    default_requests_cpu_m: int = DEFAULT_REQUESTS_CPU_M
    default_requests_multiplier: float = DEFAULT_REQUESTS_MULTIPLIER
    watcher_address: str = ""
    estimator: EstimatorArgs = EstimatorArgs()
    order_saturated: str = ORDER_LEARNED


def parse_args(f: Fields) -> Args:
    d = Args()
    cpu_m, multiplier = parse_prediction(f, d.default_requests_cpu_m, d.default_requests_multiplier)
    args = Args(
        target_utilization=f.integer("targetUtilization", d.target_utilization, 1, 100),
        default_requests_cpu_m=cpu_m,
        default_requests_multiplier=multiplier,
        watcher_address=trimaran_spec(f),
        estimator=parse_estimator_args(f),
        order_saturated=parse_order_saturated(f, d.order_saturated),
    )
    f.finish()
    return args


def tlp_score(
    used_percent: float, capacity_m: float, pod_m: float, recent_m: float, target: int
) -> int:
    """The upstream formula on plain numbers, in Go's float order of operations."""
    used_m = (used_percent / 100) * capacity_m
    predicted = 0.0
    if capacity_m != 0:
        predicted = 100 * (used_m + pod_m + recent_m) / capacity_m
    t = float(target)
    if predicted > t:
        if predicted > 100:
            return 0
        return go_round(t * (100 - predicted) / (100 - t))
    return go_round((100 - t) * predicted / t + t)


def tlp_scores(
    used_percent: np.ndarray,
    capacity_m: np.ndarray,
    pod_m: float,
    recent_m: np.ndarray | float,
    target: int,
    order_saturated: bool = False,
) -> np.ndarray:
    """tlp_score over arrays of nodes, with the same float steps (so the same results); with
    `order_saturated`, an all-zero pass ordered by predicted use (the module's docstring).
    Both branches are computed for every node and rounded once, and the nodes above 100 %
    get 0."""
    used_m = (used_percent / 100) * capacity_m
    predicted = np.divide(
        100 * (used_m + pod_m + recent_m),
        capacity_m,
        out=np.zeros_like(used_m),
        where=capacity_m != 0,
    )
    t = float(target)
    over = t * (100 - predicted) / (100 - t) if t != 100 else predicted * 0
    raw = np.where(predicted > t, over, (100 - t) * predicted / t + t)
    raw[predicted > 100] = 0.0
    scores = go_round_array(raw)
    if order_saturated and len(scores) > 1 and not scores.any():
        return saturated_order(predicted)
    return scores.astype(np.int64)


def saturated_order(predicted: np.ndarray) -> np.ndarray:
    """0..100 by predicted use, the least 100 and the most 0; all 0 when they are equal."""
    low, high = float(predicted.min()), float(predicted.max())
    if not high > low:  # equal, or NaN from a zero capacity
        return np.zeros(len(predicted), dtype=np.int64)
    ranked = go_round_array(MAX_NODE_SCORE * (high - predicted) / (high - low))
    return np.nan_to_num(ranked).astype(np.int64)


class Plugin:
    name = NAME

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        a = self.args
        # Without a profile, upstream's prediction: limit, else request x multiplier, else
        # the default (Trimaran parity).
        fallback = predicted_cpu_m(pod, a.default_requests_cpu_m, a.default_requests_multiplier)
        state[_KEY] = estimate(pod, snap.workloads, a.estimator, (fallback, 0))
        return True

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        if _KEY not in state:
            self.pre_score(state, pod, [node], snap)
        pod_m = state[_KEY].cpu_m
        u = usage(state, node, snap, CPU)
        recent_m = recent_cpu_m(snap, node, u)
        capacity_m = float(node.capacity.get(CPU, 0))
        return tlp_score(u.avg, capacity_m, float(pod_m), recent_m, self.args.target_utilization)

    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        if _KEY not in state:
            self.pre_score(state, pod, nodes, snap)
        predicted = state[_KEY]
        recent = snap.recent_cpu_m
        used, _, weight = usage_arrays(state, nodes, snap, CPU)
        capacity = [node.capacity_cpu for node in nodes]
        # Without any load data every weight is 0: recent pods are in the allocation already.
        recent_m: np.ndarray | float = 0.0
        if recent and snap.loads:
            recent_m = np.asarray([recent.get(node.name, 0) for node in nodes], dtype=np.float64)
            recent_m *= np.asarray(weight, dtype=np.float64)
        scores = tlp_scores(
            np.asarray(used, dtype=np.float64),
            np.asarray(capacity, dtype=np.float64),
            float(predicted.cpu_m),
            recent_m,
            self.args.target_utilization,
            # a request-based prediction is the guess the ranking would amplify (module doc)
            orders_saturated(self.args.order_saturated, predicted),
        )
        return scores.tolist()
