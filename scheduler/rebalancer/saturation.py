"""Saturated nodes: CPU pinned at capacity for `consecutive` fresh samples, hot at once.

A node counts as hot when its window's statistic is above `high` for `consecutive` fresh
observations. After a step from 60 % to a CPU pinned at 100 % the window's average needs about
half the window to cross 80 %: two and a half minutes of a node throttling its pods with the
deployed 300 s window, before the streak even starts. With `saturated` set (percent of the node,
above cpu's high), a node whose newest CPU sample is at or above it on `consecutive` fresh
observations in a row (each on a newer sample than the last counted, as a hot streak counts
them; a sample under the level, or a round without fresh figures, starts over) is hot at once:
judged on the least of those samples instead of the window's statistic, its streak confirmed.
The samples are each round's newest (`latest`: an upstream load-watcher's CPU has none, and
nothing is saturated then); rounds slower than the watcher's polls skip some.

Saturation is the signal, not a sample above `high`: a CPU at its capacity throttles its pods
now, and a few polls of it are not a burst the average would smooth away. What the samples
cannot show is how far past capacity the demand is (the measured use stops at 100 %), so the
planner takes a saturated node as `200 - saturated` % (105 % at `saturated: 95`): the band
under 100 % that counts as pinned is read as the clamp's blur, and the same band over it as
the least the clamp hides. A rest after a move off a saturated node ends as soon as one sample
taken after the victim's going (rest.py) is still at or above the level.
"""

from __future__ import annotations

from scheduler.framework import CPU
from scheduler.rebalancer.classify import HOT, NORMAL, UNKNOWN, Classification, HotStreaks, state_of

SATURATED = "cpu-saturated"  # the reason label in metrics and decisions


def planned_use(level: float) -> float:
    """The CPU % a saturated node is planned at: as far past 100 as `level` is under it."""
    return 200.0 - level


def at_level(view: Classification, node: str, level: float) -> float | None:
    """The node's newest CPU sample when it is at or above `level`, else None."""
    latest = view.latest.get(node, {}).get(CPU)
    return latest if latest is not None and latest >= level else None


class Saturation:
    """Per node, its newest CPU samples in a row at or above the level, counted as a hot streak
    counts observations (classify.HotStreaks: one per newer sample; a break or a round without
    fresh figures starts over)."""

    def __init__(self) -> None:
        self.streaks = HotStreaks()
        self.run: dict[str, list[float]] = {}  # node -> its samples in the streak, latest last

    def observe(self, view: Classification, level: float, needed: int) -> dict[str, float]:
        """Read this round's view; the saturated nodes (`needed` samples in a row at or above
        `level`; 0: off), each with the least of them."""
        needed = max(1, needed)
        pinned = Classification(sample_time=view.sample_time)
        for node in view.state:
            known = node in view.usage and CPU in view.latest.get(node, {})
            figure = at_level(view, node, level) if level and known else None
            pinned.state[node] = UNKNOWN if not known else NORMAL if figure is None else HOT
        before = dict(self.streaks.count)
        self.streaks.observe(pinned)
        self.run = {n: self.run.get(n, []) for n in self.streaks.count}
        for node, count in self.streaks.count.items():
            if count != before.get(node):  # a newer sample at the level
                self.run[node] = [*self.run[node], view.latest[node][CPU]][-needed:]
        return {n: min(self.run[n]) for n in self.streaks.confirmed(needed)}


def mark(view: Classification, saturated: dict[str, float]) -> None:
    """The saturated nodes judged on their samples: CPU at least the least of them, hot when
    that is above high (in deviation mode high may sit past 100 %), each in `view.saturated`."""
    for node, least in saturated.items():
        values = view.usage.get(node)
        if values is None or CPU not in values:
            continue
        values[CPU] = max(values[CPU], least)
        view.state[node] = state_of(values, view.high, view.low)
        view.saturated[node] = least
