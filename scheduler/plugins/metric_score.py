"""MetricScore: score nodes by any metric the watcher serves, NetworkTraffic-style.

Each node's value (the metric's avg, latest or p95) is scaled against the highest value among
the nodes: lower-is-better gives 100 - 100 * v / max, higher-is-better 100 * v / max (integer
division, as kube-scheduler normalises). A node without fresh or stale data for the metric
(missing or expired) has nothing to compare, so it gets the mean score of the nodes that have
data: neither favoured nor punished, and counted as a fallback. Negative values count as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot
from scheduler.plugins.helpers.loadview import EXPIRED, MISSING, metric_stats, note_fallback

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "MetricScore"
STATISTICS = ("avg", "latest", "p95")


@dataclass(frozen=True)
class Args:
    metric: str = "cpu"
    statistic: str = "avg"
    higher_is_better: bool = False


def parse_args(f: Fields) -> Args:
    d = Args()
    metric = f.string("metric", d.metric).strip()
    if not metric:
        raise f.error("metric", "must name a metric the watcher serves (cpu, memory, net_rx...)")
    args = Args(
        metric=metric,
        statistic=f.string("statistic", d.statistic, choices=STATISTICS),
        higher_is_better=f.boolean("higherIsBetter", d.higher_is_better),
    )
    f.finish()
    return args


class Plugin:
    name = NAME

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def _value(self, state: CycleState, node: NodeInfo, snap: Snapshot) -> float | None:
        stats = metric_stats(snap, node.name, self.args.metric)
        value = None if stats is None else getattr(stats, self.args.statistic)
        if value is None or stats is None or stats.state == EXPIRED:
            note_fallback(state, node.name, MISSING if value is None else EXPIRED)
            return None
        return max(float(value), 0.0)

    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        values = [self._value(state, node, snap) for node in nodes]
        known = [v for v in values if v is not None]
        highest = max(known, default=0.0)
        scores: list[int | None] = []
        for v in values:
            if v is None:
                scores.append(None)
            elif highest <= 0:
                scores.append(MAX_NODE_SCORE)
            else:
                share = int(MAX_NODE_SCORE * v // highest)
                scores.append(share if self.args.higher_is_better else MAX_NODE_SCORE - share)
        present = [s for s in scores if s is not None]
        neutral = sum(present) // len(present) if present else MAX_NODE_SCORE // 2
        return [neutral if s is None else s for s in scores]

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        """A lone node has nothing to be compared with; the profile scores through score_all."""
        return self.score_all(state, pod, [node], snap)[0]
