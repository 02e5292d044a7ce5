"""The "ahead / tie / behind" rule of docs/benchmarks.md (issue 44 item 2)."""

from __future__ import annotations

import pytest

from bench.verdict import AHEAD, BEHIND, TIE, aa_spread, comparison, paired, summary, verdict


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


def test_the_share_scales_with_the_windows():
    # 3 windows: 5/6 of them rounds up to all 3.
    assert verdict([1, 1, 1], [9, 9, 9], spread=0) == AHEAD
    assert verdict([1, 1, 10], [9, 9, 9], spread=0) == TIE


def test_spread_summary_and_pairs():
    assert aa_spread([10, 20, 30], [12, 17, 30]) == pytest.approx(5 / 3, abs=1e-3)
    assert summary([397, 69, 77]) == {"mean": 181.0, "median": 77, "worst": 397}
    assert paired([1, 5], [2, 2]) == [-1, 3]
    doc = comparison([1, 2], [3, 4], spread=0.5)
    assert doc["verdict"] == AHEAD and doc["paired"] == [-2, -2]
    with pytest.raises(ValueError, match="unpaired"):
        paired([1, 2], [1])
    with pytest.raises(ValueError):
        summary([])
