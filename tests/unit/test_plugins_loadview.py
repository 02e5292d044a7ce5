"""The metrics fallback shared by the load-aware plugins."""

import pytest

from scheduler.framework import CycleState
from scheduler.plugins import load_variation_risk_balancing as lvrb
from scheduler.plugins import target_load_packing as tlp
from scheduler.plugins.helpers.loadview import blend_weight, usage
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats


@pytest.mark.parametrize(
    "age,horizon,expiry,weight",
    [
        (10, 30, 130, 1.0),  # younger than the horizon: all measured
        (30, 30, 130, 1.0),
        (55, 30, 130, 0.75),
        (130, 30, 130, 0.0),
        (500, 30, 130, 0.0),
        (150, None, None, 0.5),  # no horizon: from age 0; no expiry: the 300 s window
        (40, 60, 60, 1.0),  # a degenerate window: measured until the horizon
        (61, 60, 60, 0.0),
    ],
)
def test_blend_weight(age, horizon, expiry, weight):
    s = stats(avg=1, state="stale", age=age, horizon=horizon, expiry=expiry)
    assert blend_weight(s) == weight


def test_fallback_counted_once_per_node_across_plugins_and_resources():
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    loads = {
        "b": {"cpu": stats(avg=10, state="stale", age=100)},
        "c": {"cpu": stats(avg=10, state="expired"), "memory": stats(avg=10, state="expired")},
    }
    snap, state, pod = snapshot(nodes, loads), CycleState(), make_pod()
    for plugin in (tlp.Plugin(), lvrb.Plugin()):
        for node in nodes:
            plugin.score(state, pod, node, snap)
    # b's memory is unserved (it has cpu data only): not a failure, not counted
    assert state.fallbacks == {"missing": 1, "stale": 1, "expired": 1}


def test_unserved_metric_uses_allocation_without_counting():
    node = make_node(cpu="1", memory="1Gi")
    node.add_pod(make_pod("m", [container(memory="512Mi")]))
    state = CycleState()
    u = usage(state, node, snapshot([node], {"n1": {"cpu": stats(avg=20)}}), "memory")
    assert (u.avg, u.weight, u.reason) == (50.0, 0.0, "unserved")
    assert state.fallbacks == {}


def test_stale_std_shrinks_with_the_blend():
    node = make_node()
    s = stats(avg=60, std=20, state="stale", age=200, horizon=100, expiry=300)
    u = usage(CycleState(), node, snapshot([node], {"n1": {"cpu": s}}), "cpu")
    assert (u.avg, u.std, u.weight) == (30.0, 10.0, 0.5)
