"""Which of a hot node's approved moves to make: the cheapest set that brings it under `high`.

Every candidate is judged first; then, among the sets of at most `room` approved moves (the
per-node and round limits left), the one whose predicted relief covers the node's excess on every
hot resource at the least cost is chosen; when no set covers it, the one with the most relief on
the node's hottest resource (then the cheapest). A move's cost: one for the eviction, half a
point per QoS rank (BestEffort 0, Burstable 0.5, Guaranteed 1) and up to one point for priority
(the node's lowest-priority candidate 0, its highest 1): priority and QoS weigh against relief
instead of ordering it away, so an idle BestEffort replica is not moved ahead of the pod that
would fix the node. Moves relieving less than `minRelief` points are not candidates at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

QOS_COST = 0.5  # per QoS rank
PRIORITY_COST = 1.0  # the node's highest-priority candidate over its lowest
MAX_OPTIONS = 24  # the sets are searched among this many moves, the most relieving
MAX_SET = 4  # and of at most this many (a node allowed more gets the others next round)


@dataclass(frozen=True)
class Option:
    key: str
    relief: dict[str, float]  # predicted percentage points off the node, per resource
    cost: float


def costs(priorities: Sequence[int], qos_ranks: Sequence[int]) -> list[float]:
    """Each candidate's cost, priorities scaled over the node's own candidates."""
    low, high = min(priorities, default=0), max(priorities, default=0)
    spread = float(high - low) or 1.0
    return [
        1.0 + QOS_COST * q + PRIORITY_COST * (p - low) / spread
        for p, q in zip(priorities, qos_ranks, strict=True)
    ]


def choose(options: Sequence[Option], need: dict[str, float], room: int) -> list[Option]:
    """The set to move (cheapest first); `need`: points above high per hot resource."""
    if room <= 0 or not options or not need:
        return []
    main = max(need, key=lambda r: need[r])
    pool = sorted(options, key=lambda o: (-o.relief.get(main, 0.0), o.cost, o.key))[:MAX_OPTIONS]
    best: tuple[tuple[float, ...], tuple[Option, ...]] | None = None
    for size in range(1, min(room, MAX_SET, len(pool)) + 1):
        for combo in combinations(pool, size):
            relief = {r: sum(o.relief.get(r, 0.0) for o in combo) for r in need}
            covers = all(relief[r] > need[r] for r in need)
            cost = sum(o.cost for o in combo)
            # Covering sets by cost, then fewer moves, then relief; the others by relief.
            rank = (0.0, cost, size, -relief[main]) if covers else (1.0, -relief[main], cost, size)
            if best is None or rank < best[0]:
                best = (rank, combo)
    assert best is not None
    return sorted(best[1], key=lambda o: (o.cost, -o.relief.get(main, 0.0), o.key))
