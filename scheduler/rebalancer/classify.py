"""Hot and cold nodes from the watcher's window, and how long each has been hot.

A node's value per resource is the configured statistic (avg, p95 or latest) of its window.
Only fresh data counts: a stale, expired or missing metric makes the node "unknown" for the
round, which is never hot and never a target, and which breaks its hot streak. In deviation
mode the thresholds are the mean over the nodes with fresh data plus `high` / minus `low`.

A node is hot when any resource is above its high threshold, cold when every resource is below
its low one (Koordinator's LowNodeLoad and descheduler's LowNodeUtilization read them so). It
becomes a rebalancing candidate after `consecutive` observations in a row, each on a newer
sample than the last: re-reading one window is one observation, however many rounds run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import fmean

from scheduler.framework import MetricStats, NodeLoad
from scheduler.framework.gpus import GpuLoads, GpuStats
from scheduler.rebalancer.gpuhot import GpuRule, gpu_hot_nodes
from scheduler.rebalancer.settings import AVG, DEVIATION, P95, ResourceRule

FRESH = "fresh"
HOT, COLD, NORMAL, UNKNOWN = "hot", "cold", "normal", "unknown"


def statistic(stats: MetricStats | None, name: str) -> tuple[float | None, str]:
    """(value, state) of one metric; state "missing" when there is no value at all."""
    if stats is None:
        return None, "missing"
    value = {AVG: stats.avg, P95: stats.p95}.get(name, stats.latest)
    if value is None:
        return None, "missing"
    return value, stats.state


@dataclass
class Classification:
    """One round's view: per node its state and values, and the thresholds used."""

    state: dict[str, str] = field(default_factory=dict)  # node -> HOT | COLD | NORMAL | UNKNOWN
    usage: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> resource -> %
    why_unknown: dict[str, str] = field(default_factory=dict)  # node -> stale/expired/missing
    sample_time: dict[str, float] = field(default_factory=dict)  # node -> newest sample (Unix)
    # node -> resource -> its newest sample's figure, whatever the statistic (rest.py reads it)
    latest: dict[str, dict[str, float]] = field(default_factory=dict)
    high: dict[str, float] = field(default_factory=dict)  # resource -> threshold in %
    low: dict[str, float] = field(default_factory=dict)
    window: dict[str, float] = field(default_factory=dict)  # node -> the watcher's expiry, s
    # node -> the least of its saturated CPU samples, when it is judged on them (saturation.py)
    saturated: dict[str, float] = field(default_factory=dict)

    def nodes(self, state: str) -> list[str]:
        return [n for n, s in self.state.items() if s == state]

    def excess(self, node: str) -> dict[str, float]:
        """Percentage points above high, per resource that is above."""
        values = self.usage.get(node, {})
        return {r: values[r] - h for r, h in self.high.items() if values.get(r, 0.0) > h}


def classify(
    nodes: Iterable[str], loads: dict[str, NodeLoad], rules: tuple[ResourceRule, ...], mode: str
) -> Classification:
    out = Classification()
    for node in nodes:
        load = loads.get(node)
        values: dict[str, float] = {}
        latest: dict[str, float] = {}
        newest = 0.0
        expiry = 0.0
        for rule in rules:
            stats = load.metrics.get(rule.resource) if load is not None else None
            value, state = statistic(stats, rule.statistic)
            if value is None or state != FRESH:
                out.why_unknown[node] = state
                break
            values[rule.resource] = value
            assert stats is not None
            if stats.latest is not None:
                latest[rule.resource] = stats.latest
            newest = max(newest, stats.last_sample)
            expiry = max(expiry, stats.expiry or 0.0)
        else:
            out.usage[node] = values
            out.sample_time[node] = newest
            if len(latest) == len(values):
                out.latest[node] = latest
            out.window[node] = expiry
            continue
        out.state[node] = UNKNOWN
    for rule in rules:
        high, low = rule.high, rule.low
        if mode == DEVIATION:
            fresh = [v[rule.resource] for v in out.usage.values()]
            mean = fmean(fresh) if fresh else 0.0
            high, low = mean + rule.high, mean - rule.low
        out.high[rule.resource] = high
        out.low[rule.resource] = low
    for node, values in out.usage.items():
        out.state[node] = state_of(values, out.high, out.low)
    return out


def state_of(values: dict[str, float], high: dict[str, float], low: dict[str, float]) -> str:
    """HOT when any resource is above its high threshold, COLD when every one is below its low
    one, else NORMAL."""
    if any(values[r] > high[r] for r in values):
        return HOT
    if all(values[r] < low[r] for r in values):
        return COLD
    return NORMAL


def classify_gpus(
    nodes: Iterable[str], gpus: GpuLoads, now: float, rule: GpuRule
) -> tuple[dict[str, list[GpuStats]], Classification]:
    """The GPU-hot nodes (gpuhot.py) with their hot GPUs, and a view of every node for their
    own streaks: HOT, else NORMAL, else UNKNOWN when its GPU figures are stale or missing (the
    streak starts over, as for the CPU); a node's sample time is its GPUs' newest."""
    nodes = list(nodes)
    hot = gpu_hot_nodes(nodes, gpus, now, rule)
    view = Classification()
    for node in nodes:
        live = gpus.live(node, now)
        if not live or gpus.stale(node, now):
            view.state[node] = UNKNOWN
            continue
        view.state[node] = HOT if node in hot else NORMAL
        view.sample_time[node] = max(g.last for g in live)
    return hot, view


class HotStreaks:
    """Consecutive fresh hot observations per node; one observation per new sample."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self._seen: dict[str, float] = {}  # node -> sample time of its last counted observation

    def observe(self, view: Classification) -> None:
        for node, state in view.state.items():
            if state != HOT:
                # Cooler, unknown (stale, expired, missing): the streak starts over.
                self.count.pop(node, None)
                self._seen.pop(node, None)
                continue
            sample = view.sample_time.get(node, 0.0)
            if sample <= self._seen.get(node, float("-inf")):
                continue  # the same window again: no new evidence
            self._seen[node] = sample
            self.count[node] = self.count.get(node, 0) + 1
        for node in [n for n in self.count if n not in view.state]:
            del self.count[node]  # the node is gone
            self._seen.pop(node, None)

    def confirmed(self, needed: int) -> list[str]:
        return [n for n, c in self.count.items() if c >= needed]

    def proven(self, node: str, count: int) -> None:
        """A rest ended on `count` newer samples in a row, each hot (rest.py): they are the
        node's streak."""
        self.count[node] = max(self.count.get(node, 0), count)

    def reset(self, node: str) -> None:
        """After an eviction: the node must prove itself hot again on newer samples (the last
        counted sample time stays, so the same window does not count again)."""
        self.count.pop(node, None)
