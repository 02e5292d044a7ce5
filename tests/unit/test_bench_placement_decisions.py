"""bench.placement.decisions: a decision record reduced, and a hot node's overload split into the
view, the prediction and what came after."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.placement import decisions
from bench.placement import run as pl
from bench.placement import trace as pt
from bench.placement.decisions import Decision


def record(outcome: str = "bound", node: str = "n1", usage: float = 30.0) -> dict:
    """A pod's record as /api/v1/decisions/NS/POD serves it (docs/explain.md)."""
    return {
        "namespace": "placement",
        "pod": "ballast-lvrb-p001",
        "attempts": [
            {
                "attempt": 2,
                "time": 1000.0,
                "outcome": outcome,
                "node": node,
                "prediction": {"cpuM": 400, "source": "profile"},
                "scores": {
                    "winner": {"node": node, "total": 60, "margin": 12},
                    "top": [
                        {"node": "n2", "load": {"cpu": {"usage": 90.0}, "capacityCpuM": 4000}},
                        {
                            "node": node,
                            "load": {
                                "cpu": {"usage": usage, "std": 3.0, "state": "fresh", "age": 2.0},
                                "recentCpuM": 800,
                                "recentCountedCpuM": 400.0,
                                "capacityCpuM": 4000,
                            },
                        },
                    ],
                },
            },
            {"attempt": 1, "time": 990.0, "outcome": "unschedulable"},
        ],
    }


def test_digest_reads_the_chosen_nodes_view_with_recent_pods_counted():
    d = decisions.digest(record())
    assert d == Decision(
        pod="ballast-lvrb-p001",
        node="n1",
        time=1000.0,
        seen_cpu=40.0,  # 30 % measured + 400m of 4000m recently bound
        state="fresh",
        age=2.0,
        predicted_cpu=10.0,
        source="profile",
        margin=12,
        peak_cpu=None,
    )


def test_peakfits_source_is_kept_by_kind_and_counted_per_group():
    doc = record()
    attempt = doc["attempts"][0]
    attempt["scores"]["peakPodFrom"] = (
        "workload history of placement/Deployment/x-d01 (24 of 24 buckets)"
    )
    d = decisions.digest(doc)
    assert d is not None and d.peak_source == "workload history"
    assert decisions.peak_kind("replicas of ns/Deployment/web (2 measured)") == "replicas"
    assert decisions.peak_kind("estimate (requests)") == "estimate (requests)"
    out = decisions.attribute(
        [d, replace(d, peak_source="replicas")], lambda n, t: 50.0, lambda n, t: 120.0,
        lambda p, t: 20.0, {"n1": 3},
    )  # fmt: skip
    assert out["hot_nodes"]["peak_sources"] == {"workload history": 1, "replicas": 1}
    assert "peak_sources" not in out["other_nodes"]
    assert "PeakFit's figures {'workload history': 1, 'replicas': 1})" in pt.why_hot(out)


def test_digest_skips_attempts_that_placed_nothing():
    doc = record()
    doc["attempts"] = doc["attempts"][1:]
    assert decisions.digest(doc) is None


def test_digest_without_a_load_view_for_the_winner_gives_nothing():
    # The only feasible node is not scored: there is no view to compare with the truth.
    doc = record()
    doc["attempts"][0]["scores"]["top"].pop()
    assert decisions.digest(doc) is None


def test_the_three_gaps_add_up_to_the_peak_minus_what_was_expected():
    d = decisions.digest(record())
    assert d is not None
    truth, peak, used = 55.0, 120.0, 25.0
    out = decisions.attribute(
        [d], lambda n, t: truth, lambda n, t: peak, lambda p, t: used, {"n1": 30}
    )
    hot = out["hot_nodes"]
    assert hot["pods"] == 1 and out["other_nodes"]["pods"] == 0
    assert hot["view_gap"] == pytest.approx(15.0)  # 55 true against 40 seen
    assert hot["prediction_gap"] == pytest.approx(15.0)  # 25 used against 10 predicted
    assert hot["rise"] == pytest.approx(40.0)  # 120 - 55 - 25
    expected = d.seen_cpu + d.predicted_cpu
    assert hot["view_gap"] + hot["prediction_gap"] + hot["rise"] == pytest.approx(peak - expected)
    assert out["cause"] == "later rise"
    assert hot["sources"] == {"profile": 1}


def test_a_stale_view_is_named_the_cause():
    d = decisions.digest(record(usage=10.0))
    assert d is not None
    out = decisions.attribute(
        [d], lambda n, t: 80.0, lambda n, t: 105.0, lambda p, t: 12.0, {"n1": 5}
    )
    assert out["cause"] == "view"


def test_pods_on_nodes_that_stayed_cool_are_counted_apart():
    d = decisions.digest(record())
    assert d is not None
    out = decisions.attribute([d], lambda n, t: 40.0, lambda n, t: 60.0, lambda p, t: 10.0, {})
    assert out["hot_nodes"]["pods"] == 0 and out["other_nodes"]["pods"] == 1
    assert out["cause"] == "none"


def test_a_window_counts_only_the_pods_bound_by_the_decision():
    nodes = [pl.NodePlan(4, 10.0, 10.0), pl.NodePlan(4, 10.0, 10.0)]
    pods = [pl.PodPlan(1000, 1.0), pl.PodPlan(2000, 1.0)]
    config = replace(pl.simulator_config(1, nodes, pods), wobble=0.0, ramp_seconds=0.0)
    node = pl.node_name("ballast-lvrb", 0)
    start = 1_000_000.0
    placed = {
        pl.pod_name("ballast-lvrb", 0): (node, start + 10),
        pl.pod_name("ballast-lvrb", 1): (node, start + 50),
    }
    series = [[0.0, 0.0] for _ in range(100)]
    window = pt.Window("ballast-lvrb", nodes, pods, placed, config, start, series)
    # At 20 s only the first pod (1 of 4 CPUs) is there; the second's 2 CPUs are its own decision.
    assert window.peak_after(node, start + 20) == pytest.approx(10.0 + 25.0)
    assert window.peak_after(node, start + 60) == pytest.approx(10.0 + 75.0)
    assert window.truth_at(node, start + 20) == pytest.approx(35.0)
    assert window.use_after(pl.pod_name("ballast-lvrb", 1), start + 60) == pytest.approx(50.0)
