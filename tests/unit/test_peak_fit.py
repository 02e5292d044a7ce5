"""PeakFit's predictor and plugin (scheduler/plugins/peak_fit.py): RC-like, N-sigma with
correlated replicas, their max; pods without history; the node-level fallback; the filter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler.backend import explanation
from scheduler.backend.pods_client import parse_pods
from scheduler.framework import CycleState
from scheduler.framework.fields import Fields
from scheduler.framework.podusage import Figures, PodFigures, PodUsage
from scheduler.framework.resources import pod_info
from scheduler.plugins import peak_fit
from scheduler.plugins.peak_fit import Args, Plugin, node_peak, predict
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats

MI = 1024**2


def flat(mean: float, std: float = 0.0, pct: float | None = None) -> Figures:
    p = mean if pct is None else pct
    return Figures(mean, std, p, p, p, p)


def figures(cpu: Figures, workload: str | None = None, samples: int = 20) -> PodFigures:
    return PodFigures(samples, workload, cpu, flat(100 * MI))


def replica(name: str, app: str = "web", cpu: str = "200m") -> object:
    return pod_info(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"u-{name}",
                "labels": {"pod-template-hash": "h1"},
                "ownerReferences": [
                    {"kind": "ReplicaSet", "name": f"{app}-h1", "controller": True, "uid": "r"}
                ],
            },
            "spec": {"containers": [container(cpu, "128Mi")]},
        }
    )


# ---- the pure predictor -----------------------------------------------------------------------
def test_rc_like_sums_percentiles_and_n_sigma_adds_independent_deviations():
    pods = [("a", 100.0, 30.0, 160.0), ("b", 200.0, 40.0, 280.0)]
    peak, rc, ns = node_peak(pods, n_sigma=2.0)
    assert rc == pytest.approx(440.0)
    assert ns == pytest.approx(300.0 + 2.0 * 50.0)  # sqrt(30^2 + 40^2) = 50
    assert peak == pytest.approx(max(rc, ns)) == pytest.approx(440.0)
    # a larger N makes N-sigma win
    peak, rc, ns = node_peak(pods, n_sigma=4.0)
    assert ns == pytest.approx(500.0) and peak == pytest.approx(500.0)


def test_replicas_of_one_workload_add_their_deviations_linearly():
    together = [("web", 100.0, 50.0, 150.0), ("web", 100.0, 50.0, 150.0)]
    apart = [("web", 100.0, 50.0, 150.0), ("api", 100.0, 50.0, 150.0)]
    _, _, ns_together = node_peak(together, n_sigma=3.0)
    _, _, ns_apart = node_peak(apart, n_sigma=3.0)
    assert ns_together == pytest.approx(200.0 + 3.0 * 100.0)
    assert ns_apart == pytest.approx(200.0 + 3.0 * math.sqrt(2) * 50.0)
    assert ns_together > ns_apart


def test_a_new_pod_joins_its_workloads_group_on_the_node():
    # one node holds a web replica (std 50), the other an api pod (std 50); the new pod is web
    mean, rc, ss = np.array([100.0, 100.0]), np.array([150.0, 150.0]), np.array([2500.0, 2500.0])
    group_std = np.array([50.0, 0.0])
    peak, _, ns, sigma = predict(mean, rc, ss, group_std, 3.0, 100.0, 50.0, 150.0)
    assert sigma[0] == pytest.approx(3.0 * 100.0)
    assert sigma[1] == pytest.approx(3.0 * math.sqrt(5000.0))
    assert peak[0] > peak[1]


# ---- the plugin -------------------------------------------------------------------------------
def test_a_bursty_node_with_the_lower_mean_loses_to_a_steady_node():
    steady, bursty = make_node("steady", cpu="4"), make_node("bursty", cpu="4")
    steady.add_pod(make_pod("s1", [container("500m")]))
    bursty.add_pod(make_pod("b1", [container("500m")]))
    usage = PodUsage(
        {
            ("ns", "s1"): figures(flat(1200.0, 50.0, 1300.0)),
            ("ns", "b1"): figures(Figures(600.0, 900.0, 2600.0, 2900.0, 3100.0, 3200.0)),
        }
    )
    snap = snapshot(
        [steady, bursty], {"steady": {"cpu": stats(30, 1)}, "bursty": {"cpu": stats(15, 22)}}
    )
    snap.pod_usage = usage
    plugin = Plugin(Args(n_sigma=2.0))
    pod = make_pod("new", [container("100m")])
    state = CycleState()
    scores = plugin.score_all(state, pod, [steady, bursty], snap)
    assert scores[0] > scores[1]
    cpu_steady = peak_fit.parts_of(state, "steady")[3]
    cpu_bursty = peak_fit.parts_of(state, "bursty")[3]
    assert cpu_bursty[0] > cpu_steady[0]  # predicted peaks
    assert cpu_bursty[1] >= cpu_bursty[2]  # RC-like (2900 + the pod) won there


def test_pods_without_history_count_by_the_estimator():
    node = make_node("n", cpu="4")
    node.add_pod(make_pod("old", [container("1000m")]))  # measured
    node.add_pod(make_pod("young", [container("400m")]))  # bound a moment ago: 3 samples
    node.add_pod(make_pod("unknown", [container("200m")]))  # not in the statistics at all
    snap = snapshot([node])
    snap.pod_usage = PodUsage(
        {
            ("ns", "old"): figures(flat(500.0, 100.0, 700.0)),
            ("ns", "young"): figures(flat(50.0), samples=3),
        }
    )
    plugin = Plugin(Args(n_sigma=1.0, min_samples=8))
    new = make_pod("new", [container("100m")])
    state = CycleState()
    plugin.score_all(state, new, [node], snap)
    mode, measured, estimated, cpu, *_ = peak_fit.parts_of(state, "n")
    assert (mode, measured, estimated) == (peak_fit.PODS, 1, 2)
    # requests x 0.85 (Koordinator's scaling) for young (340m), unknown (170m) and new (85m)
    peak, rc, ns, mean, sigma, share, capacity, node_peak, _ = cpu
    assert rc == pytest.approx(700.0 + 340.0 + 170.0 + 85.0)
    assert mean == pytest.approx(500.0 + 340.0 + 170.0 + 85.0)
    assert sigma == pytest.approx(100.0)
    assert share == pytest.approx(85.0)
    assert capacity == 4000


def test_a_full_window_counts_when_the_watchers_window_holds_fewer_than_min_samples():
    # The trace replayed at 60x: a 5 s window polled every 1 s holds 5 samples, never 8.
    node = make_node("n", cpu="4")
    node.add_pod(make_pod("p", [container("1000m")]))
    snap = snapshot([node])
    usage = {("ns", "p"): figures(flat(500.0, 100.0, 700.0), samples=5)}
    plugin = Plugin(Args(min_samples=8))
    for window_samples, measured in ((20, 0), (0, 0), (5, 1)):
        snap.pod_usage = PodUsage(usage, window_samples=window_samples)
        state = CycleState()
        plugin.score_all(state, make_pod("new", [container("100m")]), [node], snap)
        assert peak_fit.parts_of(state, "n")[1] == measured, window_samples
    doc = _doc()
    assert parse_pods(doc).window_samples == 0
    assert parse_pods({**doc, "windowSamples": 5}).window_samples == 5
    assert parse_pods({**doc, "windowSamples": "5"}).window_samples == 0


def test_the_new_pod_takes_its_workloads_measured_replicas_figures():
    one, two = make_node("one", cpu="4"), make_node("two", cpu="4")
    one.add_pod(replica("web-a"))
    two.add_pod(replica("api-a", app="api"))
    bursty = Figures(300.0, 200.0, 600.0, 700.0, 800.0, 900.0)
    snap = snapshot([one, two])
    snap.pod_usage = PodUsage(
        {
            ("ns", "web-a"): figures(bursty, "ns/Deployment/web"),
            ("ns", "api-a"): figures(bursty, "ns/Deployment/api"),
        }
    )
    plugin = Plugin(Args(n_sigma=3.0, percentile="p95"))
    state = CycleState()
    scores = plugin.score_all(state, replica("web-new"), [one, two], snap)
    assert state[peak_fit.PARTS][""] == "replicas of ns/Deployment/web (1 measured)"
    cpu_one, cpu_two = peak_fit.parts_of(state, "one")[3], peak_fit.parts_of(state, "two")[3]
    # beside its own replica the deviations add (3 x 400); beside api they do not (3 x 283)
    assert cpu_one[4] == pytest.approx(1200.0)
    assert cpu_two[4] == pytest.approx(3.0 * math.sqrt(2) * 200.0)
    assert cpu_one[2] > cpu_two[2]
    assert scores[0] < scores[1]


def test_without_pod_statistics_the_node_window_stands_in():
    node = make_node("n", cpu="2")
    node.add_pod(make_pod("p", [container("500m")]))
    snap = snapshot([node], {"n": {"cpu": stats(40, 10, p95=70)}}, recent={"n": 100})
    plugin = Plugin(Args(n_sigma=2.0))
    state = CycleState()
    plugin.score_all(state, make_pod("new", [container("100m")]), [node], snap)
    mode, measured, estimated, cpu, *_ = peak_fit.parts_of(state, "n")
    assert mode == peak_fit.NODE
    peak, rc, ns, mean, sigma, share, capacity, node_peak, _ = cpu
    assert rc == pytest.approx(1400.0 + 100.0 + 85.0)  # p95 70 % of 2 cores, recent, the pod
    assert ns == pytest.approx(800.0 + 100.0 + 85.0 + 2.0 * 200.0)
    assert peak == pytest.approx(rc)


def test_what_no_pod_explains_counts_on_the_node():
    node = make_node("n", cpu="2")
    node.add_pod(make_pod("p", [container("500m")]))
    snap = snapshot([node], {"n": {"cpu": stats(50, 5)}})  # 1000m seen, the pod explains 400
    snap.pod_usage = PodUsage({("ns", "p"): figures(flat(400.0, 0.0, 450.0))})
    state = CycleState()
    Plugin(Args(n_sigma=0.0)).score_all(state, make_pod("new", [container("100m")]), [node], snap)
    _, _, _, cpu, *_ = peak_fit.parts_of(state, "n")
    assert cpu[1] == pytest.approx(450.0 + 600.0 + 85.0)


def test_the_filter_spills_over_unless_strict():
    hot, cool = make_node("hot", cpu="2"), make_node("cool", cpu="2")
    hot.add_pod(make_pod("h", [container("100m")]))
    cool.add_pod(make_pod("c", [container("100m")]))
    snap = snapshot([hot, cool])
    snap.pod_usage = PodUsage(
        {("ns", "h"): figures(flat(1500.0, 0.0, 1800.0)), ("ns", "c"): figures(flat(200.0))}
    )
    pod = make_pod("new", [container("100m")])
    soft = Plugin(Args(peak_limit_percent=80.0))
    assert list(soft.filter_all(CycleState(), pod, [hot, cool], snap)) == [0]
    # alone (every node over the limit) the hot node is let through: spill over, not pending
    assert soft.filter_all(CycleState(), pod, [hot], snap) == {}
    strict = Plugin(Args(peak_limit_percent=80.0, strict=True))
    assert list(strict.filter_all(CycleState(), pod, [hot], snap)) == [0]
    assert Plugin().filter_all(CycleState(), pod, [hot, cool], snap) == {}  # the filter off


def test_the_sums_follow_the_nodes_pods():
    node = make_node("n", cpu="4")
    snap = snapshot([node])
    snap.pod_usage = PodUsage({("ns", "a"): figures(flat(300.0))})
    plugin = Plugin()
    pod = make_pod("new", [container("100m")])
    before = plugin.score_all(CycleState(), pod, [node], snap)
    node.add_pod(make_pod("a", [container("100m")]))
    after = plugin.score_all(CycleState(), pod, [node], snap)
    assert after[0] < before[0]


def test_args_are_typed_and_checked():
    args = peak_fit.parse_args(
        Fields({"nSigma": 5, "percentile": "p99", "peakLimitPercent": 90, "strict": True}, "a")
    )
    assert (args.n_sigma, args.percentile, args.peak_limit_percent, args.strict) == (
        5.0,
        "p99",
        90.0,
        True,
    )
    with pytest.raises(Exception, match="percentile"):
        peak_fit.parse_args(Fields({"percentile": "p42"}, "a"))


# ---- the client's parsing ---------------------------------------------------------------------
def _doc(cpu_mean=(100.0, 200.0)):
    def resource(mean):
        n = len(mean)
        return {
            "window": {
                "mean": list(mean),
                "std": [10.0] * n,
                "p90": [120.0] * n,
                "p95": [130.0] * n,
                "p99": [140.0] * n,
                "max": [150.0] * n,
            },
            "history": {
                "weight": [30.0, 0.0],
                "mean": [110.0] * n,
                "std": [5.0] * n,
                "p90": [125.0] * n,
                "p95": [300.0] * n,
                "p99": [310.0] * n,
                "max": [400.0] * n,
            },
        }

    return {
        "built": 5.0,
        "pods": ["ns/a", "ns/b"],
        "workloads": ["ns/Deployment/web", None],
        "samples": [20, 20],
        "cpu": resource(cpu_mean),
        "memory": resource((1.0, 2.0)),
    }


def test_parse_takes_the_larger_of_window_and_history():
    usage = parse_pods(_doc())
    a, b = usage.by_pod[("ns", "a")], usage.by_pod[("ns", "b")]
    assert a.cpu == Figures(110.0, 10.0, 125.0, 300.0, 310.0, 400.0)
    assert a.workload == "ns/Deployment/web" and b.workload is None
    assert b.cpu.p95 == 130.0  # a history of weight 0 says nothing


def test_parse_leaves_a_bad_pod_out_and_refuses_a_bad_column():
    usage = parse_pods(_doc(cpu_mean=(float("nan"), 200.0)))
    assert list(usage.by_pod) == [("ns", "b")]
    usage = parse_pods(_doc(cpu_mean=(-1.0, 200.0)))
    assert list(usage.by_pod) == [("ns", "b")]
    with pytest.raises(ValueError, match="cpu.window.mean"):
        parse_pods(_doc(cpu_mean=(1.0,)))
    with pytest.raises(ValueError):
        parse_pods({"pods": {}})


def test_a_new_document_is_summed_again():
    node = make_node("n", cpu="4")
    node.add_pod(make_pod("a", [container("100m")]))
    snap = snapshot([node])
    plugin = Plugin()
    pod = make_pod("new", [container("100m")])
    snap.pod_usage = PodUsage({("ns", "a"): figures(flat(300.0))})
    calm = plugin.score_all(CycleState(), pod, [node], snap)
    snap.pod_usage = PodUsage({("ns", "a"): figures(flat(3000.0))})
    busy = plugin.score_all(CycleState(), pod, [node], snap)
    assert busy[0] < calm[0]


def test_the_nodes_own_72_hour_max_counts_with_what_it_cannot_have_seen():
    calm, was_busy = make_node("calm", cpu="4"), make_node("was-busy", cpu="4")
    for node in (calm, was_busy):
        node.add_pod(make_pod(f"{node.name}-a", [container("100m")]))
    was_busy.add_pod(make_pod("young", [container("400m")]))  # no history: 340m estimated
    snap = snapshot(
        [calm, was_busy],
        {
            "calm": {"cpu": stats(20, 1, peak=25)},
            "was-busy": {"cpu": stats(20, 1, peak=70)},  # 2800m at its worst in 3 days
        },
    )
    snap.pod_usage = PodUsage(
        {(("ns", f"{n}-a")): figures(flat(800.0, 10.0, 900.0)) for n in ("calm", "was-busy")}
    )
    pod = make_pod("new", [container("100m")])
    state = CycleState()
    scores = Plugin().score_all(state, pod, [calm, was_busy], snap)
    assert scores[0] > scores[1]
    cpu = peak_fit.parts_of(state, "was-busy")[3]
    assert cpu[7] == pytest.approx(2800.0 + 340.0 + 85.0)  # the node term, the pod included
    assert cpu[0] == cpu[7]
    record = explanation._expand_peak(peak_fit.parts_of(state, "was-busy"))
    assert record["cpu"]["won"] == peak_fit.NODE_PEAK
    # turned off, only the pods' own figures count: both nodes alike but for the young pod
    off = Plugin(Args(node_peak=False)).score_all(CycleState(), pod, [calm, was_busy], snap)
    assert off[0] - off[1] < scores[0] - scores[1]
