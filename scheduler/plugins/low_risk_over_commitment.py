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

from scipy.special import betainc

from scheduler.framework import CPU, MAX_NODE_SCORE, MEMORY, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.plugins.loadview import trimaran_spec, usage
from scheduler.resources import go_round

if TYPE_CHECKING:
    from scheduler.config import Fields

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


def beta_probability(mu: float, sigma: float, threshold: float) -> tuple[float, tuple | None]:
    """P(X <= threshold) for X ~ Beta matched to (mu, sigma); also the (alpha, beta) fitted,
    None for the degenerate cases that need no distribution."""
    if mu == 0 or (sigma == 0 and mu <= threshold):
        return 1.0, None
    if sigma == 0 and mu > threshold:
        return 0.0, None
    # moment matching in upstream's float steps: variance = E[X^2] - E[X]^2
    second = sigma * sigma + mu * mu
    variance = second - mu * mu
    if mu < 0 or mu > 1 or variance < 0 or variance >= mu * (1 - mu):
        return 0.0, None
    k = mu * (1 - mu) / variance - 1 if variance > 0 else math.inf
    k = max(k, 5e-324)  # Go's math.SmallestNonzeroFloat64
    shape = (mu * k, (1 - mu) * k)
    if not (shape[0] > 0 and shape[1] > 0):
        return 0.0, None
    return cdf(shape, threshold), shape


def cdf(shape: tuple[float, float], x: float) -> float:
    """The regularised incomplete beta function I_x(a, b); 0 where it is not a probability."""
    a, b = shape
    if a <= 0 or b <= 0 or x < 0 or x > 1:
        return 0.0
    if x == 0 or x == 1:
        return float(x)
    p = float(betainc(a, b, x))
    return 0.0 if math.isnan(p) or p < 0 or p > 1 else p


def resource_risk(
    avg_pct: float,
    std_pct: float,
    capacity: int,
    request: int,
    limit: int,
    request_without: int,
    limit_without: int,
    weight: float,
    window: int,
) -> float:
    """The combined 0..1 risk of one resource, upstream's computeRisk."""
    limit_risk = 0.0
    if limit > capacity:
        limit_risk = (limit - capacity) / (limit - request)
    load_risk = 0.0
    if capacity > 0:
        cap = float(capacity)
        used_avg = avg_pct * cap / 100
        used_std = std_pct * cap / 100
        mu = min(max(used_avg / cap, 0.0), 1.0)
        sigma = min(max(used_std / cap, 0.0), 1.0)
        sigma *= math.pow(float(window), 0.5)
        max_variance = mu * (1 - mu) if 0 < mu < 1 else 0.0
        sigma = min(sigma, math.sqrt(max_variance * MAX_VARIANCE_ALLOWANCE))
        threshold = min(max(request_without / cap, 0.0), 1.0)
        prob, shape = beta_probability(mu, sigma, threshold)
        if limit_without < capacity and request_without <= limit_without:
            limit_threshold = limit_without / cap
            if limit_threshold == 0:
                prob = 1.0
            elif shape is not None:
                limit_prob = cdf(shape, limit_threshold)
                if limit_prob > 0:
                    prob = min(max(prob / limit_prob, 0.0), 1.0)
        load_risk = 1 - prob
    return min(max(weight * limit_risk + (1 - weight) * load_risk, 0.0), 1.0)


def _pod_amounts(pod: PodInfo, resource: str) -> tuple[int, int]:
    request = pod.requests.get(resource, 0)
    return request, max(pod.limits.get(resource, 0), request)


class Plugin:
    name = NAME

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        amounts = {r: _pod_amounts(pod, r) for r in _RESOURCES}
        if not any(req or lim for req, lim in amounts.values()):
            return 0  # best-effort pods are not this plugin's concern
        risks = []
        for resource in _RESOURCES:
            capacity = node.allocatable.get(resource, 0)
            request_without = node.requested.get(resource, 0)
            limit_without = node.limits_or_requests.get(resource, 0)
            pod_request, pod_limit = amounts[resource]
            u = usage(state, node, snap, resource)
            risks.append(
                resource_risk(
                    u.avg,
                    u.std,
                    capacity,
                    min(request_without + pod_request, capacity),
                    limit_without + pod_limit,
                    min(request_without, capacity),
                    limit_without,
                    self.args.risk_limit_weights[resource],
                    self.args.smoothing_window_size,
                )
            )
        return go_round((1 - max(risks)) * MAX_NODE_SCORE)
