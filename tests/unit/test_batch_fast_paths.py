"""The batch fast paths give what the per-node paths give: NodeResourcesFit's cpu+memory
pass on the room nodes keep through pod churn and node updates, loadview's no-watcher pass
and TargetLoadPacking without load data."""

from __future__ import annotations

import random

from scheduler.framework import CPU, MEMORY, PODS, CycleState
from scheduler.plugins import node_resources_fit as fit
from scheduler.plugins import target_load_packing as tlp
from scheduler.plugins.helpers.loadview import usage, usage_arrays
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot


def _cluster(seed: int):
    rng = random.Random(seed)
    nodes = [
        make_node(f"n{i}", cpu=str(rng.choice([0, 1, 2, 8])), memory=f"{rng.randint(0, 4)}Gi")
        for i in range(60)
    ]
    for i, node in enumerate(nodes):
        for k in range(rng.randint(0, 4)):
            node.add_pod(
                make_pod(
                    f"q{i}-{k}", [container(f"{rng.randint(1, 900)}m", f"{rng.randint(1, 900)}Mi")]
                )
            )
    return rng, nodes


def _churned(seed: int):
    """_cluster, then some pods taken off again and some nodes replaced by an update (new
    allocatable, few pods allowed) that keeps their pods, as the cache does."""
    rng, nodes = _cluster(seed)
    for i, node in enumerate(nodes):
        for pod in list(node.pods.values()):
            if rng.random() < 0.3:
                node.remove_pod(pod)
        if rng.random() < 0.3:
            cpu, memory = str(rng.choice([1, 2, 8])), f"{rng.randint(1, 4)}Gi"
            newer = make_node(node.name, cpu=cpu, memory=memory, pods=rng.randint(0, 4))
            newer.take_pods_from(node)
            nodes[i] = newer
    for node in nodes:  # the room kept through all of it is the room counted afresh
        assert node.room_cpu == node.allocatable.get(CPU, 0) - node.requested.get(CPU, 0)
        assert node.room_memory == node.allocatable.get(MEMORY, 0) - node.requested.get(MEMORY, 0)
        assert node.room_pods == node.allocatable.get(PODS, 0) - len(node.pods)
    return rng, nodes


def test_fit_unrolled_pass_rejects_what_filter_rejects() -> None:
    for seed in range(20):
        rng, nodes = _churned(seed)
        plugin = fit.Plugin()
        pod = make_pod("p", [container(f"{rng.randint(1, 3000)}m", f"{rng.randint(1, 3000)}Mi")])
        snap = snapshot(nodes)
        state = CycleState()
        plugin.pre_filter(state, pod, snap)
        assert len(state[fit._KEY]) == 2
        batch = plugin.filter_all(state, pod, nodes, snap)
        single = {i: plugin.filter(state, pod, n, snap) for i, n in enumerate(nodes)}
        expected = {i: (s.reasons, s.unresolvable) for i, s in single.items() if not s.ok}
        assert {i: (s.reasons, s.unresolvable) for i, s in batch.items()} == expected


def test_no_watcher_usage_arrays_and_tlp_match_per_node() -> None:
    for seed in range(10):
        rng, nodes = _churned(seed)
        recent = {n.name: rng.randint(0, 2000) for n in nodes[::3]}
        snap = snapshot(nodes, recent=recent)
        for resource in (CPU, MEMORY):
            fast, slow = CycleState(), CycleState()
            avg, std, weight = usage_arrays(fast, nodes, snap, resource)
            per_node = [usage(slow, n, snap, resource) for n in nodes]
            assert avg == [u.avg for u in per_node]
            assert std == [u.std for u in per_node] and weight == [u.weight for u in per_node]
            assert fast.fallbacks == slow.fallbacks
        plugin = tlp.Plugin()
        pod = make_pod("p", [container("300m")])
        batch = plugin.score_all(CycleState(), pod, nodes, snap)
        state = CycleState()
        assert batch == [plugin.score(state, pod, n, snap) for n in nodes]
