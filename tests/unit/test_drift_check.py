"""The drift check's criteria (bench/rebalance/drift_check.py; the run itself is
`make bench-drift-check`)."""

from __future__ import annotations

import pytest

from bench.rebalance.drift_check import criteria, hot_since, means, minimum_needed, relieved_at


def series(*values: float, start: float = 0.0) -> list[tuple[float, float]]:
    """One sample a second."""
    return [(start + i, v) for i, v in enumerate(values)]


def test_means_are_over_the_span_up_to_each_sample():
    s = series(*([70.0] * 10 + [90.0] * 10))
    m = dict(means(s, span=10.0))
    assert m[9.0] == 70.0
    assert m[14.0] == pytest.approx((6 * 70 + 5 * 90) / 11)  # 4..14: the span's edges count
    assert m[19.0] == pytest.approx((90 * 10 + 70) / 11)
    assert dict(means(s))[19.0] == pytest.approx(80.0)  # the window's mean by default


def test_hot_from_its_windows_mean_and_relief_only_when_it_stays_under():
    s = series(*([60.0] * 60 + [100.0] * 120 + [70.0] * 200))
    hot = hot_since(s, after=10.0)
    assert hot is not None and 85.0 < hot < 120.0  # the window's mean crosses, not a sample
    relief = relieved_at(s, hot)
    assert relief is not None and 180.0 < relief < 240.0
    back = s + series(*([100.0] * 60), start=380.0)  # hot again at the end: not relieved
    assert relieved_at(back, hot) is None
    assert relieved_at(s, None) is None
    assert hot_since(series(*([60.0] * 100)), after=0.0) is None


def test_minimum_needed_takes_the_biggest_pods_first():
    assert minimum_needed(90.0, [5.0, 12.0, 4.0]) == 1  # 90 - 12 = 78
    assert minimum_needed(90.0, [5.0, 6.0, 4.0]) == 2  # 90 - 6 - 5 = 79
    assert minimum_needed(90.0, [5.0, 4.0]) is None  # not enough to move
    assert minimum_needed(70.0, []) == 0


def run(evictions, *, needed=1, lost=0, tail=(70.0,) * 500):
    """Node n0 hot (its window's mean over 80) from t=~45 s, relieved at ~140 s; n1 cool."""
    hot = series(*([60.0] * 10 + [95.0] * 120 + list(tail)))
    cool = series(*([30.0] * len(hot)))
    end = hot[-1][0]
    return criteria("n0", {"n0": hot, "n1": cool}, evictions, 0.0, end, needed, "w0", lost)


def eviction(t: float, workload: str = "w1", back: bool = False) -> dict:
    return {"time": t, "workload": workload, "from": "n0",
            "replacement_node": "n0" if back else "n1"}  # fmt: skip


def test_a_clean_run_passes_every_criterion():
    result = run([eviction(60.0)])
    assert all(c["pass"] for c in result.values()), result
    assert result["relieved_within_6_minutes"]["value_s"] < 360
    assert result["relieved_within_6_minutes"]["highest_10s_mean_after_relief"] == 70.0
    assert result["none_in_the_5_minutes_after_relief"]["observed_after_relief_s"] >= 300


NOT_HOT, AFTER = "none_while_no_node_is_hot", "none_in_the_5_minutes_after_relief"
BEYOND = "at_most_one_eviction_beyond_the_minimum"


@pytest.mark.parametrize(
    ("evictions", "kw", "failed"),
    [
        ([eviction(60.0), eviction(65.0), eviction(70.0)], {}, {BEYOND}),
        ([eviction(60.0, "w0")], {}, {"none_of_a_workload_whose_pdb_is_at_its_limit"}),
        ([eviction(5.0), eviction(60.0)], {}, {NOT_HOT}),
        ([eviction(60.0), eviction(300.0)], {}, {NOT_HOT, AFTER}),
        ([eviction(60.0, back=True)], {}, {"no_replacement_bound_back_onto_the_node_it_left"}),
        ([eviction(60.0)], {"lost": 1}, {"no_pod_lost"}),
        ([eviction(60.0)], {"tail": (70.0,) * 200}, {AFTER}),  # not watched 5 minutes
        ([eviction(60.0)], {"tail": (95.0,) * 320 + (70.0,) * 500}, {"relieved_within_6_minutes"}),
        ([eviction(60.0)], {"needed": None}, {BEYOND}),
    ],
)  # fmt: skip
def test_each_criterion_fails_on_its_own_case(evictions, kw, failed):
    result = run(evictions, **kw)
    assert {name for name, c in result.items() if not c["pass"]} == failed
