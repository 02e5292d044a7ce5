"""LoadVariationRiskBalancing: prefer nodes whose mean plus deviation of load is lowest
(Trimaran).

Per resource (cpu in millicores, memory in MiB, capacity from status.allocatable):
mu = clamp((avg_used + request) / capacity, 0, 1), sigma = clamp(std_used / capacity, 0, 1),
sigma = sigma ** (1 / sensitivity) (sensitivity 0 makes it 0), sigma = clamp(sigma * margin,
0, 1), score = (1 - (mu + sigma) / 2) * 100. The node's score is the lower of cpu and memory,
rounded as Go rounds. Usage comes through loadview, so a node without data is judged by its
allocation rather than scored 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import CPU, MAX_NODE_SCORE, MEMORY, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.plugins.loadview import UNSERVED, trimaran_spec, usage
from scheduler.resources import go_round

if TYPE_CHECKING:
    from scheduler.config import Fields

NAME = "LoadVariationRiskBalancing"
MEGA_FACTOR = 1.0 / 1024.0 / 1024.0


@dataclass(frozen=True)
class Args:
    safe_variance_margin: float = 1.0
    safe_variance_sensitivity: float = 1.0
    watcher_address: str = ""


def parse_args(f: Fields) -> Args:
    d = Args()
    margin = f.number("safeVarianceMargin", d.safe_variance_margin)
    sensitivity = f.number("safeVarianceSensitivity", d.safe_variance_sensitivity)
    # upstream's defaulting replaces negative values by the default rather than refusing them
    args = Args(
        safe_variance_margin=margin if margin >= 0 else d.safe_variance_margin,
        safe_variance_sensitivity=sensitivity if sensitivity >= 0 else d.safe_variance_sensitivity,
        watcher_address=trimaran_spec(f),
    )
    f.finish()
    return args


def mu_sigma(
    used_avg: float, used_std: float, request: float, capacity: float
) -> tuple[float, float]:
    """Trimaran's GetMuSigma: load and deviation as fractions of capacity, clamped to 0..1."""
    if capacity <= 0:
        return 0.0, 0.0
    mu = min(max((used_avg + request) / capacity, 0.0), 1.0)
    sigma = min(max(used_std / capacity, 0.0), 1.0)
    return mu, sigma


def resource_score(
    used_avg: float, used_std: float, request: float, capacity: float, margin: float, sens: float
) -> float:
    """Unrounded 0..100 score of one resource, upstream's computeScore."""
    if capacity <= 0:
        return 0.0
    request = max(request, 0.0)
    used_avg = max(min(used_avg, capacity), 0.0)
    used_std = max(min(used_std, capacity), 0.0)
    mu, sigma = mu_sigma(used_avg, used_std, request, capacity)
    if sens >= 0:
        # Go: 1/0 is +Inf and x**+Inf is 0 for 0 <= x < 1, 1 for x == 1
        sigma = sigma ** (1 / sens if sens else math.inf)
    sigma = max(min(sigma * margin, 1.0), 0.0)
    return (1.0 - (mu + sigma) / 2) * MAX_NODE_SCORE


class Plugin:
    name = NAME

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def _score_of(
        self, state: CycleState, node: NodeInfo, snap: Snapshot, resource: str, request: float
    ) -> tuple[float, bool]:
        u = usage(state, node, snap, resource)
        capacity = float(node.allocatable.get(resource, 0))
        if resource == MEMORY:
            capacity *= MEGA_FACTOR
            request *= MEGA_FACTOR
        used_avg = u.avg * capacity / 100
        used_std = u.std * capacity / 100
        a = self.args
        value = resource_score(
            used_avg,
            used_std,
            request,
            capacity,
            a.safe_variance_margin,
            a.safe_variance_sensitivity,
        )
        return value, u.reason != UNSERVED

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        cpu = self._score_of(state, node, snap, CPU, float(pod.requests.get(CPU, 0)))
        memory = self._score_of(state, node, snap, MEMORY, float(pod.requests.get(MEMORY, 0)))
        # upstream scores from the resources that have data; allocation stands in for both
        # only when neither has any
        known = [value for value, served in (cpu, memory) if served] or [cpu[0], memory[0]]
        return go_round(min(known))
