"""Where the scheduler may put a replacement at scale: every node that is the best of some
sample of `nodes_to_find` consecutive feasible nodes (percentageOfNodesToScore), checked against
every sample the scheduler can draw, over random clusters of 100 to 5,000 nodes."""

from __future__ import annotations

import random

import pytest

from scheduler.framework.sampling import nodes_to_find
from scheduler.rebalancer.landing import possible_winners


def every_sample(scores: list[int], sample: int) -> set[int]:
    """The winners of each window the cycle may score, found one window at a time."""
    n = len(scores)
    if sample >= n:
        best = max(scores)
        return {i for i, s in enumerate(scores) if s == best}
    out: set[int] = set()
    for start in range(n):
        window = [(start + j) % n for j in range(sample)]
        best = max(scores[i] for i in window)
        out |= {i for i in window if scores[i] == best}
    return out


def test_small_cases():
    assert possible_winners([], 5) == set()
    assert possible_winners([3, 9, 9, 1], 10) == {1, 2}  # no sampling: the best, ties all
    # Samples of 2, wrapping round: (5,1) (1,4) (4,3) (3,5): 1 and 3 never win.
    assert possible_winners([5, 1, 4, 3], 2) == {0, 2}
    assert possible_winners([5, 1, 4, 3], 1) == {0, 1, 2, 3}


@pytest.mark.parametrize("seed", range(40))
def test_the_winners_are_those_of_every_sample_at_100_nodes_and_more(seed):
    rng = random.Random(seed)
    total = rng.randint(100, 400)
    feasible = rng.randint(1, total)
    # Scores as a profile's weighted totals: few distinct values, so ties are common.
    scores = [rng.randint(0, rng.choice((5, 50, 300))) for _ in range(feasible)]
    sample = nodes_to_find(total, rng.choice((0, 0, 10, 30, 50)))
    assert possible_winners(scores, sample) == every_sample(scores, sample)


def test_at_5000_nodes_the_best_node_wins_only_the_samples_it_is_in():
    # 5,000 feasible nodes, the adaptive share scores 500 of them. One excellent node among
    # equal others wins only the samples it is in: any of the others may get the pod, so a
    # judge that looked at the best node alone would book the relief on the wrong one.
    scores = [50] * 5000
    scores[1234] = 99
    sample = nodes_to_find(5000, 0)
    assert sample == 500
    assert possible_winners(scores, sample) == set(range(5000))
    # Rising scores: each sample is won by its last node (the one with 4999 wraps round).
    assert possible_winners(list(range(5000)), sample) == set(range(499, 5000))
