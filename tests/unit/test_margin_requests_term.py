"""The rebalancer's load margin (scheduler/rebalancer/margin.py) with PeakFit's `requestsTerm`,
whose scores are spread over the scored nodes' range (issue 45: the rule for
`ballast-peak-recent` in docs/placement.md asks whether the rebalancer's check still holds).

One reading of the loads (the nodes the replacement may land on hotter, the others cooler) keeps
PeakFit's order but not its points: the range the scores are spread over is set by the extreme
nodes, and a hot node read hotter widens it. So the margin bounds such a plugin per node over
every reading (scheduler/framework/spread.py's `spread_bounds`): every node's score, in any
reading within the margin, lies within what the judge takes for it."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np

from scheduler.framework import CycleState
from scheduler.framework.profile import Profile, ScoreParts
from scheduler.framework.spread import spread_bounds, spread_scores
from scheduler.plugins.peak_fit import Args, Plugin
from scheduler.rebalancer.margin import LoadMargin, shifted
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats

MARGIN = 5.0


def state(seed: int):
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}", cpu="4", memory="16Gi") for i in range(6)]
    for i, node in enumerate(nodes):
        for k in range(rng.randint(0, 6)):
            cpu = f"{rng.choice((100, 250, 500))}m"
            node.add_pod(make_pod(f"p{i}-{k}", [container(cpu, "256Mi")]))
    loads = {}
    for node in nodes:
        avg = rng.uniform(5, 95)
        loads[node.name] = {"cpu": stats(avg, 2.0, p95=min(avg + 3, 100.0))}
    snap = snapshot(nodes, loads)
    favoured = {n.name for n in nodes if rng.random() < 0.5}
    return snap, nodes, favoured, rng


def reading(snap, rng):
    """Each node's CPU read its own amount off, within the margin (the corners among them)."""
    loads = {}
    for name, load in snap.loads.items():
        points = rng.choice((-MARGIN, MARGIN, rng.uniform(-MARGIN, MARGIN)))
        loads[name] = shifted({name: load}, points)[name]
    return replace(snap, loads=loads)


def test_requests_term_is_bounded_per_node_in_every_reading_within_the_margin():
    profile = Profile("p", [], [(Plugin(Args(node_peak=False, requests_term=True)), 1)])
    pod = make_pod("new", [container("300m", "256Mi")])
    readings = moved = 0
    for seed in range(40):
        snap, nodes, favoured, rng = state(seed)
        parts = ScoreParts()
        profile.score(pod, nodes, snap, CycleState(), parts)
        seen = LoadMargin(snap.loads, MARGIN).worst(profile, pod, nodes, snap, parts, favoured)
        for _ in range(20):
            scores = profile.score(pod, nodes, reading(snap, rng), CycleState())
            readings += 1
            for name, score in scores.items():
                # a node the replacement may land on never scores lower than the judge took,
                # any other never higher: every gap the judge compares holds, whatever other
                # scores (PodTopologySpread's system defaults) add to both
                if name in favoured:
                    assert score >= seen[name], (seed, name, seen, scores)
                else:
                    assert score <= seen[name], (seed, name, seen, scores)
        moved += seen != dict(zip(parts.names, parts.totals.tolist(), strict=True))
    assert readings == 800 and moved >= 30, moved


def test_one_reading_would_keep_the_order_but_not_the_points():
    # what the margin did before it bounded spread scores: every node read the way against the
    # move, all at once, and the set scored again on that reading
    plugin = Plugin(Args(node_peak=False, requests_term=True))
    pod = make_pod("new", [container("300m", "256Mi")])
    pairs = narrower = 0
    for seed in range(40):
        snap, nodes, favoured, rng = state(seed)
        cooler, hotter = shifted(snap.loads, -MARGIN), shifted(snap.loads, MARGIN)
        one = replace(snap, loads={n: (hotter if n in favoured else cooler)[n] for n in cooler})
        seen = dict(zip([n.name for n in nodes], plugin.score_all(CycleState(), pod, nodes, one),
                        strict=True))  # fmt: skip
        for _ in range(20):
            scores = plugin.score_all(CycleState(), pod, nodes, reading(snap, rng))
            scores = dict(zip([n.name for n in nodes], scores, strict=True))
            for f in favoured:
                for o in set(seen) - favoured:
                    if seen[f] > seen[o]:
                        pairs += 1
                        assert scores[f] >= scores[o], (seed, f, o)  # the order holds
                        narrower += scores[f] - scores[o] < seen[f] - seen[o]
    assert pairs >= 200 and narrower > 0, (pairs, narrower)


def test_spread_bounds_hold_the_spread_score_of_every_reading():
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(2, 6)
        base = np.array([rng.uniform(0.0, 1.0) for _ in range(n)])
        cool, hot = base - 0.05, base + 0.05
        lowest, highest = spread_bounds(cool, hot)
        for _ in range(10):
            share = np.array([rng.uniform(c, h) for c, h in zip(cool, hot, strict=True)])
            score = spread_scores(share)
            assert (score >= lowest - 1e-9).all() and (score <= highest + 1e-9).all()
    # nodes without room (inf) score 0 either way; all alike: any may be the highest
    lowest, highest = spread_bounds(np.array([0.2, np.inf]), np.array([0.3, np.inf]))
    assert lowest.tolist() == [0.0, 0.0] and highest.tolist() == [100.0, 0.0]
