"""PeakFit and a pod younger than its look-back (scheduler/plugins/peak_fit.py): with
`percentile: max`, a measured pod whose maxima fill fewer of the day's buckets than the look-back
is judged by the larger of its own max and its workload's day max (the watcher's workload
history), and so is the new pod that borrows such replicas' figures; a pod old enough, and the
other percentiles, keep the pod's own figures."""

from __future__ import annotations

import pytest

from ballast.explain import _peak_lines
from bench.placement.decisions import peak_kind
from scheduler.backend import explanation
from scheduler.backend.pods_client import parse_pods
from scheduler.framework import CycleState
from scheduler.framework.podusage import Figures, PodFigures
from scheduler.plugins import peak_fit
from scheduler.plugins.peak_fit import Args, Plugin
from tests.unit.plugin_helpers import make_node, snapshot, stats
from tests.unit.test_peak_fit import MI, replica
from tests.unit.test_peak_fit_history import WEB, _doc, usage

# web's day (test_peak_fit_history.DAY): one replica used at most 900m and 300Mi
CPU = Figures(100.0, 10.0, 200.0, 250.0, 280.0, 300.0)  # a few hours of a replica: max 300m
MEMORY = Figures(100.0 * MI, 0.0, 120.0 * MI, 130.0 * MI, 140.0 * MI, 150.0 * MI)


def measured(held: int) -> PodFigures:
    """A web replica with 20 window samples whose maxima fill `held` of the day's 24 buckets."""
    return PodFigures(20, WEB, CPU, MEMORY, held)


def test_a_young_pod_is_raised_to_its_workloads_day_max():
    node = make_node("n", cpu="4", memory="4Gi")
    node.add_pod(replica("web-a"))
    # the node's 72-hour max: 20 % of 4 cores (what it ran while web-a lived, and before)
    snap = snapshot([node], {"n": {"cpu": stats(10, 1, peak=20)}})
    snap.pod_usage = usage({("ns", "web-a"): measured(held=3)})
    state = CycleState()
    Plugin().score_all(state, replica("api-new", app="api"), [node], snap)
    parts = peak_fit.parts_of(state, "n")
    peak, rc, ns, mean, sigma, share, capacity, node_term, _ = parts[3]
    # 3 hours of its own say 300m; its workload's day says one replica used 900m
    # (+ 300m the window saw beyond web-a's mean, + api's 170m estimate)
    assert rc == pytest.approx(900.0 + 300.0 + 170.0)
    assert mean == pytest.approx(100.0 + 300.0 + 170.0)  # its own mean stays
    # the node's max saw 3 hours of web-a, not its day: the 600m it did not see is added
    assert node_term == pytest.approx(800.0 + 600.0 + 170.0)
    assert parts[4][1] >= 300.0 * MI
    mode, pods, estimated, *_, from_history, raised = parts
    assert (mode, pods, estimated, from_history, raised) == (peak_fit.PODS, 1, 0, 0, 1)
    record = explanation._expand_peak(parts)
    assert record["podsRaised"] == 1
    lines = "\n".join(_peak_lines({"peakPodFrom": "x", "top": [{"node": "n", "peak": record}]}))
    assert "pods: 1 measured (1 raised to their workload history's day max), 0 estimated" in lines


def test_an_old_pod_keeps_its_own_max_beside_a_young_replica():
    node = make_node("n", cpu="4", memory="4Gi")
    for name in ("web-old", "web-young", "web-unsaid"):
        node.add_pod(replica(name))
    snap = snapshot([node])
    snap.pod_usage = usage(
        {
            ("ns", "web-old"): measured(held=24),  # a day old: its own max is its day's
            ("ns", "web-young"): measured(held=1),
            ("ns", "web-unsaid"): PodFigures(20, WEB, CPU, MEMORY),  # a watcher before `held`
        }
    )
    state = CycleState()
    Plugin().score_all(state, replica("api-new", app="api"), [node], snap)
    parts = peak_fit.parts_of(state, "n")
    assert parts[3][1] == pytest.approx(300.0 + 900.0 + 300.0 + 170.0)  # only the young one rises
    assert parts[-1] == 1


def test_a_new_pod_borrowing_young_replicas_is_raised_too():
    node = make_node("n", cpu="4", memory="4Gi")
    node.add_pod(replica("web-a"))
    node.add_pod(replica("web-b"))
    snap = snapshot([node])
    snap.pod_usage = usage({("ns", "web-a"): measured(held=2), ("ns", "web-b"): measured(held=24)})
    state = CycleState()
    Plugin().score_all(state, replica("web-new"), [node], snap)
    source = state[peak_fit.PARTS][""]
    assert source == f"replicas of {WEB} (2 measured, 1 raised to the workload history's day max)"
    assert peak_kind(source) == "replicas raised by workload history"
    cpu = peak_fit.parts_of(state, "n")[3]
    # one more replica does what they do: the young one at its workload's day, the old at its own
    assert cpu[5] == pytest.approx((900.0 + 300.0) / 2)
    # replicas all a day old: their own figures, as before
    snap.pod_usage = usage({("ns", "web-a"): measured(held=24), ("ns", "web-b"): measured(held=24)})
    state = CycleState()
    Plugin().score_all(state, replica("web-new"), [node], snap)
    assert state[peak_fit.PARTS][""] == f"replicas of {WEB} (2 measured)"
    assert peak_fit.parts_of(state, "n")[3][5] == pytest.approx(300.0)


def test_percentile_p95_keeps_the_young_pods_own_figure():
    node = make_node("n", cpu="4", memory="4Gi")
    node.add_pod(replica("web-a"))
    snap = snapshot([node])
    snap.pod_usage = usage({("ns", "web-a"): measured(held=2)})
    # the workload's history keeps maxima only: a day max would overstate a p95
    p95 = Plugin(Args(percentile="p95"))
    state = CycleState()
    p95.score_all(state, replica("web-new"), [node], snap)
    assert state[peak_fit.PARTS][""] == f"replicas of {WEB} (1 measured)"
    # web-a's own p95 and the new pod's, borrowed from it
    assert peak_fit.parts_of(state, "n")[3][1] == pytest.approx(250.0 + 250.0)
    assert peak_fit.parts_of(state, "n")[-1] == 0
    state = CycleState()
    Plugin().score_all(state, replica("web-new"), [node], snap)  # max: both at the day's 900m
    assert peak_fit.parts_of(state, "n")[3][1] == pytest.approx(900.0 + 900.0)


def test_the_client_reads_held_and_leaves_it_unsaid_when_missing_or_bad():
    doc = {**_doc(None), "held": [3]}
    assert parse_pods(doc).by_pod[("ns", "a")].held == 3
    for bad in (None, [None], ["x"], [1, 2], "3"):
        assert parse_pods({**doc, "held": bad}).by_pod[("ns", "a")].held == -1
