"""`ballast explain`'s terminal view, from records built the way the cycle builds them."""

from __future__ import annotations

import numpy as np

from ballast import explain
from scheduler.backend import explanation
from scheduler.framework import CycleState, PostFilterResult
from scheduler.framework.profile import ScoreParts
from tests.unit.plugin_helpers import make_node, make_pod, snapshot, stats


def attempt(doc: dict, **summary) -> dict:
    base = {"namespace": "ns", "pod": "web", "attempt": 2, "time": 0.0, "profile": "ballast"}
    return {**base, **summary, **explanation.expand(doc)}


def placed_record() -> dict:
    nodes = [make_node(n, cpu="4") for n in ("a", "b", "c")]
    snap = snapshot(nodes, {"a": {"cpu": stats(avg=30, std=2), "memory": stats(avg=50)}})
    parts = ScoreParts(names=["a", "b", "c"], totals=np.array([90, 70, 90]))
    parts.plugins = [
        ("TargetLoadPacking", 1, [90, 70, 90], [90, 70, 90]),
        ("NodeAffinity", 2, None, None),
    ]
    counts = explanation.node_counts(5, 5, 3, 3, 0, 5)
    reasons = {"d": ["Insufficient cpu"], "e": ["Insufficient cpu"]}
    state = CycleState()
    state["profile.filter_tally"] = {"NodeResourcesFit": {"Insufficient cpu": 2}}
    doc = explanation.placed(make_pod(), counts, reasons, state, snap, parts, "c", 150, 2)
    return attempt(doc, outcome="bound", node="c")


def test_table_of_a_placed_pod():
    text = explain.render_attempt(placed_record())
    lines = text.splitlines()
    assert lines[0].startswith("ns/web  attempt 2") and lines[0].endswith("outcome bound -> c")
    assert "nodes: 5 total, 5 considered, 3 feasible, 3 scored" in text
    assert "winner c: total 90, 0 ahead of a (90); 2 nodes tied, broken uniformly" in text
    header = next(line for line in lines if line.startswith("NODE"))
    assert header.split()[:4] == ["NODE", "TOTAL", "TargetLoadPacking", "x1"]
    rows = [line.split() for line in lines[lines.index(header) + 1 :][:2]]
    assert [r[:3] for r in rows] == [["a", "90", "90"], ["c", "90", "90"]]
    assert "cpu 30.0% ±2.0 fresh" in lines[lines.index(header) + 1]
    assert "(same for every node, skipped: NodeAffinity)" in text
    assert "      2  NodeResourcesFit: Insufficient cpu" in text


def test_table_of_a_preempting_pod():
    post = PostFilterResult(nominated_node="n1", victims=(make_pod("low", priority=1),))
    counts = explanation.node_counts(1, 1, 0, 0, 0, 1)
    doc = explanation.unschedulable(
        make_pod(), counts, {"n1": ["Insufficient cpu"]}, CycleState(), "0/1 nodes", post, 100
    )
    text = explain.render_attempt(attempt(doc, outcome="preempting", node="n1"))
    assert "FailedScheduling: 0/1 nodes" in text
    assert "preemption: nominated n1, evicting ns/low (priority 1)" in text


def test_list_and_nothing_recorded():
    items = [{"namespace": "ns", "pod": "a", "attempt": 1, "time": 0.0, "profile": "ballast",
              "outcome": "unschedulable", "node": ""}]  # fmt: skip
    text = explain.render_list({"items": items})
    assert text.splitlines()[0].split() == ["TIME", "POD", "ATTEMPT", "PROFILE", "OUTCOME", "NODE"]
    assert text.splitlines()[1].split()[1:] == ["ns/a", "1", "ballast", "unschedulable", "-"]
    assert explain.render_list({"items": []}) == "no decisions recorded (yet)"


def test_the_predicted_peak_and_its_parts():
    from scheduler.framework.podusage import Figures, PodFigures, PodUsage
    from scheduler.plugins.peak_fit import Args, Plugin
    from tests.unit.plugin_helpers import container

    nodes = [make_node(n, cpu="2") for n in ("a", "b")]
    nodes[0].add_pod(make_pod("steady", [container("500m")]))
    nodes[1].add_pod(make_pod("bursty", [container("500m")]))
    snap = snapshot(nodes)
    mib = 2**20
    memory = Figures(100 * mib, 0, 100 * mib, 100 * mib, 100 * mib, 100 * mib)
    snap.pod_usage = PodUsage(
        {
            ("ns", "steady"): PodFigures(20, None, Figures(800, 10, 850, 860, 870, 880), memory),
            ("ns", "bursty"): PodFigures(
                20, None, Figures(300, 400, 900, 1000, 1100, 1200), memory
            ),
        }
    )
    state = CycleState()
    pod = make_pod("web", [container("100m", "64Mi")])
    scores = Plugin(Args(n_sigma=3.0, percentile="p95")).score_all(state, pod, nodes, snap)
    parts = ScoreParts(names=["a", "b"], totals=np.array(scores))
    parts.plugins = [("PeakFit", 1, scores, scores)]
    counts = explanation.node_counts(2, 2, 2, 2, 0, 2)
    doc = explanation.placed(pod, counts, {}, state, snap, parts, "a", 85, 2)
    record = attempt(doc, outcome="bound", node="a")
    by_node = {row["node"]: row["peak"] for row in record["scores"]["top"]}
    # a: RC-like 860 + 85 = 945 over N-sigma 885 + 3 x 10; b: N-sigma 385 + 3 x 400 = 1585
    # over RC-like 1000 + 85
    assert by_node["a"]["cpu"]["won"] == "rc-like"
    assert by_node["b"]["cpu"]["won"] == "n-sigma"
    assert by_node["b"]["cpu"]["peak"] == round(300 + 85 + 3 * 400, 1)
    assert by_node["a"]["cpu"]["rcLike"] == 860 + 85
    assert by_node["a"]["cpu"]["podShare"] == 85
    assert by_node["a"]["podsMeasured"] == 1 and by_node["a"]["from"] == "pods"
    text = explain.render_attempt(record)
    assert "predicted peak with the pod (PeakFit; the pod from estimate (requests))" in text
    assert "b cpu: peak 1585m of 2000m (79%) = N-sigma 1585m: mean 385m + 1200m" in text
    assert "the pod adds 85m; pods: 1 measured, 0 estimated" in text
    assert "requests with the pod" not in text  # requestsTerm off
    # with requestsTerm, the requests the score weighs beside the peak: 500m + 100m of 2000m
    state = CycleState()
    args = Args(n_sigma=3.0, percentile="p95", requests_term=True)
    scores = Plugin(args).score_all(state, pod, nodes, snap)
    parts.plugins = [("PeakFit", 1, scores, scores)]
    doc = explanation.placed(pod, counts, {}, state, snap, parts, "a", 85, 2)
    text = explain.render_attempt(attempt(doc, outcome="bound", node="a"))
    assert "the pod adds 85m; requests with the pod 600m (30%); pods: 1 measured" in text
