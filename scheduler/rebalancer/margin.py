"""The load margin: the scores as the scheduler may see them a poll after the judge.

The judge and the cycle that places the replacement seconds later read the watcher through
clients of their own, each refreshed every 5 s, so their copies of a node's window can be one
watcher poll apart. A poll adds a sample to the 5-minute window of 15 s polls (20 samples) and
the oldest leaves: the window's average moves by (new - old) / 20, at most 5 points of the
node's CPU (docs/rebalancer.md, "The load margin"). So a move is judged with every node's CPU
read up to `loadMargin` points off the judge's figures, each node the way that goes against
the move: the nodes the replacement may land on at their lowest score, every other (the source,
hot nodes, nodes the pod would push over high, nodes without fresh figures) at its highest.

The load plugins score a node from its own figures (none normalises over the nodes), so that
worst case is per node: its scores with every node read `loadMargin` cooler, as the judge reads
it, and `loadMargin` hotter. Scores that fall with use (LoadVariationRiskBalancing,
LowRiskOverCommitment, PeakFit) have their ends there; TargetLoadPacking's rises to its target
then falls, so its lowest is at an end too and its highest is missed only for a node within the
margin of the target, which an unacceptable node above `high` is not.

What is shifted is the CPU figures the load plugins read (the window's avg, latest and p95, the
72-hour peak), clamped to 0..100 as a watcher reports them, in a new Snapshot sharing
everything else with the judge's: nothing the cache holds changes, so there is nothing to undo.
Memory is read as it is (it moves far less between two polls), and the filters run once on the
judge's figures: a load filter (LoadThreshold, PeakFit's limit; opt-in) is not widened.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from scheduler.framework import CPU, CycleState, NodeInfo, NodeLoad, PodInfo, Snapshot
from scheduler.framework.profile import Profile


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


class LoadMargin:
    """The round's loads read `points` cooler and hotter, built once: a round's edits move pods,
    never the watcher's figures."""

    def __init__(self, loads: dict[str, NodeLoad], points: float) -> None:
        self.points = points
        self.readings = (shifted(loads, -points), shifted(loads, points)) if points > 0 else ()

    def worst(
        self,
        profile: Profile,
        pod: PodInfo,
        nodes: list[NodeInfo],
        snap: Snapshot,
        scores: dict[str, int],
        favoured: Iterable[str],
    ) -> dict[str, int]:
        """`scores` (the profile's over `nodes` on `snap`) against the move: each node of
        `favoured` at its lowest with its CPU read up to the margin off, every other node at its
        highest. `scores` itself when the margin is 0."""
        if not self.readings or len(scores) < 2:
            return scores
        low = set(favoured)
        out = dict(scores)
        for loads in self.readings:
            # A state of its own: the plugins memoise each node's load in theirs.
            other = profile.score(pod, nodes, replace(snap, loads=loads), CycleState())
            for name, value in other.items():
                out[name] = min(out[name], value) if name in low else max(out[name], value)
        return out
