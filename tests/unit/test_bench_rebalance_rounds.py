"""bench.rebalance.rounds' parts: the synthetic clusters are what their docstring says, the
cycle replay is the scheduler's cycle, and the replay meets the cluster as the judge planned it."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from bench.rebalance import clusters, landings, rounds
from scheduler.framework import CycleState, PodInfo
from scheduler.framework.clusterindex import REPLICA_SETS
from scheduler.framework.sampling import nodes_to_find
from scheduler.rebalancer.classify import classify
from scheduler.rebalancer.judge import replacement_of
from scheduler.rebalancer.landing import possible_winners
from scheduler.rebalancer.limits import controller_short

PROFILE, SETTINGS, ESTIMATOR = rounds.chart_judging()


def a_replacement(c: clusters.Cluster) -> PodInfo:
    """The replacement of a Deployment's replica on the first hot node."""
    pods = c.snap.nodes[c.hot[0]].pods.values()
    return replacement_of(next(p for p in pods if p.namespace != "kube-system"))


def test_the_chart_s_profile_and_limits_judge():
    assert {p.name: w for p, w in PROFILE.scores}["LoadVariationRiskBalancing"] == 1
    assert "TargetLoadPacking" not in {p.name for p, _ in PROFILE.scores}
    assert (SETTINGS.max_per_round, SETTINGS.max_per_node, SETTINGS.consecutive) == (5, 1, 3)


def test_a_cluster_has_the_pods_and_loads_asked_for():
    c = clusters.build(300, 7, pods_per_node=10, hot_share=0.1, cold_share=0.2)
    snap = c.snap
    assert len(snap.nodes) == 300 and c.pods == sum(len(n.pods) for n in snap.nodes.values())
    assert 300 * 10 <= c.pods < 300 * 10 + 20  # the last Deployment may overshoot a little
    assert len(c.hot) == 30
    view = classify(list(snap.nodes), snap.loads, SETTINGS.rules, SETTINGS.threshold_mode)
    states = Counter(view.state.values())
    assert (states["hot"], states["cold"], states["normal"]) == (30, 60, 210)
    assert sorted(n for n, s in view.state.items() if s == "hot") == c.hot
    # Every ReplicaSet ready and as many replicas placed as it wants: none is busy.
    sets = snap.cluster.objects[REPLICA_SETS]
    placed = Counter(
        f"{p.namespace}/{p.raw['metadata']['ownerReferences'][0]['name']}"
        for n in snap.nodes.values()
        for p in n.pods.values()
        if p.namespace != "kube-system"
    )
    assert placed == {k: rs["spec"]["replicas"] for k, rs in sets.items()}
    assert not any(controller_short(rs) for rs in sets.values())
    # Zone-spread Deployments' replicas go round the zones: the constraint holds as placed.
    zone_of = {n.name: n.labels[clusters.ZONE] for n in snap.nodes.values()}
    spread: dict[str, Counter] = {}
    for n in snap.nodes.values():
        for p in n.pods.values():
            if p.raw["spec"].get("topologySpreadConstraints"):
                spread.setdefault(p.labels["app"], Counter())[zone_of[n.name]] += 1
    assert spread
    for zones in spread.values():
        counts = [zones.get(z, 0) for z in clusters.ZONES]
        assert max(counts) - min(counts) <= 1


def test_the_same_arguments_build_the_same_cluster():
    a, b = clusters.build(50, 3), clusters.build(50, 3)
    assert a.hot == b.hot
    assert {n: sorted(i.pods) for n, i in a.snap.nodes.items()} == {
        n: sorted(i.pods) for n, i in b.snap.nodes.items()
    }
    assert {n: a.snap.loads[n].metrics["cpu"].avg for n in a.snap.nodes} == {
        n: b.snap.loads[n].metrics["cpu"].avg for n in b.snap.nodes
    }


