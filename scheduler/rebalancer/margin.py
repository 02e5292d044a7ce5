"""The load margin: the scores as the scheduler may see them a poll after the judge.

The judge and the cycle that places the replacement seconds later read the watcher through
clients of their own, each refreshed every 5 s, so their copies of a node's window can be one
watcher poll apart. A poll adds a sample to the 5-minute window of 15 s polls (20 samples) and
the oldest leaves: the window's average moves by (new - old) / 20, at most 5 points of the
node's CPU (docs/rebalancer.md, "The load margin"). So a move is judged with every node's CPU
read up to `loadMargin` points off the judge's figures, each node the way that goes against
the move: the nodes the replacement may land on at their lowest score, every other (the source,
hot nodes, nodes the pod would push over high, nodes without fresh figures) at its highest.

The load plugins score a node from its own figures (PeakFit with its opt-in `requestsTerm`
aside, below), so that
worst case is per node: the lowest and highest of its scores with every node read `loadMargin`
cooler, as the judge reads it, and `loadMargin` hotter. TargetLoadPacking's score rises to its
target then drops, so its lowest is at an end of the range, and its highest is missed only for a
node within the margin of the target, which an unacceptable node above `high` is not. When every
load plugin's score falls with use (`score_falls_with_load`: LoadVariationRiskBalancing,
PeakFit), one reading does: the nodes the pod may land on hotter, the others cooler. Only the
plugins that read the watcher's figures score again (`score_reads_loads`,
framework/interface.py): a node's total is their part, which moves with the reading, plus the
rest, which does not.

A plugin that spreads its scores over the scored nodes' range (`spread_shares`: PeakFit with
`requestsTerm`) is not scored on a reading: a node's points move with the other nodes' figures
there, and the one reading keeps their order but not their gaps (a hot node read hotter widens
the range; tests/unit/test_margin_requests_term.py). Each node is bounded instead, from the
plugin's figures with every node read cooler and hotter (scheduler/framework/spread.py's
`spread_bounds`), which holds in every reading within the margin.

What is shifted is the CPU figures the load plugins read (the window's avg, latest and p95, the
72-hour peak), clamped to 0..100 as a watcher reports them, in a new Snapshot sharing
everything else with the judge's: nothing the cache holds changes, so there is nothing to undo.
Memory is read as it is (it moves far less between two polls), and the filters run once on the
judge's figures: a load filter (LoadThreshold, PeakFit's limit; opt-in) is not widened.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from scheduler.framework import CPU, CycleState, NodeInfo, NodeLoad, PodInfo, Snapshot
from scheduler.framework.interface import SCORE_FALLS_WITH_LOAD, SCORE_READS_LOADS, SPREAD_SHARES
from scheduler.framework.profile import Profile, ScoreParts
from scheduler.framework.resources import go_round_array
from scheduler.framework.spread import spread_bounds


def shifted(loads: dict[str, NodeLoad], points: float) -> dict[str, NodeLoad]:
    """Every node's CPU figures `points` higher (lower when negative), within 0..100; nodes
    without CPU figures as they are."""
    out = dict(loads)
    for name, load in loads.items():
        stats = load.metrics.get(CPU)
        if stats is None:
            continue
        moved = replace(
            stats,
            avg=_move(stats.avg, points),
            latest=_move(stats.latest, points),
            p95=_move(stats.p95, points),
            peak=_move(stats.peak, points),
        )
        out[name] = NodeLoad({**load.metrics, CPU: moved}, load.source)
    return out


def _move(value: float | None, points: float) -> float | None:
    return None if value is None else min(max(value + points, 0.0), 100.0)


def reads_loads(plugin: object) -> bool:
    return bool(getattr(plugin, SCORE_READS_LOADS, True))


class LoadMargin:
    """The round's loads read `points` cooler and hotter, built once: a round's edits move pods,
    never the watcher's figures."""

    def __init__(self, loads: dict[str, NodeLoad], points: float) -> None:
        self.points = points
        self.readings = (shifted(loads, -points), shifted(loads, points)) if points > 0 else ()
        self._reading: dict[int, Profile] = {}  # id of a profile -> its plugins reading loads

    def worst(
        self,
        profile: Profile,
        pod: PodInfo,
        nodes: list[NodeInfo],
        snap: Snapshot,
        parts: ScoreParts,
        favoured: Iterable[str],
    ) -> dict[str, int]:
        """The score pass `parts` holds (the profile's over `nodes` on `snap`) against the move:
        each node of `favoured` at its lowest with its CPU read up to the margin off, every
        other node at its highest. That pass's totals when the margin is 0."""
        reading = self._reading_part(profile)
        if not self.readings or len(nodes) < 2 or not reading.scores:
            return dict(zip(parts.names, parts.totals.tolist(), strict=True))
        # What the plugins reading loads added in that pass: the rest does not move.
        part = np.zeros(len(parts.names), dtype=np.int64)
        for (plugin, weight), (_, _, _, values) in zip(profile.scores, parts.plugins, strict=True):
            if values is not None and reads_loads(plugin):
                part += weight * np.asarray(values, dtype=np.int64)
        keep = set(favoured)
        low = np.array([n in keep for n in parts.names], dtype=bool)
        fixed = parts.totals - part
        # Plugins spreading their scores over the nodes' range: each node bounded over every
        # reading (one reading would keep their order, not their points); the others scored again.
        spread_low, spread_high, rest = self._spread(reading, pod, nodes, snap)
        lowest, highest = fixed + spread_low, fixed + spread_high
        readings = self.readings
        if all(getattr(p, SCORE_FALLS_WITH_LOAD, False) for p, _ in rest.scores):
            cooler, hotter = self.readings
            readings = ({n: (hotter if n in keep else cooler)[n] for n in cooler},)
        if rest.scores:
            moved = [
                # A state of its own: the plugins memoise each node's load in theirs.
                rest.totals(pod, nodes, replace(snap, loads=loads), CycleState())[1]
                for loads in readings
            ]
            lowest, highest = lowest + np.min(moved, axis=0), highest + np.max(moved, axis=0)
        lowest, highest = np.minimum(parts.totals, lowest), np.maximum(parts.totals, highest)
        return dict(zip(parts.names, np.where(low, lowest, highest).tolist(), strict=True))

    def _spread(
        self, reading: Profile, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> tuple[np.ndarray, np.ndarray, Profile]:
        """The weighted lowest and highest scores of the plugins that spread theirs over the
        nodes' range (`spread_shares`), from their figures with every node read cooler and
        hotter; and a profile of the other plugins reading loads."""
        cooler, hotter = self.readings
        low, high = np.zeros(len(nodes), dtype=np.int64), np.zeros(len(nodes), dtype=np.int64)
        others = []
        for plugin, weight in reading.scores:
            shares = getattr(plugin, SPREAD_SHARES, None)
            cool = shares and shares(CycleState(), pod, nodes, replace(snap, loads=cooler))
            if cool is None:
                others.append((plugin, weight))
                continue
            hot = shares(CycleState(), pod, nodes, replace(snap, loads=hotter))
            bounds = spread_bounds(np.asarray(cool), np.asarray(hot))
            low += weight * go_round_array(bounds[0]).astype(np.int64)
            high += weight * go_round_array(bounds[1]).astype(np.int64)
        if len(others) == len(reading.scores):
            return low, high, reading
        return low, high, Profile(reading.scheduler_name, [], others)

    def _reading_part(self, profile: Profile) -> Profile:
        """The profile's score plugins that read the watcher's figures, no filters."""
        found = self._reading.get(id(profile))
        if found is None:
            plugins = [(p, w) for p, w in profile.scores if reads_loads(p)]
            found = self._reading[id(profile)] = Profile(profile.scheduler_name, [], plugins)
        return found
