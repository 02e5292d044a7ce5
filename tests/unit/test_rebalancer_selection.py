"""The cheapest set of approved moves that brings a hot node under high (selection.py)."""

from __future__ import annotations

from scheduler.rebalancer.selection import Option, choose, costs


def opt(key: str, cpu: float, cost: float = 1.0, memory: float = 0.0) -> Option:
    return Option(key, {"cpu": cpu, "memory": memory}, cost)


def keys(chosen: list[Option]) -> list[str]:
    return [o.key for o in chosen]


def test_the_cheapest_covering_set_within_the_room():
    options = [opt("idle", 1.0), opt("a", 6.0), opt("b", 7.0), opt("big", 20.0, cost=2.5)]
    assert keys(choose(options, {"cpu": 12.0}, 1)) == ["big"]  # the only single move covering
    assert keys(choose(options, {"cpu": 12.0}, 2)) == ["b", "a"]  # 2.0 beats 2.5
    assert keys(choose(options, {"cpu": 5.0}, 2)) == ["b"]  # one suffices; equal cost: more relief
    # Nothing covers 30 within two moves: the most relief, never the idle one.
    assert keys(choose(options, {"cpu": 30.0}, 2)) == ["b", "big"]
    assert choose(options, {"cpu": 12.0}, 0) == []
    assert choose([], {"cpu": 12.0}, 3) == []


def test_every_hot_resource_is_covered():
    options = [opt("cpu-heavy", 20.0), opt("mem-heavy", 2.0, memory=20.0)]
    need = {"cpu": 10.0, "memory": 10.0}
    assert keys(choose(options, need, 1)) == ["cpu-heavy"]  # the main one, most relief
    assert keys(choose(options, need, 2)) == ["cpu-heavy", "mem-heavy"]


def test_priority_and_qos_are_costs():
    # BestEffort low priority 1.0; Guaranteed 2.0; the node's highest priority +1.
    assert costs([0, 0, 1000], [0, 2, 0]) == [1.0, 2.0, 2.0]
    assert costs([5, 5], [1, 1]) == [1.5, 1.5]  # one priority: no spread
