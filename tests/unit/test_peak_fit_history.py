"""PeakFit with the watcher's workload history (scheduler/plugins/peak_fit.py,
backend/pods_client.py): a pod without figures of its own whose workload has no measured replica
takes the workload's day max, the most one replica used, instead of the estimator's figure."""

from __future__ import annotations

import pytest

from ballast.explain import _peak_lines
from scheduler.backend import explanation
from scheduler.backend.pods_client import parse_pods
from scheduler.framework import CycleState
from scheduler.framework.podusage import Figures, PodFigures, PodUsage, WorkloadPeak
from scheduler.plugins import peak_fit
from scheduler.plugins.peak_fit import Plugin
from tests.unit.plugin_helpers import make_node, snapshot, stats
from tests.unit.test_peak_fit import MI, replica

WEB = "ns/Deployment/web"
# web's day: one replica used 900m at its worst, 400m at a typical bucket's peak
DAY = WorkloadPeak(24, (900.0, 300.0 * MI), (400.0, 200.0 * MI))


def usage(by_pod: dict | None = None, history: dict | None = None) -> PodUsage:
    return PodUsage(by_pod or {}, history=history if history is not None else {WEB: DAY},
                    history_buckets=24)  # fmt: skip


def test_a_new_pod_takes_its_workloads_day_max_when_no_replica_is_measured():
    node = make_node("n", cpu="4", memory="4Gi")
    snap = snapshot([node])
    snap.pod_usage = usage()
    state = CycleState()
    Plugin().score_all(state, replica("web-new"), [node], snap)
    assert state[peak_fit.PARTS][""] == f"workload history of {WEB} (24 of 24 buckets)"
    cpu, memory = peak_fit.parts_of(state, "n")[3:5]
    peak, rc, ns, mean, sigma, share, capacity, _, _ = cpu
    assert (rc, mean, sigma, share) == (900.0, 400.0, 0.0, 900.0)  # not 170m from its request
    assert memory[1] == 300.0 * MI and memory[3] == 200.0 * MI
    # another workload's history says nothing of this one: the estimator (200m x 0.85)
    snap.pod_usage = usage(history={"ns/Deployment/api": DAY})
    state = CycleState()
    Plugin().score_all(state, replica("web-new"), [node], snap)
    assert state[peak_fit.PARTS][""].startswith("estimate")
    assert peak_fit.parts_of(state, "n")[3][5] == pytest.approx(170.0)


def test_measured_replicas_come_before_the_history():
    node = make_node("n", cpu="4")
    node.add_pod(replica("web-a"))
    snap = snapshot([node])
    measured = Figures(100.0, 10.0, 150.0, 160.0, 170.0, 180.0)
    snap.pod_usage = usage({("ns", "web-a"): PodFigures(20, WEB, measured, measured)})
    state = CycleState()
    Plugin().score_all(state, replica("web-new"), [node], snap)
    assert state[peak_fit.PARTS][""] == f"replicas of {WEB} (1 measured)"
    mode, measured_pods, estimated, cpu, _, from_history, _ = peak_fit.parts_of(state, "n")
    assert (measured_pods, estimated, from_history) == (1, 0, 0)
    assert cpu[5] == 180.0  # the replicas' day max


def test_a_pod_bound_a_moment_ago_counts_its_workloads_day_max_on_the_node():
    node = make_node("n", cpu="4")
    node.add_pod(replica("web-a"))  # bound a moment ago: not in the statistics yet
    node.add_pod(replica("db-a", app="db"))  # neither measured nor with a history: estimated
    # the node's 72-hour max: 20 % of 4 cores, 800m (what it ran before these two)
    snap = snapshot([node], {"n": {"cpu": stats(10, 1, peak=20)}})
    snap.pod_usage = usage()
    state = CycleState()
    Plugin().score_all(state, replica("api-new", app="api"), [node], snap)
    mode, measured, estimated, cpu, _, from_history, _ = peak_fit.parts_of(state, "n")
    # per pod, not the node's window: a history is a figure of the pod's own
    assert (mode, measured, estimated, from_history) == (peak_fit.PODS, 0, 1, 1)
    peak, rc, ns, mean, sigma, share, capacity, node_term, _ = cpu
    assert rc == pytest.approx(900.0 + 170.0 + 170.0)  # web's day max, db's and api's estimates
    assert mean == pytest.approx(400.0 + 170.0 + 170.0)
    assert node_term == pytest.approx(800.0 + 900.0 + 170.0 + 170.0)  # what it cannot have seen
    record = explanation._expand_peak(peak_fit.parts_of(state, "n"))
    assert (record["podsMeasured"], record["podsFromHistory"], record["podsEstimated"]) == (0, 1, 1)
    lines = _peak_lines(
        {"peakPodFrom": "estimate (requests)", "top": [{"node": "n", "peak": record}]}
    )
    assert "pods: 0 measured, 1 from workload history, 1 estimated" in "\n".join(lines)


def _doc(history: dict | None) -> dict:
    column = {f: [1.0] for f in ("mean", "std", "p90", "p95", "p99", "max")}
    resource = {"window": column, "history": {**column, "weight": [0.0]}}
    doc = {"pods": ["ns/a"], "samples": [20], "cpu": resource, "memory": resource}
    return {**doc, "workloadHistory": history} if history is not None else doc


def test_the_client_parses_the_history_and_a_bad_one_leaves_the_pods_alone():
    section = {
        "peakBucket": 3600,
        "buckets": 24,
        "workloads": [WEB, "ns/Job/empty", "ns/Deployment/bad"],
        "held": [24, 0, 3],
        "cpu": {"max": [900, 0, float("nan")], "bucketMean": [400, 0, 1]},
        "memory": {"max": [300 * MI, 0, 1], "bucketMean": [200 * MI, 0, 1]},
    }
    parsed = parse_pods(_doc(section))
    assert parsed.history == {WEB: DAY} and parsed.history_buckets == 24
    assert list(parsed.by_pod) == [("ns", "a")]
    for broken in ({**section, "held": [1]}, {**section, "cpu": None}, "no", {}):
        parsed = parse_pods(_doc(broken))
        assert parsed.history == {} and list(parsed.by_pod) == [("ns", "a")]
    assert parse_pods(_doc(None)).history == {}
