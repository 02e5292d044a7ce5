"""The "ahead / tie / behind" rule of docs/benchmarks.md (issue 44 item 2)."""

from __future__ import annotations

import pytest

from bench.harness.verdict import (
    AHEAD,
    BEHIND,
    TIE,
    aa_spread,
    comparison,
    paired,
    scenario_verdicts,
    summary,
    verdict,
    verdict_table,
)


def test_ahead_needs_the_mean_and_five_windows_of_six():
    peer = [100, 100, 100, 100, 100, 100]
    assert verdict([80, 80, 80, 80, 80, 120], peer, spread=5) == AHEAD  # 5 of 6 lower
    # Lower on the mean by far, but in only 4 windows: one big win is not a lead.
    assert verdict([10, 10, 10, 10, 120, 120], peer, spread=5) == TIE
    assert verdict([120, 120, 120, 120, 120, 90], peer, spread=5) == BEHIND


def test_a_difference_within_the_aa_spread_is_a_tie():
    peer = [100] * 6
    ours = [95] * 6  # lower in every window, by 5
    assert verdict(ours, peer, spread=4.9) == AHEAD
    assert verdict(ours, peer, spread=5.0) == TIE
    assert verdict([105] * 6, peer, spread=5.0) == TIE


def test_the_share_scales_with_the_windows_and_few_windows_decide_nothing():
    # 5 windows: 5/6 of them rounds up to all 5.
    assert verdict([1, 1, 1, 1, 1], [9] * 5, spread=0) == AHEAD
    assert verdict([1, 1, 1, 1, 10], [9] * 5, spread=0) == TIE
    # 12 windows: 10 lower are enough.
    assert verdict([1] * 10 + [20, 20], [9] * 12, spread=0) == AHEAD
    # A --quick run's one window, however far apart: no verdict.
    assert verdict([1], [90], spread=0) == TIE
    assert verdict([1, 1, 1, 1], [90] * 4, spread=0) == TIE


def test_spread_summary_and_pairs():
    assert aa_spread([10, 20, 30], [12, 17, 30]) == pytest.approx(5 / 3, abs=1e-3)
    assert summary([397, 69, 77]) == {"mean": 181.0, "median": 77, "worst": 397}
    assert paired([1, 5], [2, 2]) == [-1, 3]
    doc = comparison([1, 2], [3, 4], spread=0.5)
    assert doc["verdict"] == TIE and doc["paired"] == [-2, -2]  # two windows decide nothing
    with pytest.raises(ValueError, match="unpaired"):
        paired([1, 2], [1])
    with pytest.raises(ValueError):
        summary([])


def _runs(figures: dict[str, list[float]]) -> list[dict]:
    seeds = range(1, len(next(iter(figures.values()))) + 1)
    return [
        {"scenario": "trace", "seed": s,
         "contenders": {c: {"node_seconds_over_100": v[s - 1]} for c, v in figures.items()}}
        for s in seeds
    ]  # fmt: skip


def test_scenario_verdicts_and_table():
    runs = _runs({
        "ballast-lvrb": [10, 12, 11, 9, 10, 40],
        "ballast-lvrb-aa": [12, 10, 11, 11, 12, 38],  # spread 1.67
        "koordinator": [30, 31, 29, 30, 30, 35],
        "trimaran-lvrb": [11, 13, 10, 10, 11, 41],
    })  # fmt: skip
    v = scenario_verdicts(runs, "trace", "node_seconds_over_100", "ballast-lvrb", "ballast-lvrb-aa")
    assert v["aa_spread"] == pytest.approx(1.667, abs=1e-3)
    assert v["peers"]["koordinator"]["verdict"] == AHEAD
    assert v["peers"]["trimaran-lvrb"]["verdict"] == TIE
    assert set(v["peers"]) == {"koordinator", "trimaran-lvrb"}
    text = verdict_table(v)
    assert "| koordinator | 30.83 / 30 / 35 | 15.33 / 10.5 / 40 |" in text
    assert text.count("\n") == 4
    with pytest.raises(ValueError, match="no node_seconds_over_100 of nobody"):
        scenario_verdicts(runs, "trace", "node_seconds_over_100", "nobody", "ballast-lvrb")
