"""LowRiskOverCommitment: prefer nodes where over-committed limits and measured load are least
likely to collide (Trimaran).

Per resource (cpu, memory; capacity from status.allocatable), with node requests and limits
summed over the node's pods plus the incoming one (a pod's limit taken as max(limit, request),
requests capped at capacity):
- limit risk = (limit - capacity) / (limit - request) when limit > capacity, else 0;
- load risk = 1 - P(X <= requests-without-pod / capacity), X ~ Beta matched to the measured
  mean and std (std widened by sqrt(smoothingWindowSize), capped below the Beta maximum),
  conditioned on X <= limits-without-pod / capacity when those limits are under capacity;
- risk = clamp(w * limit risk + (1 - w) * load risk, 0, 1).
Score = round((1 - max(risk_cpu, risk_memory)) * 100). Best-effort pods score 0 everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from scheduler.framework import CPU, MAX_NODE_SCORE, MEMORY, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.framework.resources import go_round_array
from scheduler.plugins.helpers.loadview import trimaran_spec, usage

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "LowRiskOverCommitment"
MAX_VARIANCE_ALLOWANCE = 0.99
_RESOURCES = (CPU, MEMORY)


@dataclass(frozen=True)
class Args:
    smoothing_window_size: int = 5
    risk_limit_weights: dict[str, float] = field(default_factory=lambda: {CPU: 0.5, MEMORY: 0.5})
    watcher_address: str = ""


def parse_args(f: Fields) -> Args:
    d = Args()
    window = f.integer("smoothingWindowSize", d.smoothing_window_size, 1, 10_000)
    weights = dict(d.risk_limit_weights)
    wf = f.section("riskLimitWeights")
    for resource in _RESOURCES:
        weights[resource] = wf.number(resource, weights[resource], 0, 1)
    wf.finish()
    args = Args(window, weights, trimaran_spec(f))
    f.finish()
    return args


def cdf(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularised incomplete beta function I_x(a, b); 0 where it is not a probability
    (upstream's DistributionFunction)."""
    # scipy.special costs about 0.2 s to import (and pulls numpy.testing): paid on the first
    # score, not at every start of a scheduler whose profiles may not use this plugin
    from scipy.special import betainc

    ok = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    with np.errstate(all="ignore"):
        p = betainc(np.where(ok, a, 1.0), np.where(ok, b, 1.0), np.where(ok, x, 0.5))
    p = np.where((x == 0) | (x == 1), x, p)
    return np.where(ok & (p >= 0) & (p <= 1), p, 0.0)  # NaN fails both comparisons


