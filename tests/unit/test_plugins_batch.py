"""The batch paths (filter_all, score_all, usage_arrays) give what the per-node paths give."""

import pytest

from scheduler.framework import CycleState
from scheduler.plugins import (
    node_ready,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)
from scheduler.plugins import target_load_packing as tlp
from scheduler.plugins.helpers.loadview import usage, usage_arrays
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats

HARD = {"key": "k", "value": "v", "effect": "NoSchedule"}
SOFT = {"key": "s", "value": "v", "effect": "PreferNoSchedule"}


def mixed_nodes():
    nodes = [
        make_node("plain", cpu="4", memory="8Gi"),
        make_node("small", cpu="100m", memory="8Gi"),
        make_node("nomem", cpu="4", memory="64Mi"),
        make_node("full", cpu="4", memory="8Gi", pods=1),
        make_node("tainted", cpu="4", memory="8Gi", taints=[HARD]),
        make_node("soft", cpu="4", memory="8Gi", taints=[SOFT]),
        make_node("cordoned", cpu="4", memory="8Gi", unschedulable=True),
        make_node("down", cpu="4", memory="8Gi", ready=False),
        make_node("busy", cpu="4", memory="8Gi"),
    ]
    nodes[3].add_pod(make_pod("resident", [container("10m")], uid="r1"))
    nodes[8].add_pod(make_pod("big", [container("3", "6Gi")], uid="r2"))
    return nodes


TOLERATE_ALL = [{"operator": "Exists"}]


@pytest.mark.parametrize(
    "plugin",
    [
        node_resources_fit.Plugin(),
        taint_toleration.Plugin(),
        node_unschedulable.Plugin(),
        node_ready.Plugin(),
    ],
)
@pytest.mark.parametrize("tolerations", [None, TOLERATE_ALL])
def test_filter_all_matches_filter_node_by_node(plugin, tolerations):
    nodes = mixed_nodes()
    extra = {"tolerations": tolerations} if tolerations else {}
    pod = make_pod("p", [container("1", "1Gi")], **extra)
    snap = snapshot(nodes)
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        plugin.pre_filter(state, pod, snap)
    batch = plugin.filter_all(state, pod, nodes, snap)
    one_by_one = {}
    for i, node in enumerate(nodes):
        status = plugin.filter(state, pod, node, snap)
        if not status.ok:
            one_by_one[i] = status
    assert batch == one_by_one
    assert batch or tolerations  # the node set makes every plugin reject something


def test_fit_batch_rejects_the_expected_nodes_with_all_reasons():
    nodes = mixed_nodes()
    pod = make_pod("p", [container("2", "4Gi")])
    state = CycleState()
    plugin = node_resources_fit.Plugin()
    plugin.pre_filter(state, pod, snapshot(nodes))
    rejected = plugin.filter_all(state, pod, nodes, snapshot(nodes))
    by_name = {nodes[i].name: status.reasons for i, status in rejected.items()}
    assert by_name == {
        "small": ("Insufficient cpu",),
        "nomem": ("Insufficient memory",),
        "full": ("Too many pods",),
        "busy": ("Insufficient cpu", "Insufficient memory"),
    }


LOADS = {
    "plain": {"cpu": stats(avg=30, std=5, state="fresh")},
    "small": {"cpu": stats(avg=50, std=4, state="stale", age=100, horizon=30, expiry=130)},
    "nomem": {"cpu": stats(avg=70, state="expired", age=500)},
    "full": {"memory": stats(avg=10)},  # has data, only not for cpu
}


def test_usage_arrays_match_usage_and_count_fallbacks_once():
    nodes = mixed_nodes()
    snap = snapshot(nodes, LOADS)
    batch_state, single_state = CycleState(), CycleState()
    avg, std, weight = usage_arrays(batch_state, nodes, snap, "cpu")
    # a second batch over the same nodes in the same cycle counts nothing again
    usage_arrays(batch_state, nodes, snap, "cpu")
    single = [usage(single_state, node, snap, "cpu") for node in nodes]
    assert avg == [u.avg for u in single]
    assert std == [u.std for u in single]
    assert weight == [u.weight for u in single]
    assert batch_state.fallbacks == single_state.fallbacks
    assert batch_state.fallbacks == {"stale": 1, "expired": 1, "missing": 5}


def test_tlp_score_all_matches_score():
    nodes = mixed_nodes()
    snap = snapshot(nodes, LOADS, recent={"plain": 500, "busy": 1200, "soft": 300})
    pod = make_pod("p", [container("500m")])
    plugin = tlp.Plugin()
    state = CycleState()
    plugin.pre_score(state, pod, nodes, snap)
    assert plugin.score_all(state, pod, nodes, snap) == [
        plugin.score(state, pod, node, snap) for node in nodes
    ]
