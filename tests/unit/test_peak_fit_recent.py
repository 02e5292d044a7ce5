"""PeakFit's `lookBack: recent` and `requestsTerm` (issue 45's online study,
bench/placement/online.py): each pod at its workload's most of the last few buckets, the
watcher's `recentMax`; the requests' share beside the predicted peak, scores spread over the
nodes' range."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.backend.pods_client import parse_pods
from scheduler.framework import CycleState
from scheduler.framework.fields import Fields
from scheduler.framework.podusage import Figures, PodFigures, PodUsage, WorkloadPeak
from scheduler.plugins import peak_fit
from scheduler.plugins.peak_fit import Args, Plugin, spread_scores
from tests.unit.plugin_helpers import make_node, snapshot, stats
from tests.unit.test_peak_fit import MI, replica
from tests.unit.test_peak_fit_history import _doc
from watcher.workloadhistory import RECENT_BUCKETS, WorkloadHistory

WEB = "ns/Deployment/web"
# web: 900m at its worst over the day, 300m over its last buckets
PEAK = WorkloadPeak(24, (900.0, 300.0 * MI), (400.0, 200.0 * MI), (300.0, 100.0 * MI))
RECENT = Args(look_back=peak_fit.RECENT, node_peak=False)


def usage(by_pod: dict | None = None) -> PodUsage:
    return PodUsage(by_pod or {}, history={WEB: PEAK}, history_buckets=24)


def test_recent_counts_a_measured_pod_at_its_workloads_last_buckets():
    node = make_node("n", cpu="4", memory="4Gi")
    node.add_pod(replica("web-a"))
    snap = snapshot([node])
    own = Figures(250.0, 10.0, 260.0, 270.0, 280.0, 290.0)  # young: held 2 of 24
    snap.pod_usage = usage({("ns", "web-a"): PodFigures(20, WEB, own, own, held=2)})
    for args, rc in ((Args(node_peak=False), 900.0), (RECENT, 300.0)):
        state = CycleState()
        Plugin(args).score_all(state, replica("api-new", app="api"), [node], snap)
        # day: raised to the day's 900m; recent: its workload's last buckets, 300m
        assert peak_fit.parts_of(state, "n")[3][1] == pytest.approx(rc + 170.0)


def test_recent_predicts_a_new_pod_and_an_unmeasured_one_from_the_last_buckets():
    node = make_node("n", cpu="4", memory="4Gi")
    node.add_pod(replica("web-a"))  # bound a moment ago: no figures of its own
    snap = snapshot([node])
    snap.pod_usage = usage()
    state = CycleState()
    Plugin(RECENT).score_all(state, replica("web-new"), [node], snap)
    assert state[peak_fit.PARTS][""] == f"workload history's last buckets of {WEB}"
    mode, measured, estimated, cpu, memory, from_history, _ = peak_fit.parts_of(state, "n")
    assert (measured, estimated, from_history) == (0, 0, 1)
    assert cpu[1] == pytest.approx(600.0)  # RC-like: 300m each, not the day's 900m
    assert cpu[3] == pytest.approx(600.0)  # means: the bucket mean, never above the figure
    assert memory[1] == pytest.approx(200.0 * MI)
    # a watcher that does not serve recentMax: the day, as before
    snap.pod_usage = PodUsage({}, history={WEB: WorkloadPeak(24, PEAK.max, PEAK.bucket_mean)},
                              history_buckets=24)  # fmt: skip
    state = CycleState()
    Plugin(RECENT).score_all(state, replica("web-new"), [node], snap)
    assert peak_fit.parts_of(state, "n")[3][1] == pytest.approx(1800.0)


def test_recent_does_not_take_a_pod_just_bound_out_of_what_the_window_saw():
    # the window saw 1000m before web-a was bound (its samples do not hold it yet): web-a adds
    # its 300m to that, it does not explain 300m of it away
    node = make_node("n", cpu="4", memory="4Gi")
    node.add_pod(replica("web-a"))
    snap = snapshot([node], {"n": {"cpu": stats(25, 0)}})
    snap.pod_usage = usage()
    state = CycleState()
    Plugin(RECENT).score_all(state, replica("api-new", app="api"), [node], snap)
    assert peak_fit.parts_of(state, "n")[3][1] == pytest.approx(1000.0 + 300.0 + 170.0)


def test_the_requests_term_keeps_pods_off_a_cool_node_whose_requests_are_full():
    # "full": idle, but its pods request 3.5 of its 4 cores; "busy": 2 cores used, nothing
    # requested. By the peak alone the pod goes to the idle node; with the requests' share
    # beside it, to the busy one (50 % against 92 %)
    full, busy = make_node("full", cpu="4", memory="8Gi"), make_node("busy", cpu="4", memory="8Gi")
    for k in range(7):
        full.add_pod(replica(f"idle-{k}", app="idle", cpu="500m"))
    snap = snapshot([full, busy], {"busy": {"cpu": stats(50, 0)}, "full": {"cpu": stats(0, 0)}})
    idle = Figures(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    snap.pod_usage = PodUsage(
        {("ns", f"idle-{k}"): PodFigures(20, "ns/Deployment/idle", idle, idle) for k in range(7)}
    )
    pod = replica("web-new", cpu="200m")
    alone = Plugin(Args(node_peak=False)).score_all(CycleState(), pod, [full, busy], snap)
    assert alone[0] > alone[1]
    both = Plugin(Args(node_peak=False, requests_term=True))
    assert both.score_all(CycleState(), pod, [full, busy], snap) == [0, 100]


def test_spread_scores_use_the_whole_range():
    assert spread_scores(np.array([0.5, 0.75, 1.0])).tolist() == [100.0, 50.0, 0.0]
    assert spread_scores(np.array([0.6, 0.6])).tolist() == [100.0, 100.0]
    assert spread_scores(np.array([0.6, np.inf])).tolist() == [100.0, 0.0]


def test_args_parse_and_refuse_an_unknown_look_back():
    args = peak_fit.parse_args(Fields({"lookBack": "recent", "requestsTerm": True}, "a"))
    assert (args.look_back, args.requests_term) == ("recent", True)
    assert (Args().look_back, Args().requests_term) == ("day", False)
    with pytest.raises(ValueError):
        peak_fit.parse_args(Fields({"lookBack": "week"}, "a"))


def test_the_client_parses_recent_max_and_does_without_it():
    section = {
        "peakBucket": 3600,
        "buckets": 24,
        "recentBuckets": 3,
        "workloads": [WEB],
        "held": [24],
        "cpu": {"max": [900], "bucketMean": [400], "recentMax": [300]},
        "memory": {"max": [300 * MI], "bucketMean": [200 * MI], "recentMax": [100 * MI]},
    }
    assert parse_pods(_doc(section)).history == {WEB: PEAK}
    for resource in ("cpu", "memory"):
        older = {**section, resource: {k: v for k, v in section[resource].items()
                                       if k != "recentMax"}}  # fmt: skip
        assert parse_pods(_doc(older)).history[WEB].recent is None


def test_the_watcher_serves_the_most_of_the_last_buckets():
    bucket, t0 = 60.0, 1000 * 60.0
    history = WorkloadHistory(bucket)
    keys = {("ns", "web-1"): WEB}
    for k, cpu in enumerate([900.0, 100.0, 200.0, 300.0]):  # four buckets, the last current
        history.add(t0 + k * bucket + 1, {("ns", "web-1"): (cpu, 5e6)}, keys)
    doc = history.doc(t0 + 3 * bucket + 2)
    assert RECENT_BUCKETS == 3 and doc["recentBuckets"] == 3
    assert doc["cpu"]["max"] == [900] and doc["cpu"]["recentMax"] == [300]  # not the 900m
    # two buckets later, only the last one held is within reach
    assert history.doc(t0 + 5 * bucket + 1)["cpu"]["recentMax"] == [300]
    assert history.doc(t0 + 7 * bucket + 1)["cpu"]["recentMax"] == [0]


def test_the_decision_record_keeps_the_requests_and_the_benchmark_groups_the_source():
    # ballast-peak-recent's records (docs/explain.md): the requests the score weighed beside the
    # peak, and a source bench.placement.decisions counts by kind, not one key per workload
    from bench.placement import decisions
    from scheduler.backend import explanation

    node = make_node("n", cpu="4", memory="4Gi")
    node.add_pod(replica("web-a"))
    snap = snapshot([node])
    snap.pod_usage = usage()
    pod, state = replica("web-new"), CycleState()
    args = Args(look_back=peak_fit.RECENT, node_peak=False, requests_term=True)
    Plugin(args).score_all(state, pod, [node], snap)
    record = explanation._expand_peak(peak_fit.parts_of(state, "n"))
    asked = node.requested.get("cpu", 0) + pod.requests.get("cpu", 0)
    assert asked > 0 and record["cpu"]["requested"] == pytest.approx(asked, abs=0.05)
    assert decisions.peak_kind(state[peak_fit.PARTS][""]) == "workload history's last buckets"
    # without requestsTerm the record says 0 (explain then leaves the requests out)
    state = CycleState()
    Plugin(RECENT).score_all(state, pod, [node], snap)
    assert explanation._expand_peak(peak_fit.parts_of(state, "n"))["cpu"]["requested"] == 0
