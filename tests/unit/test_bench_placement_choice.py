"""The rule that picks the chart's default profile from a full placement run (docs/placement.md,
bench/placement/choice.py), on hand-made results: each condition can fail it on its own."""

from __future__ import annotations

import pytest

from bench.placement import choice
from bench.placement import run as pl
from bench.placement import trace as pt

CLEAN = {"dirty": False, "run": {"allow_dirty": False}}


def result(trace=None, synthetic=None, windows=6, seeds=5):
    """Every contender at a base figure per measure; `trace` and `synthetic` override
    (contender, measure) -> per-window list."""
    runs = []
    scenarios = [("trace", windows, pt.VERDICT_MEASURES, trace or {})]
    scenarios += [(s, seeds, pl.VERDICT_MEASURES, synthetic or {}) for s in choice.SYNTHETIC]
    for scenario, n, measures, override in scenarios:
        for k in range(n):
            contenders = {}
            for c in (choice.LVRB, choice.AA, choice.PEAK, "koordinator"):
                figures = {m: 10.0 + (k % 2) for m in measures}  # A/A differs by chance: 0
                for (who, m), values in override.items():
                    if who == c and m in figures:
                        figures[m] = values[k]
                contenders[c] = figures
            runs.append({"scenario": scenario, "seed": k + 1, "contenders": contenders})
    return {"provenance": CLEAN, "quick": False, "runs": runs}


# PeakFit 40 node-seconds under LVRB in 5 of 6 windows; the A/A pair 5 apart on average
AHEAD = {
    (choice.PEAK, "node_seconds_over_100"): [0, 0, 0, 0, 0, 90],
    (choice.LVRB, "node_seconds_over_100"): [40, 40, 40, 40, 40, 90],
    (choice.AA, "node_seconds_over_100"): [45, 35, 45, 35, 45, 85],
}


def test_peak_fit_becomes_the_default_when_every_condition_holds():
    got = choice.choose(result(AHEAD))
    assert got["qualifies"] == [] and got["default"] == choice.PEAK
    first = got["conditions"][0]
    assert (first["aa_spread"], first["lower_in"], first["needed_lower_in"]) == (5.0, 5, 5)
    assert len(got["conditions"]) == 3 + len(choice.SYNTHETIC) * len(pl.VERDICT_MEASURES)


@pytest.mark.parametrize(
    "trace,synthetic",
    [
        # a tie on the trace: lower on the mean, but by less than the A/A spread
        ({**AHEAD, (choice.PEAK, "node_seconds_over_100"): [36, 36, 36, 36, 36, 90]}, {}),
        # ahead on the mean, lower in only 4 of 6 windows
        ({**AHEAD, (choice.PEAK, "node_seconds_over_100"): [0, 0, 0, 0, 50, 90]}, {}),
        # one more pod left pending on the trace
        ({**AHEAD, (choice.PEAK, "pending"): [10, 11, 10, 11, 10, 12]}, {}),
        # behind in one synthetic scenario's max by more than its A/A spread (0)
        (AHEAD, {(choice.PEAK, "max_cpu"): [12, 12, 12, 12, 12]}),
    ],
)
def test_any_failed_condition_keeps_the_default(trace, synthetic):
    assert choice.choose(result(trace, synthetic))["default"] == choice.LVRB


def test_a_run_that_cannot_decide_keeps_the_default():
    assert choice.qualifies(result(AHEAD)) == []
    short = choice.choose(result(AHEAD, windows=5))
    assert short["default"] == choice.LVRB and short["qualifies"] == [
        "trace: 5 of at least 6 windows with all three"
    ]
    dirty = {**result(AHEAD), "provenance": {"dirty": True}}
    assert choice.choose(dirty)["qualifies"] == ["not run from a clean tree at a commit"]
    assert choice.choose({**result(AHEAD), "quick": True})["qualifies"] == ["a --quick run"]


def test_the_rule_reads_every_measure_the_verdicts_compare():
    assert set(pt.VERDICT_MEASURES) == {"node_seconds_over_100", "node_seconds_over_90", "pending"}
    assert set(choice.SYNTHETIC) | {"trace"} == set(pl.SCENARIOS)