@pytest.mark.parametrize("seed", range(2))
def test_the_cycle_s_pick_wins_a_sample_landing_py_names(seed):
    # 150 nodes, the adaptive sample of 100: from any start the cycle picks a node the judge's
    # rule counts as a possible winner (scores over every feasible node; LoadVariationRisk-
    # Balancing and the spreading of one replica's workload decide here).
    c = clusters.build(150, seed)
    snap = c.snap
    pod = a_replacement(c)
    assert nodes_to_find(150, 0) == 100
    predicted = landings.winners(PROFILE, pod, snap, 0)
    assert 0 < len(predicted) < 150
    rng = random.Random(seed)
    for start in range(0, 150, 10):
        picked = landings.cycle_pick(PROFILE, pod, snap, 0, start, rng)
        assert picked is not None and picked[0] in predicted and picked[0] in picked[1]


def test_scoring_every_node_the_cycle_picks_the_profile_s_best():
    c = clusters.build(40, 5)
    snap = c.snap
    pod = a_replacement(c)
    feasible, _ = PROFILE.filter(pod, list(snap.nodes.values()), snap, CycleState())
    scores = PROFILE.score(pod, feasible, snap, CycleState())
    best = {n for n, s in scores.items() if s == max(scores.values())}
    order = [n.name for n in feasible]
    assert {order[i] for i in possible_winners([scores[n] for n in order], 40)} == best
    for start in (0, 13, 39):
        node, tied = landings.cycle_pick(PROFILE, pod, snap, 100, start, random.Random(start))
        assert node in best and tied == best


@pytest.mark.parametrize(("hot", "cold"), [(0.1, 0.3), rounds.MIXES["busy"]])
def test_scoring_every_node_the_replay_meets_the_cluster_the_judge_planned(hot, cold):
    # With every node scored the cycle's best (ties included) is the judge's target for every
    # planned move, the earlier moves in place: the replay's cluster is the one the judge decided
    # on. And the snapshot is left as it was.
    c = clusters.build(60, 11, hot_share=hot, cold_share=cold)
    snap = c.snap
    before = ({n: sorted(i.pods) for n, i in snap.nodes.items()}, dict(snap.cluster.placed))
    view = classify(list(snap.nodes), snap.loads, SETTINGS.rules, SETTINGS.threshold_mode)
    plan = rounds.judge_for(PROFILE, SETTINGS, ESTIMATOR, snap, 100).plan(view, c.hot, snap)
    assert len(plan.moves) >= 2
    replays = landings.replay(PROFILE, ESTIMATOR, view, snap, plan.moves, 100, 3, random.Random(1))
    assert [len(r) for r in replays] == [3] * len(plan.moves)
    assert all(x.tie and x.predicted and x.safe for r in replays for x in r)
    assert landings.rates([x for r in replays for x in r])["tie"] == 1.0
    assert ({n: sorted(i.pods) for n, i in snap.nodes.items()}, snap.cluster.placed) == before
    assert snap.recent_cpu_m == {}


def test_rates_count_each_check():
    yes = landings.Landing("a", True, True, True, True, True)
    half = landings.Landing("b", False, False, True, True, False)
    assert landings.rates([yes, half]) == {
        "replays": 2,
        "exact": 0.5,
        "tie": 0.5,
        "predicted": 1.0,
        "not_hot_nor_source": 1.0,
        "safe": 0.5,
    }
    assert landings.rates([])["replays"] == 0


def test_the_table_shows_each_row():
    c = {"median": 0.5, "min": 0.4, "max": 0.7}
    cost = {
        "nodes": 5000,
        "pods": 50000,
        "hot": 100,
        "percentage": 0,
        "sample": 500,
        "round": {"cpu_s": c, "views": 70, "moves": 5, "hot_planned": 6},
        "hot_node": {"cpu_s": c, "views": {"median": 12}},
        "view_ms": 80.0,
    }
    land = {
        "mix": "busy",
        "nodes": 2000,
        "percentage": 0,
        "sample": 680,
        "moves": 40,
        "replays": 800,
        "moves_safe_every_start": 39,
        **dict.fromkeys(landings.CHECKS, 0.5),
    }
    text = rounds.markdown({"cost": [cost], "landing": [land]})
    assert "| 5,000 | 50,000 | 100 | 0 (500) | 0.500 (0.400..0.700) | 70 | 5 | 6 |" in text
    assert "| busy | 2,000 | 0 (680) | 40 | 800 | 50.0 % |" in text
    assert text.rstrip().endswith("| 39 of 40 |")
