"""The cycle's pure pieces: how many nodes to find, and picking among equal scores."""

from __future__ import annotations

import random
from collections import Counter

from scheduler.cycle import nodes_to_find, pick


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


def test_pick_takes_the_best():
    assert pick({"a": 10, "b": 70, "c": 30}, random.Random(1)) == "b"


def test_pick_breaks_ties_evenly():
    rng = random.Random(7)
    counts = Counter(pick({"a": 5, "b": 9, "c": 9, "d": 9}, rng) for _ in range(3000))
    assert set(counts) == {"b", "c", "d"}
    assert all(800 < n < 1200 for n in counts.values()), counts
