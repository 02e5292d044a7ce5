"""Window statistics and adaptive staleness: pure functions."""

from __future__ import annotations

import numpy as np
import pytest

from watcher.staleness import EXPIRED, FRESH, STALE, horizon, state, worst
from watcher.stats import summarize

nan = np.nan


def test_summary_matches_plain_numpy_per_column_with_gaps():
    times = np.array([0.0, 15.0, 30.0, 45.0, 60.0])
    values = np.array(
        [
            [10.0, nan, 50.0],
            [20.0, 5.0, nan],
            [30.0, nan, nan],
            [40.0, 7.0, nan],
            [nan, nan, nan],
        ]
    )
    s = summarize(times, values)
    assert s["count"].tolist() == [4, 2, 1]
    assert s["avg"].tolist() == pytest.approx([25.0, 6.0, 50.0])
    assert s["std"].tolist() == pytest.approx([np.std([10, 20, 30, 40]), 1.0, 0.0])
    assert s["min"].tolist() == [10.0, 5.0, 50.0]
    assert s["max"].tolist() == [40.0, 7.0, 50.0]
    assert s["p95"][0] == pytest.approx(np.percentile([10, 20, 30, 40], 95))
    assert s["latest"].tolist() == [40.0, 7.0, 50.0]
    assert s["first"].tolist() == [0.0, 15.0, 0.0]
    assert s["last"].tolist() == [45.0, 45.0, 0.0]
    # 10 points per 15 s; the gapped column has no consecutive pair; one sample: no motion.
    assert s["volatility"].tolist() == pytest.approx([10 / 15, 0.0, 0.0])


def test_column_without_samples_has_count_zero_and_nan_statistics():
    s = summarize(np.array([0.0, 1.0]), np.array([[nan, 1.0], [nan, 2.0]]))
    assert s["count"].tolist() == [0, 2]
    assert np.isnan(s["avg"][0]) and np.isnan(s["latest"][0]) and np.isnan(s["last"][0])


def test_empty_window():
    s = summarize(np.array([]), np.zeros((0, 3)))
    assert s["count"].tolist() == [0, 0, 0]
    assert np.isnan(s["avg"]).all()


def test_volatility_is_robust_to_one_spike():
    times = np.arange(10, dtype=float)
    values = np.full((10, 1), 50.0)
    values[5, 0] = 95.0  # one spike: two large steps among nine
    assert summarize(times, values)["volatility"][0] == 0.0


def test_horizon_is_tolerance_over_volatility_within_bounds():
    v = np.array([0.0, 0.1, 1.0, 100.0])
    h = horizon(v, tolerance=5.0, low=30.0, high=300.0)
    assert h.tolist() == [300.0, 50.0, 30.0, 30.0]


@pytest.mark.parametrize(
    "age,expected", [(0.0, FRESH), (30.0, FRESH), (30.1, STALE), (300.0, STALE), (301, EXPIRED)]
)
def test_state_by_age(age, expected):
    assert state(age, horizon_s=30.0, expiry=300.0) == expected


def test_worst_state():
    assert worst([FRESH, STALE]) == STALE
    assert worst([FRESH, EXPIRED, STALE]) == EXPIRED
    assert worst([FRESH]) == FRESH
    assert worst([]) == EXPIRED


def test_nan_quantile_matches_numpy():
    from watcher.stats import nan_quantile

    rng = np.random.default_rng(3)
    values = rng.uniform(0, 100, size=(20, 50))
    values[rng.uniform(size=values.shape) < 0.3] = nan
    values[:, 0] = nan
    for q in (0.5, 0.95):
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
            want = np.nanpercentile(values, q * 100, axis=0)
        assert np.allclose(nan_quantile(values, q), want, equal_nan=True)
