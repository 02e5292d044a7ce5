"""The peak study's pure parts: the predictors' formulas, the measures, the placement rules and
the selection rule, on arrays small enough to check by hand."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bench.peaks import __main__ as cli
from bench.peaks import predictors as pr
from bench.peaks import run, study
from sandbox.load.trace import Trace, VmSeries


def test_node_series_predictors():
    history = np.array([[1.0, 3.0], [2.0, 2.0]])
    assert pr.window_mean(history).tolist() == [2.0, 2.0]
    assert pr.n_sigma(history, 2).tolist() == [4.0, 2.0]  # std 1 and 0
    assert pr.percentile(history, 100).tolist() == [3.0, 2.0]


def test_rc_like_adds_each_pods_percentile_on_its_node():
    assert pr.rc_like(np.array([1.0, 2.0, 4.0]), np.array([0, 1, 0]), 3).tolist() == [5, 2, 0]


def test_workload_spread_adds_deviations_within_a_workload_and_variances_across():
    mean, std = np.array([1.0, 1.0, 1.0]), np.array([3.0, 1.0, 4.0])
    node_of = np.zeros(3, dtype=int)
    # pods 0 and 1 are replicas of workload 0: their deviations add (4); pod 2 is apart (4).
    got = pr.workload_spread(mean, std, node_of, np.array([0, 0, 1]), 1, 2)
    assert got.tolist() == pytest.approx([3 + 2 * np.sqrt(4**2 + 4**2)])
    # each pod its own workload: independent, sqrt(9 + 1 + 16)
    got = pr.workload_spread(mean, std, node_of, np.arange(3), 1, 2)
    assert got.tolist() == pytest.approx([3 + 2 * np.sqrt(26)])


def test_workload_spread_keeps_nodes_apart():
    got = pr.workload_spread(np.ones(2), np.ones(2), np.array([0, 1]), np.array([0, 0]), 2, 1)
    assert got.tolist() == [2.0, 2.0]


def test_workload_excess_combines_workloads_excesses_over_their_means():
    mean, high = np.array([1.0, 1.0, 2.0]), np.array([4.0, 4.0, 10.0])
    node_of, workload_of = np.zeros(3, dtype=int), np.array([0, 0, 1])
    # replicas' excesses add (3 + 3 = 6), the other workload's (8) combines in quadrature: 10
    got = pr.workload_spread(mean, high - mean, node_of, workload_of, 1, 1)
    assert got.tolist() == pytest.approx([4 + 10])
    # below RC-like (the sum of percentiles, 18), at least the largest workload's own peak
    assert got[0] < pr.rc_like(high, node_of, 1)[0]


def test_future_peak_is_the_max_of_the_coming_steps():
    got = pr.future_peak(np.array([[1.0, 5.0, 2.0, 3.0]]), 2)
    assert got[0, :3].tolist() == [5.0, 5.0, 3.0]
    assert np.isnan(got[0, 3])
    assert np.isnan(pr.future_peak(np.ones((1, 2)), 3)).all()


def test_measures():
    truth = np.array([[2.0, 5.0]])
    forecast = np.array([[3.0, 4.0]])
    requests = np.array([[10.0, 10.0]])
    assert pr.violation_rate(truth, forecast) == 0.5
    assert pr.savings(forecast, requests) == pytest.approx(0.65)
    assert pr.severity(truth, forecast, requests) == pytest.approx(0.1)
    assert pr.severity(truth, truth, requests) == 0.0


def test_first_fit_opens_a_node_only_when_none_has_room():
    requests = np.array([4.0, 4.0, 2.0, 8.0])
    assert study.first_fit(requests, 8.0, [0, 1, 2, 3]).tolist() == [0, 0, 1, 2]


def test_random_fit_respects_room_while_there_is_some():
    requests = np.array([4.0, 4.0, 4.0, 4.0, 4.0])
    node_of = study.random_fit(requests, 8.0, 2, list(range(5)), random.Random(1))
    loads = np.bincount(node_of, weights=requests, minlength=2)
    assert sorted(loads.tolist()) == [8.0, 12.0]  # the fifth pod goes to a least-loaded node


def test_newcomers_one_pod_of_each_node_or_none():
    got = study.newcomers(np.array([0, 0, 2]), 3, seed=1)
    assert got[0] in (0, 1) and got[1] == -1 and got[2] == 2


def test_every_predictor_has_a_family():
    for name in ("requests", "mean-5m", "node-p95-1h", "node-peaks-p95-1d", "n-sigma-2-1d",
                 "rc-p95-1d", "max(n-sigma-2, rc-p95)-1d", "workload-sigma-3-1d",
                 "pod-sigma-3-1d", "rc-peaks-p99-3d", "workload-excess-1-p100-1d",
                 "workload-excess-peaks-1.5-p99-1d", "max(rc-p99-6h, node-p100-3d)"):  # fmt: skip
        assert study.family_of(name)
    with pytest.raises(ValueError):
        study.family_of("nonsense")


def _scores(violations: float, savings: float) -> dict:
    s = {"violations": violations, "savings": savings, "severity": 0.0}
    return {h: {"all": s, "first": s, "second": s} for h in study.HORIZONS}


def test_chosen_is_the_highest_saving_pod_sum_predictor_safe_everywhere():
    table = {
        "rc-p99-1d": _scores(0.005, 0.6),
        "workload-sigma-3-1d": _scores(0.002, 0.7),
        "pod-sigma-1-1d": _scores(0.02, 0.9),  # saves more, too many violations
        "n-sigma-1-1d": _scores(0.0, 0.95),  # a node-series predictor: not a candidate
    }
    metrics = {rule: table for rule in study.RULES}
    assert run.chosen(metrics, study.POD_SUM_FAMILIES)["predictor"] == "workload-sigma-3-1d"
    assert run.chosen(metrics, None)["predictor"] == "n-sigma-1-1d"
    assert run.best(metrics, "first-fit", "1h", None)["predictor"] == "n-sigma-1-1d"
    assert run.best(metrics, "first-fit", "1h", ("rc-like",))["predictor"] == "rc-p99-1d"
    assert run.best(metrics, "first-fit", "1h", ("requests",)) is None


def test_help_and_bad_arguments():
    with pytest.raises(SystemExit) as done:
        cli.parse_args(["--help"])
    assert done.value.code == 0
    with pytest.raises(SystemExit) as done:
        cli.parse_args(["--every", "0"])
    assert done.value.code == 2


def _trace(steps: int) -> Trace:
    """Three VMs: one idle, one with a daily burst, one steady at half its cores."""
    t = np.arange(steps)
    used = {
        "1": np.full(steps, 0.05),
        "2": np.where(t % 288 < 12, 3.5, 0.1),
        "3": np.full(steps, 1.0),
    }
    vms = {
        vm: VmSeries(vm, np.full(steps, 4.0), use, np.full(steps, 1e6), np.full(steps, 1e5))
        for vm, use in used.items()
    }
    return Trace(0.0, steps, vms, "test")


def test_the_study_end_to_end_on_a_small_trace():
    metrics, facts = run.collect(_trace(2 * 288), [1], every=48, capacity=8.0, say=lambda _: None)
    assert facts["forecast_times"] == 6
    ff = metrics["first-fit"]
    assert ff["requests"]["1h"]["all"] == {"violations": 0.0, "savings": 0.0, "severity": 0.0}
    # every pod's max over the last day is at least any coming hour's use of the same pattern
    assert ff["rc-p100-1d"]["1h"]["all"]["violations"] == 0.0
    assert 0 < ff["rc-p100-1d"]["1h"]["all"]["savings"] < 1
    # a pod new to the node's series is added at its day max: never below the pods' own sum
    new = ff[f"{run.RECOMMENDED}, one pod new"]["1h"]["all"]
    assert new["savings"] <= ff["rc-p100-1d"]["1h"]["all"]["savings"]
    doc = {
        "summary": run.summarise(metrics, facts["oracle_savings"]),
        "metrics": metrics,
        "chosen": run.chosen(metrics, None),
        "chosen_paper": run.chosen(metrics, study.PAPER_FAMILIES),
        "recommended": {"predictor": run.RECOMMENDED},
    }
    text = run.table_text(doc)
    assert "| first-fit | 1h |" in text and run.RECOMMENDED in text
