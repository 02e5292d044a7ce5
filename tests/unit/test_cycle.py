"""The cycle's pure pieces: how many nodes to find, the filter pass over a share of them, and
picking among equal scores."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.cycle import filter_pass, nodes_to_find, pick_best
from scheduler.framework import CycleState
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot


def test_small_clusters_are_searched_whole():
    assert nodes_to_find(50, 0) == 50
    assert nodes_to_find(99, 10) == 99


def test_adaptive_percentage_follows_kube_scheduler():
    assert nodes_to_find(1000, 0) == 420  # 50 - 1000/125 = 42 %
    assert nodes_to_find(5000, 0) == 500  # 50 - 40 = 10 %
    assert nodes_to_find(10000, 0) == 500  # floor of 5 %
    assert nodes_to_find(200, 0) == 100  # never fewer than 100


def test_explicit_percentage():
    assert nodes_to_find(1000, 100) == 1000
    assert nodes_to_find(1000, 30) == 300
    assert nodes_to_find(1000, 1) == 100


def pick(scores: dict[str, int], rng: random.Random) -> str:
    """pick_best over a {node: total} map, in its order."""
    names = list(scores)
    return names[pick_best(np.array([scores[n] for n in names], dtype=np.int64), rng)]


def test_pick_takes_the_best():
    assert pick({"a": 10, "b": 70, "c": 30}, random.Random(1)) == "b"


def test_pick_breaks_ties_evenly():
    rng = random.Random(7)
    counts = Counter(pick({"a": 5, "b": 9, "c": 9, "d": 9}, rng) for _ in range(3000))
    assert set(counts) == {"b", "c", "d"}
    assert all(800 < n < 1200 for n in counts.values()), counts


def _sequential(fits: list[bool], start: int, wanted: int) -> tuple[list[int], int]:
    """Upstream's rule, one node at a time from `start`: the first `wanted` feasible nodes, and
    how far the next cycle's start moves (those nodes plus the rejected ones seen)."""
    found, seen = [], 0
    while seen < len(fits) and len(found) < wanted:
        i = (start + seen) % len(fits)
        seen += 1
        if fits[i]:
            found.append(i)
    return found, seen


def test_filter_pass_stops_at_the_last_node_wanted_as_upstream_does():
    profile = build_profiles(parse_config({}))["ballast"]
    pod = make_pod(containers=[container(cpu="500m")])
    rng = random.Random(3)
    for _ in range(30):
        total = rng.randrange(101, 400)
        share = rng.choice([0.05, 0.5, 0.9, 1.0])
        fits = [rng.random() < share for _ in range(total)]
        nodes = [make_node(f"n{i:03d}", cpu="1" if ok else "100m") for i, ok in enumerate(fits)]
        start, percentage = rng.randrange(total), rng.choice([0, 10, 30])
        feasible, reasons, seen = filter_pass(
            profile, pod, nodes, snapshot(nodes), CycleState(), start, percentage
        )
        expected, moved = _sequential(fits, start, nodes_to_find(total, percentage))
        assert [n.name for n in feasible] == [f"n{i:03d}" for i in expected]
        assert seen == moved
        assert len(reasons) == moved - len(expected)  # every node looked at and rejected


def test_pick_best_draws_among_the_ties_in_node_order():
    """The rule the cycle kept when its pick moved onto arrays: the best nodes in node order,
    one of them by a single randrange (so placements did not change)."""
    draw = random.Random(11)
    for _ in range(300):
        totals = [draw.randrange(4) for _ in range(draw.randrange(1, 30))]
        seed = draw.randrange(10**6)
        ties = [i for i, t in enumerate(totals) if t == max(totals)]
        rng = random.Random(seed)
        expected = ties[0] if len(ties) == 1 else ties[rng.randrange(len(ties))]
        assert pick_best(np.array(totals, dtype=np.int64), random.Random(seed)) == expected