def beta_probability(
    mu: np.ndarray, sigma: np.ndarray, threshold: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(P(X <= threshold), fitted, alpha, beta) for X ~ Beta matched by moments to (mu, sigma);
    `fitted` is False where a degenerate case settled P without a distribution."""
    certain = (mu == 0) | ((sigma == 0) & (mu <= threshold))
    never = (sigma == 0) & (mu > threshold) & ~certain
    # moment matching in upstream's float steps: variance = E[X^2] - E[X]^2
    variance = (sigma * sigma + mu * mu) - mu * mu
    with np.errstate(all="ignore"):
        k = np.where(variance > 0, mu * (1 - mu) / variance - 1, np.inf)
        k = np.maximum(k, 5e-324)  # Go's math.SmallestNonzeroFloat64
        alpha, beta = mu * k, (1 - mu) * k
    matched = (mu >= 0) & (mu <= 1) & (variance >= 0) & (variance < mu * (1 - mu))
    fitted = ~certain & ~never & matched & (alpha > 0) & (beta > 0)
    p = np.where(certain, 1.0, np.where(fitted, cdf(alpha, beta, threshold), 0.0))
    return p, fitted, alpha, beta


def resource_risks(
    avg_pct: np.ndarray,
    std_pct: np.ndarray,
    capacity: np.ndarray,
    request: np.ndarray,
    limit: np.ndarray,
    request_without: np.ndarray,
    limit_without: np.ndarray,
    weight: float,
    window: int,
) -> np.ndarray:
    """The combined 0..1 risk of one resource over nodes, upstream's computeRisk. Amounts are
    integer arrays (millicores or bytes); requests already capped at capacity."""
    over = limit > capacity
    with np.errstate(all="ignore"):
        limit_risk = np.where(over, (limit - capacity) / np.where(over, limit - request, 1), 0.0)
    valid = capacity > 0
    cap = np.where(valid, capacity, 1).astype(np.float64)
    used_avg = avg_pct * cap / 100
    used_std = std_pct * cap / 100
    mu = np.minimum(np.maximum(used_avg / cap, 0.0), 1.0)
    sigma = np.minimum(np.maximum(used_std / cap, 0.0), 1.0)
    sigma = sigma * math.pow(float(window), 0.5)
    max_variance = np.where((mu > 0) & (mu < 1), mu * (1 - mu), 0.0)
    sigma = np.minimum(sigma, np.sqrt(max_variance * MAX_VARIANCE_ALLOWANCE))
    threshold = np.minimum(np.maximum(request_without / cap, 0.0), 1.0)
    prob, fitted, alpha, beta = beta_probability(mu, sigma, threshold)
    # the load cannot pass the node's total limits when those are under capacity
    conditioned = (limit_without < capacity) & (request_without <= limit_without)
    limit_threshold = limit_without / cap
    limit_prob = cdf(alpha, beta, limit_threshold)
    rescale = conditioned & (limit_threshold != 0) & fitted & (limit_prob > 0)
    with np.errstate(all="ignore"):
        scaled = np.minimum(np.maximum(prob / np.where(rescale, limit_prob, 1.0), 0.0), 1.0)
    prob = np.where(rescale, scaled, prob)
    prob = np.where(conditioned & (limit_threshold == 0), 1.0, prob)
    load_risk = np.where(valid, 1 - prob, 0.0)
    return np.minimum(np.maximum(weight * limit_risk + (1 - weight) * load_risk, 0.0), 1.0)


def resource_risk(*amounts: float, weight: float, window: int) -> float:
    """resource_risks for one node: (avg %, std %, capacity, request, limit, request without
    the pod, limit without the pod)."""
    arrays = [np.array([v]) for v in amounts]
    return float(resource_risks(*arrays, weight=weight, window=window)[0])


def _pod_amounts(pod: PodInfo, resource: str) -> tuple[int, int]:
    request = pod.requests.get(resource, 0)
    return request, max(pod.limits.get(resource, 0), request)


class Plugin:
    name = NAME

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        amounts = {r: _pod_amounts(pod, r) for r in _RESOURCES}
        if not nodes or not any(req or lim for req, lim in amounts.values()):
            return [0] * len(nodes)  # best-effort pods are not this plugin's concern
        risk = np.zeros(len(nodes))
        for resource in _RESOURCES:
            used = [usage(state, node, snap, resource) for node in nodes]
            capacity = np.array([n.allocatable.get(resource, 0) for n in nodes], dtype=np.int64)
            request_without = np.array([n.requested.get(resource, 0) for n in nodes], np.int64)
            limit_without = np.array(
                [n.limits_or_requests.get(resource, 0) for n in nodes], dtype=np.int64
            )
            pod_request, pod_limit = amounts[resource]
            risks = resource_risks(
                np.array([u.avg for u in used]),
                np.array([u.std for u in used]),
                capacity,
                np.minimum(request_without + pod_request, capacity),
                limit_without + pod_limit,
                np.minimum(request_without, capacity),
                limit_without,
                weight=self.args.risk_limit_weights[resource],
                window=self.args.smoothing_window_size,
            )
            risk = np.maximum(risk, risks)
        return go_round_array((1 - risk) * MAX_NODE_SCORE).astype(np.int64).tolist()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        return self.score_all(state, pod, [node], snap)[0]
