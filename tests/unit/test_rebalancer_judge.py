"""The judge sees the cluster as the scheduler will when the replacement comes: the victim gone,
the moves planned before it in place. A hand-made case (replicas 1/1/1 over three zones, maxSkew
1) and a property over random clusters with every constraint kind the differential generator
makes: each approved target is feasible for the profile on that cluster, and the profile's best
node there is neither the node the pod left nor another hot node, with every node's CPU read up
to the load margin off."""

from __future__ import annotations

import copy
import random
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config.profiles import build_profiles
from scheduler.framework import CPU, CycleState, MetricStats, NodeLoad, PodInfo, Snapshot
from scheduler.framework.clusterindex import (
    NAMESPACES,
    PVCS,
    PVS,
    REPLICA_SETS,
    STORAGE_CLASSES,
    object_key,
)
from scheduler.framework.profile import Profile, ScoreParts
from scheduler.framework.resources import node_info, pod_info
from scheduler.framework.snapshot import TrialEdit, snapshot_of
from scheduler.framework.workloads import (
    Percentiles,
    RevisionProfile,
    WorkloadProfile,
    WorkloadProfiles,
)
from scheduler.rebalancer import settings, victims
from scheduler.rebalancer.classify import Classification, classify
from scheduler.rebalancer.judge import (
    ELSEWHERE,
    GOES_BACK,
    NO_TARGET,
    NOT_CHOSEN,
    TOO_LITTLE,
    Judge,
    Move,
    Plan,
    replacement_of,
    terminating,
)
from scheduler.rebalancer.margin import LoadMargin
from scheduler.rebalancer.settings import ResourceRule
from tests.differential import scenario

RULES = (ResourceRule("cpu", "avg", 80.0, 50.0),)
CHART_VALUES = Path(__file__).parents[2] / "charts" / "ballast" / "values.yaml"
ZONE = scenario.ZONE
PROFILE = build_profiles(settings.parse({"profiles": [{"schedulerName": "ballast"}]}).scheduler)[
    "ballast"
]
ESTIMATOR = victims.Estimator.for_profile(PROFILE)


def cpu_load(percent: float) -> NodeLoad:
    m = MetricStats(percent, 1.0, percent, "fresh", 1.0, 100.0, expiry=120.0)
    return NodeLoad({"cpu": m}, "ballast")


def node_doc(name: str, cpu: str = "4", labels: dict[str, str] | None = None, **spec: Any):
    capacity = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return node_info(
        {
            "metadata": {"name": name, "labels": {scenario.HOSTNAME: name, **(labels or {})}},
            "spec": spec,
            "status": {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def replica(body: dict[str, Any], namespace: str, owner: str) -> PodInfo:
    """A running pod of ReplicaSet `owner`, placed by Ballast, from a pod body."""
    meta = body.setdefault("metadata", {})
    meta["namespace"] = namespace
    meta["uid"] = f"uid-{namespace}-{meta['name']}"
    meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner, "controller": True}]
    body["spec"]["schedulerName"] = "ballast"
    body["status"] = {"phase": "Running"}
    return pod_info(body)


def judge(**kw: Any) -> Judge:
    return Judge(PROFILE, settings.RebalancerSettings(**kw), ESTIMATOR, lambda w: False)


def view_of(snap: Snapshot) -> Classification:
    return classify(list(snap.nodes), snap.loads, RULES, settings.ABSOLUTE)


def hot_nodes(view: Classification) -> list[str]:
    return [n for n, s in view.state.items() if s == "hot"]


# --- the case of the issue ----------------------------------------------------------------
def spread_replica(i: int) -> PodInfo:
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    body = {
        "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
            "topologySpreadConstraints": [spread],
        },
    }
    return replica(body, "app", "web-rs")


def test_one_replica_per_zone_with_max_skew_1_stays_in_its_zone():
    # web-0 on the hot node of zone a, web-1 and web-2 on cold nodes of zones b and c. With
    # web-0 terminating the zones count 0/1/1: a replacement in zone b or c makes a skew of 2,
    # and the scheduler must put it back in zone a, perhaps on the same hot node.
    zones = {"hot": "zone-a", "cold-b": "zone-b", "cold-c": "zone-c"}
    nodes = [node_doc(n, labels={ZONE: z}) for n, z in zones.items()]
    placed = [(spread_replica(i), n) for i, n in enumerate(zones)]
    loads = {"hot": cpu_load(95), "cold-b": cpu_load(30), "cold-c": cpu_load(30)}
    snap = snapshot_of(nodes, placed, loads)
    view = view_of(snap)
    plan = judge().plan(view, ["hot"], snap)
    assert plan.moves == []
    assert [(s.pod, s.reason) for s in plan.skips] == [("app/web-0", NO_TARGET)]
    assert plan.skips[0].detail.startswith("0 of 2 candidates pass the filters")

    # A cold node in zone a is where the replacement may go.
    nodes.append(node_doc("cold-a", labels={ZONE: "zone-a"}))
    snap = snapshot_of(nodes, placed, {**loads, "cold-a": cpu_load(30)})
    plan = judge().plan(view_of(snap), ["hot"], snap)
    assert [(m.pod.name, m.target) for m in plan.moves] == [("web-0", "cold-a")]


def test_a_replica_drawn_to_its_own_zone_is_judged_as_it_terminates():
    # One replica that must share a zone with its app (the first replica may go anywhere: it
    # matches itself). Once deleted, nothing holds it to zone a and a cold node of zone b would
    # do; but the scheduler meets the replacement while the victim terminates, and
    # InterPodAffinity still counts the victim there: zone a, the hot node, it is.
    term = {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": ZONE}
    body = {
        "metadata": {"name": "solo-0", "labels": {"app": "solo"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        },
    }
    solo = replica(body, "app", "solo-rs")
    nodes = [node_doc("hot", labels={ZONE: "zone-a"}), node_doc("cold-b", labels={ZONE: "zone-b"})]
    snap = snapshot_of(nodes, [(solo, "hot")], {"hot": cpu_load(95), "cold-b": cpu_load(30)})
    plan = judge().plan(view_of(snap), ["hot"], snap)
    assert plan.moves == []
    assert [s.reason for s in plan.skips] == [NO_TARGET]
    assert "while it terminates" in plan.skips[0].detail


def test_the_plan_leaves_the_snapshot_as_it_found_it():
    zones = {"hot": "zone-a", "cold-a": "zone-a", "cold-b": "zone-b"}
    nodes = [node_doc(n, labels={ZONE: z}) for n, z in zones.items()]
    placed = [(spread_replica(0), "hot"), (spread_replica(1), "cold-b")]
    loads = {"hot": cpu_load(95), "cold-a": cpu_load(20), "cold-b": cpu_load(20)}
    snap = snapshot_of(nodes, placed, loads)
    snap.recent_cpu_m = {"cold-b": 100}
    figures = copy.deepcopy(loads)
    plan = judge(load_margin=5.0).plan(view_of(snap), ["hot"], snap)
    assert len(plan.moves) == 1
    assert snap.recent_cpu_m == {"cold-b": 100}
    assert snap.loads is loads and loads == figures  # the load margin read copies
    assert {n: set(i.pods) for n, i in snap.nodes.items()} == {
        "hot": {"uid-app-web-0"},
        "cold-a": set(),
        "cold-b": {"uid-app-web-1"},
    }
    assert snap.cluster.placed == {"uid-app-web-0": "hot", "uid-app-web-1": "cold-b"}


def preferring(weights: dict[str, int]) -> PodInfo:
    """A 100m replica preferring nodes by their `tier` label, with these weights."""
    terms = [
        {
            "weight": w,
            "preference": {"matchExpressions": [{"key": "tier", "operator": "In", "values": [v]}]},
        }
        for v, w in weights.items()
    ]
    body = {
        "metadata": {"name": "p", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
            "affinity": {
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}
            },
        },
    }
    return replica(body, "app", "web-rs")


@pytest.mark.parametrize(
    ("weight", "warm", "target", "reason", "detail"),
    [
        (20, 65, "warm", "", ""),
        (45, 65, "warm", "", ""),
        (20, 78, "", ELSEWHERE, "warm (normal; with the pod over high or not known) scores"),
        (100, 65, "warm", "", ""),
    ],
)
def test_the_replacement_goes_where_the_scheduler_puts_it(weight, warm, target, reason, detail):
    # The replacement prefers the warm node (100, not a cold target) and the hot node
    # (`weight`). Scored with every feasible node, as the cycle scores them, the warm node is
    # the scheduler's pick, not the cold target: the relief is booked there while it stays
    # under high with the pod (at 65 %, +3.75 %); at 78 % the pod would make it hot, so the pod
    # stays. At weight 100 the hot node ties the warm one on affinity and the loads decide, 30
    # points apart: 5 points either way (the load margin) cannot hand it back (204 to 218).
    nodes = [
        node_doc(n, labels={"tier": t}) for n, t in (("hot", "s"), ("cold", "t"), ("warm", "x"))
    ]
    pod = preferring({"s": weight, "x": 100})
    loads = {"hot": cpu_load(95), "cold": cpu_load(30), "warm": cpu_load(warm)}
    snap = snapshot_of(nodes, [(pod, "hot")], loads)
    plan = judge().plan(view_of(snap), ["hot"], snap)
    if reason:
        assert plan.moves == []
        assert [s.reason for s in plan.skips] == [reason]
        assert plan.skips[0].detail.startswith(detail)
    else:
        assert [(m.target, m.target_after) for m in plan.moves] == [(target, {"cpu": warm + 3.75})]
        assert plan.skips == []


def test_a_third_node_that_outscores_the_target_gets_the_replacement():
    # spread_cluster with a fourth node holding no replica at 55 % (normal, not a target):
    # spreading gives it all its points and it outscores the cold node (225 to 223). The
    # scheduler puts the replacement there, so the relief and the pod's use are booked there.
    extra = node_doc("third")
    snap = spread_cluster(20)
    snap = snapshot_of(
        [*snap.nodes.values(), extra],
        [(p, n.name) for n in snap.nodes.values() for p in n.pods.values()],
        {**snap.loads, "third": cpu_load(55)},
    )
    snap.now = 120.0
    plan = judge().plan(view_of(snap), ["hot"], snap)
    assert [(m.target, m.target_usage) for m in plan.moves] == [("third", {"cpu": 55})]


def spreading(i: int, cpu: str = "200m") -> PodInfo:
    """A replica spread softly over hostnames (ScheduleAnyway), as the default constraints do."""
    spread = {
        "maxSkew": 1,
        "topologyKey": scenario.HOSTNAME,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    body = {
        "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            "topologySpreadConstraints": [spread],
        },
    }
    return replica(body, "app", "web-rs")


def spread_cluster(cold: float, extra: list[tuple[PodInfo, str]] = ()) -> Snapshot:
    # web-0 alone on the hot node, web-1 on the cold one, four on a busy node (not a target).
    # With web-0 gone the hot node has no replica: spreading gives it all its 200 points, the
    # cold node (one replica) 150, and TargetLoadPacking decides by the cold node's load.
    nodes = [node_doc(n) for n in ("hot", "cold", "busy")]
    placed = [(spreading(0), "hot"), (spreading(1), "cold")]
    placed += [(spreading(i), "busy") for i in range(2, 6)]
    loads = {"hot": cpu_load(95), "cold": cpu_load(cold), "busy": cpu_load(60)}
    snap = snapshot_of(nodes, [*placed, *extra], loads)
    snap.now = 120.0  # cpu_load's newest sample is at 100
    return snap


MARGIN = "CPU read up to 5 points off (loadMargin)"


@pytest.mark.parametrize(
    ("cold", "load", "points", "reason", "detail"),
    [
        (20, 0, 0, "", ""),
        (20, 0, 20, GOES_BACK, "hot scores 200, cold 213: not more than 20 points apart"),
        (20, 5, 0, "", ""),
        (20, 5, 4, GOES_BACK, f"hot scores 202, cold 206, {MARGIN}: not more than 4 points apart"),
        (30, 0, 0, "", ""),
        (30, 0, 20, "", ""),
        (30, 2, 0, "", ""),
        (30, 5, 0, GOES_BACK, f"hot scores 202, cold 170, {MARGIN}"),
    ],
)
def test_a_few_points_of_load_that_hand_the_pod_back_refuse_the_move(
    cold, load, points, reason, detail
):
    # Spreading gives the hot node (no replica left) 200 points, the cold one 132: the load
    # must make up for it. At 20 % the cold node wins by 13 (213 to 200); read up to 5 points
    # off, each node the way that favours the hot one, by 4 (206 to 202): TargetLoadPacking
    # rises to its 40 % target, so the cold node (27.5 % with the pod) reads worst cooler. The
    # old rule (`scoreMargin: 20`, no load margin) refused it. At 30 % (37.5 % with the pod) the
    # cold node wins by 28 (the old rule approved it), but 5 points hotter it passes
    # TargetLoadPacking's target, where the score drops from 100 to 40: 170 against the hot
    # node's 202, and the scheduler reading the window a poll later could put the pod back.
    snap = spread_cluster(cold)
    plan = judge(load_margin=load, score_margin=points).plan(view_of(snap), ["hot"], snap)
    if reason:
        assert plan.moves == []
        assert [(s.reason, s.detail) for s in plan.skips] == [(reason, detail)]
    else:
        assert [m.target for m in plan.moves] == ["cold"] and plan.skips == []


def chart_profile() -> tuple[Profile, victims.Estimator]:
    """The judging profile as the chart deploys it (LoadVariationRiskBalancing alone), with
    its estimator."""
    doc = yaml.safe_load(CHART_VALUES.read_text())
    config = {k: v for k, v in doc["scheduler"]["config"].items() if k != "leaderElection"}
    cfg = settings.parse({**config, "rebalancer": doc["rebalancer"]["config"]})
    profile = build_profiles(cfg.scheduler)[cfg.rebalancer.profile]
    return profile, victims.Estimator.for_profile(profile)


@pytest.mark.parametrize(
    ("load", "points", "moved", "detail"),
    [
        (5, 0, True, ""),
        (0, 20, False, "hot scores 250, cold 267: not more than 20 points apart"),
    ],
)
def test_the_chart_s_profile_moves_a_pod_off_95_percent_to_a_node_left_at_65(
    load, points, moved, detail
):
    # LoadVariationRiskBalancing scores (1 - (mu + sigma) / 2) x 100: half a point per point
    # of use. The hot node at 95 % with the 20 % pod counted back scores 50 (its use clamped at
    # 100 %), the cold node at 45 % with it (65 %) 67, spreading 200 each: 17 apart, refused by
    # the old rule's 20 points, which asked for about 40 points of CPU between them. Read 5
    # points off, each the way that favours the hot node: 250 against 265, still the cold one.
    profile, est = chart_profile()
    assert "TargetLoadPacking" not in {p.name for p, _ in profile.scores}
    nodes = [node_doc(n) for n in ("hot", "cold", "busy")]
    placed = [(spreading(0, "800m"), "hot"), (spreading(1, "800m"), "busy")]
    loads = {"hot": cpu_load(95), "cold": cpu_load(45), "busy": cpu_load(70)}
    snap = snapshot_of(nodes, placed, loads)
    s = settings.RebalancerSettings(load_margin=load, score_margin=points)
    plan = Judge(profile, s, est, lambda w: False).plan(view_of(snap), ["hot"], snap)
    if moved:
        assert [(m.target, m.target_after) for m in plan.moves] == [("cold", {"cpu": 65.0})]
    else:
        assert plan.moves == [] and [(k.reason, k.detail) for k in plan.skips] == [
            (GOES_BACK, detail)
        ]


def test_the_chart_s_profile_keeps_a_pod_a_few_points_of_load_would_bring_back():
    # Spreading favours the hot node (no replica left) over the cold one (one of eleven);
    # LoadVariationRiskBalancing (hot at 95 %, cold at 36 % + 5 % with the pod) makes it up by 3
    # points, 250 to 253: approved without a margin, but with the hot node read 5 points cooler
    # and the cold one 5 hotter, 252 against 251.
    profile, est = chart_profile()
    nodes = [node_doc(n) for n in ("hot", "cold", "busy")]
    placed = [(spreading(0), "hot"), (spreading(1), "cold")]
    placed += [(spreading(i), "busy") for i in range(2, 12)]
    loads = {"hot": cpu_load(95), "cold": cpu_load(36), "busy": cpu_load(60)}
    snap = snapshot_of(nodes, placed, loads)
    for load, moved in ((0, ["cold"]), (5, [])):
        s = settings.RebalancerSettings(load_margin=load)
        plan = Judge(profile, s, est, lambda w: False).plan(view_of(snap), ["hot"], snap)
        assert [m.target for m in plan.moves] == moved
    assert [(k.reason, k.detail) for k in plan.skips] == [
        (GOES_BACK, f"hot scores 252, cold 251, {MARGIN}")
    ]


def test_a_lead_spreading_ties_is_enough_with_target_load_packing():
    # The shape of the benchmark's drift seed 3: spreading gives the hot node and the cold one
    # 200 each (neither holds a replica once the victim is gone), TargetLoadPacking the hot node
    # 0 (95 % + the pod's 30 %) and the cold one 17 (45 % + 30 % = 75 %, past its 40 % target).
    # The old rule refused it for two minutes ("not more than 20 points apart"); read 5 points
    # off, the cold node still leads (213 to 200).
    nodes = [node_doc(n) for n in ("hot", "cold", "busy")]
    placed = [(spreading(0, "800m"), "hot")] + [(spreading(i, "800m"), "busy") for i in (1, 2)]
    loads = {"hot": cpu_load(95), "cold": cpu_load(45), "busy": cpu_load(70)}
    snap = snapshot_of(nodes, placed, loads)
    old = judge(load_margin=0, score_margin=20).plan(view_of(snap), ["hot"], snap)
    assert [(k.reason, k.detail) for k in old.skips] == [
        (GOES_BACK, "hot scores 200, cold 217: not more than 20 points apart")
    ]
    plan = judge().plan(view_of(snap), ["hot"], snap)
    assert [(m.target, m.target_after) for m in plan.moves] == [("cold", {"cpu": 75.0})]


def bound(pod: PodInfo, at: str) -> PodInfo:
    """The pod with the PodScheduled condition the API server sets on its binding."""
    cond = {"type": "PodScheduled", "status": "True", "lastTransitionTime": at}
    return pod_info({**pod.raw, "status": {**pod.raw["status"], "conditions": [cond]}})


@pytest.mark.parametrize(
    ("at", "counted"),
    [("1970-01-01T00:01:30Z", True), ("1970-01-01T00:01:00Z", False)],
)
def test_pods_the_scheduler_bound_lately_count_on_their_node(at, counted):
    # A pod predicted at 1.5 cores bound on the cold node at 90 s: the newest sample (100 s) is
    # within the provider's lag (15 s) of the bind, so the scheduler still adds its predicted
    # CPU there, and so does the judge: the cold node at 20 % + 37.5 % loses TargetLoadPacking's
    # points and no longer beats the hot node. Bound at 60 s, the sample shows it: counted once.
    other = bound(replica({"metadata": {"name": "new"}, "spec": _cpu("1000m")}, "b", "b-rs"), at)
    snap = spread_cluster(20, [(other, "cold")])
    j = judge()
    assert ESTIMATOR.use(other, CPU) == 1500
    assert j.recently_bound(snap) == ({"cold": 1500} if counted else {})
    plan = j.plan(view_of(snap), ["hot"], snap)
    assert snap.recent_cpu_m == {}
    if counted:
        assert plan.moves == [] and [s.reason for s in plan.skips] == [GOES_BACK]
    else:
        assert [m.target for m in plan.moves] == ["cold"]


@pytest.mark.parametrize(
    "told",
    [
        # The scheduler at --provider-lag 5 (the rebalancer told the same): a bind at 90 s is
        # shown by the 100 s sample, and the judge no longer counts it where the default 15 s
        # would.
        {"provider_lag": 5.0},
        # At --recent-max-age 5 (the trace's, 5 minutes deployed): the bind, inside the default
        # lag of the newest sample, is 30 s old at 120 s, past the scheduler's count; before
        # issue 46 the judge counted it up to a wall 300 s.
        {"recent_max_age": 5.0},
    ],
)
def test_the_scheduler_s_rule_the_judge_counts_a_bind_by_is_the_one_it_is_given(told):
    other = bound(replica({"metadata": {"name": "new"}, "spec": _cpu("1000m")}, "b", "b-rs"),
                  "1970-01-01T00:01:30Z")  # fmt: skip
    snap = spread_cluster(20, [(other, "cold")])
    given = Judge(PROFILE, settings.RebalancerSettings(), ESTIMATOR, lambda w: False, **told)
    assert (judge().recently_bound(snap), given.recently_bound(snap)) == ({"cold": 1500}, {})
    assert [m.target for m in given.plan(view_of(snap), ["hot"], snap).moves] == ["cold"]


def test_a_pod_bound_lately_on_the_hot_node_is_no_reason_to_evict_more():
    # The scores count it there (the scheduler does), the relief does not: the node is 95 % by
    # its samples, whatever the prediction of a pod they cannot show yet.
    other = replica({"metadata": {"name": "new"}, "spec": _cpu("1000m")}, "b", "b-rs")
    snap = spread_cluster(30, [(bound(other, "1970-01-01T00:01:30Z"), "hot")])
    plan = judge().plan(view_of(snap), ["hot"], snap)
    assert judge().recently_bound(snap) == {"hot": 1500}
    assert [(m.target, m.source_usage[CPU]) for m in plan.moves] == [("cold", 95.0)]


def _cpu(cpu: str) -> dict[str, Any]:
    return {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}


def test_an_idle_victim_relieves_what_it_uses_not_its_floor():
    # Excess 15 points. "idle" (2 CPU requested) measures 5m: with the floor (0.5 x 3000m =
    # 37.5 %) it would look like the one pod that covers the excess alone; what leaving it takes
    # off the node is its 5m. "busy" measures 400m (10 %): the bigger relief, tried first.
    # (Its replacement is still predicted at the floor: tests/unit/test_estimator.py.)
    def measured(cpu_m: float) -> WorkloadProfile:
        rev = RevisionProfile(50, 5, 0.0, Percentiles(cpu_m, cpu_m, cpu_m), Percentiles(1, 1, 1))
        return WorkloadProfile("ReplicaSet", {"": rev})

    def plain(name: str, cpu: str) -> PodInfo:
        body = {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        }
        return replica(body, "app", f"{name}-rs")

    profiles = WorkloadProfiles(
        {"app/ReplicaSet/idle-rs": measured(5), "app/ReplicaSet/busy-rs": measured(400)}
    )
    idle, busy = plain("idle", "2"), plain("busy", "200m")
    nodes = [node_doc("hot"), node_doc("cold")]
    snap = snapshot_of(
        nodes, [(idle, "hot"), (busy, "hot")], {"hot": cpu_load(95), "cold": cpu_load(20)}
    )
    est = victims.Estimator.for_profile(PROFILE, lambda: profiles)
    plan = Judge(PROFILE, settings.RebalancerSettings(), est, lambda w: False).plan(
        view_of(snap), ["hot"], snap
    )
    assert [(m.pod.name, m.share) for m in plan.moves] == [("busy", {"cpu": 10.0})]


def test_the_move_that_fixes_the_node_wins_over_an_idle_best_effort_replica():
    # Excess 12 points (92 % against 80). "idle", BestEffort, measures 120m (3 %): first by the
    # old strict order (QoS before relief), it would be the node's one move for 3 points, and
    # the node would rest hot. "web", Burstable, measures 600m (15 %): it covers the excess
    # alone, so the cheapest set that brings the node under high is web, not idle.
    def measured(cpu_m: float) -> WorkloadProfile:
        rev = RevisionProfile(50, 5, 0.0, Percentiles(cpu_m, cpu_m, cpu_m), Percentiles(1, 1, 1))
        return WorkloadProfile("ReplicaSet", {"": rev})

    idle = replica(
        {"metadata": {"name": "idle"}, "spec": {"containers": [{"name": "c"}]}}, "app", "idle-rs"
    )
    web = replica({"metadata": {"name": "web"}, "spec": _cpu("300m")}, "app", "web-rs")
    profiles = WorkloadProfiles(
        {"app/ReplicaSet/idle-rs": measured(120), "app/ReplicaSet/web-rs": measured(600)}
    )
    snap = snapshot_of(
        [node_doc("hot"), node_doc("cold")],
        [(idle, "hot"), (web, "hot")],
        {"hot": cpu_load(92), "cold": cpu_load(20)},
    )
    est = victims.Estimator.for_profile(PROFILE, lambda: profiles)
    plan = Judge(PROFILE, settings.RebalancerSettings(), est, lambda w: False).plan(
        view_of(snap), ["hot"], snap
    )
    assert [(m.pod.name, m.share) for m in plan.moves] == [("web", {"cpu": 15.0})]
    assert ("app/idle", NOT_CHOSEN) in [(k.pod, k.reason) for k in plan.skips]
    # Under minRelief (4 points), the idle one is not even judged.
    strict = settings.RebalancerSettings(min_relief=4.0)
    plan = Judge(PROFILE, strict, est, lambda w: False).plan(view_of(snap), ["hot"], snap)
    assert ("app/idle", TOO_LITTLE) in [(k.pod, k.reason) for k in plan.skips]


@pytest.mark.parametrize(("percentage", "moved"), [(100, True), (0, False)])
def test_at_120_nodes_the_scheduler_s_sample_may_miss_the_one_good_target(percentage, moved):
    # One cold node among 118 at 78 %, where the pod (750m of 4 cores, 18.75 points) would go
    # over high. Scoring every node, the scheduler takes the cold one. Scoring a sample of 100
    # of the 120 (the adaptive share), 20 consecutive nodes are left out, and a sample without
    # the cold node puts the replacement on a node it makes hot, or back: the pod stays.
    warm = [f"w{i:03d}" for i in range(118)]
    nodes = [node_doc(n) for n in ("hot", *warm[:59], "cold", *warm[59:])]
    web = replica({"metadata": {"name": "web"}, "spec": _cpu("500m")}, "app", "web-rs")
    loads = {"hot": cpu_load(95), "cold": cpu_load(20), **{n: cpu_load(78) for n in warm}}
    snap = snapshot_of(nodes, [(web, "hot")], loads)
    j = Judge(
        PROFILE, settings.RebalancerSettings(), ESTIMATOR, lambda w: False, percentage=percentage
    )
    plan = j.plan(view_of(snap), ["hot"], snap)
    if moved:
        assert [m.target for m in plan.moves] == ["cold"]
    else:
        assert plan.moves == []
        assert [s.reason for s in plan.skips] in ([ELSEWHERE], [GOES_BACK])


def test_each_scheduler_s_pods_are_judged_by_their_own_profile():
    # ballast-batch's profile ignores taints; the only cold node carries one. Its pod fits
    # there by its own profile; judged by the judging profile (ballast) it fits nowhere.
    cfg = settings.parse(
        {
            "profiles": [
                {"schedulerName": "ballast"},
                {
                    "schedulerName": "ballast-batch",
                    "plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}},
                },
            ],
            "rebalancer": {"schedulers": ["ballast", "ballast-batch"]},
        }
    )
    profiles = build_profiles(cfg.scheduler)
    taint = [{"key": "batch-only", "value": "yes", "effect": "NoSchedule"}]
    body = replica({"metadata": {"name": "b"}, "spec": _cpu("500m")}, "app", "b-rs").raw
    body["spec"]["schedulerName"] = "ballast-batch"
    snap = snapshot_of(
        [node_doc("hot"), node_doc("cold", taints=taint)],
        [(pod_info(body), "hot")],
        {"hot": cpu_load(95), "cold": cpu_load(20)},
    )
    one = Judge(profiles["ballast"], cfg.rebalancer, ESTIMATOR, lambda w: False)
    assert one.plan(view_of(snap), ["hot"], snap).moves == []
    own = Judge(profiles["ballast"], cfg.rebalancer, ESTIMATOR, lambda w: False, profiles=profiles)
    assert [m.target for m in own.plan(view_of(snap), ["hot"], snap).moves] == ["cold"]


# --- the property -------------------------------------------------------------------------
PREFIX = "j"
STATES = 500
# Found by longer runs (3000 states): 1862, an earlier move's victim still terminating decides
# where a later replacement goes (the judge counted it deleted in both views before).
FOUND = (1862,)


def cluster_objects(snap: Snapshot, claims: list[scenario.Claim]) -> None:
    """Namespaces, PersistentVolumes, claims and the StorageClass of a scenario, as the cache
    holds them."""
    for logical, labels in scenario.NAMESPACES.items():
        name = scenario.namespace_name(PREFIX, logical)
        snap.cluster.put(NAMESPACES, name, {"metadata": {"name": name, "labels": labels}})
    pvs, pvcs = scenario.volume_objects(claims, PREFIX)
    for pv in pvs:
        snap.cluster.put(PVS, object_key(pv), pv)
    for namespace, pvc in pvcs:
        pvc["metadata"]["namespace"] = namespace
        snap.cluster.put(PVCS, object_key(pvc), pvc)
    sc = scenario.storage_class()
    snap.cluster.put(STORAGE_CLASSES, object_key(sc), sc)


def random_state(
    seed: int,
) -> tuple[Snapshot, settings.RebalancerSettings, dict[str, list[str]]]:
    """A small cluster from the differential generator: pods of every feature placed where the
    profile lets them (else anywhere: constraints bind only at scheduling), random loads with
    at least one hot and one cold node."""
    rng = random.Random(seed)
    gen = scenario.generate(seed, pods=rng.randint(6, 22), nodes=rng.randint(3, 7))
    nodes = []
    for spec in gen.nodes:
        taints = [dict(t) for t in spec.taints]
        labels = {"kubernetes.io/os": "linux", **spec.labels}
        nodes.append(node_doc(spec.name, spec.cpu, labels, taints=taints))
    loads = {}
    for i, n in enumerate(nodes):
        band = (
            (82, 99)
            if i == 0
            else (10, 45)
            if i == 1
            else rng.choice(((82, 99), (10, 45), (50, 79)))
        )
        loads[n.name] = cpu_load(rng.uniform(*band))
    snap = snapshot_of(nodes, [], loads)
    cluster_objects(snap, gen.claims)
    features = {}
    for logical, body, kinds in gen.pods:
        body = scenario.pod_for_run(body, PREFIX, "ballast", gated=False)
        namespace = scenario.namespace_name(PREFIX, logical)
        owner = f"{body['metadata']['labels']['app']}-{rng.choice('xy')}"
        pod = replica(body, namespace, owner)
        features[pod.key] = kinds
        rs = {"metadata": {"name": owner, "namespace": namespace}, "spec": {"replicas": 3}}
        snap.cluster.put(REPLICA_SETS, f"{namespace}/{owner}", rs)
        feasible, _ = PROFILE.filter(pod, list(snap.nodes.values()), snap, CycleState())
        if feasible:
            where = rng.choice(feasible).name
        elif rng.random() < 0.5:
            where = rng.choice(nodes).name
        else:
            continue
        snap.nodes[where].add_pod(pod)
        snap.cluster.add_pod(pod, where)
    s = settings.RebalancerSettings(
        max_per_node=rng.randint(1, 3),
        max_per_round=rng.randint(2, 6),
        max_per_namespace=rng.randint(2, 6),
        targets_must_be_cold=rng.random() < 0.7,
        load_margin=rng.choice((0.0, 2.0, 5.0, 10.0)),
        score_margin=rng.choice((0, 0, 10, 20)),
    )
    return snap, s, features


def readings(snap: Snapshot, points: float) -> list[Snapshot]:
    """The snapshot as it is and with every node's CPU read `points` cooler and hotter (within
    0..100), rebuilt from the loads' figures here rather than by the judge's margin.py."""
    out = [snap]
    for shift in (-points, points) if points else ():
        loads = {
            name: cpu_load(min(max(load.metrics[CPU].avg + shift, 0.0), 100.0))
            for name, load in snap.loads.items()
        }
        out.append(Snapshot(snap.nodes, loads, snap.now, snap.recent_cpu_m, snap.cluster))
    return out


def misjudged(
    move: Move,
    replacement: PodInfo,
    snap: Snapshot,
    when: str,
    s: settings.RebalancerSettings,
    hot: set[str],
) -> str:
    """Why the scheduler, on the snapshot as it is, might not let the move stand: the target
    fails the filters; or, with each node's CPU read up to `loadMargin` off (each node at its
    lowest and highest score over the readings), the source's highest is not more than
    `scoreMargin` under the best lowest of the nodes that are neither the source nor hot, or a
    hot node's highest reaches it. "" when the move stands, or when nothing is feasible (`when`
    "terminating": the replacement then waits for the deletion)."""
    feasible, why = PROFILE.filter(replacement, list(snap.nodes.values()), snap, CycleState())
    names = [n.name for n in feasible]
    if not names and when == "terminating":
        return ""
    if move.target not in names:
        return f"{move.pod.key} -> {move.target} {when}: {why.get(move.target)}"
    if len(names) < 2:
        return ""
    scored = [
        PROFILE.score(replacement, feasible, r, CycleState()) for r in readings(snap, s.load_margin)
    ]
    low = {n: min(sc[n] for sc in scored) for n in names}
    high = {n: max(sc[n] for sc in scored) for n in names}
    best = max(low[n] for n in names if n != move.source and n not in hot)
    for n in names:
        apart = s.score_margin if n == move.source else 0
        if (n == move.source or n in hot) and best - high[n] <= apart:
            return f"{move.pod.key} {when}: {n} may score {high[n]}, the best other {best} {scored}"
    return ""


def violations(
    plan: Plan, snap: Snapshot, s: settings.RebalancerSettings, hot: set[str]
) -> list[str]:
    """Each planned move replayed in order on the snapshot, the earlier moves' replacements on
    their targets (with their predicted CPU as recently bound): with the victims deleted, the
    target must pass the profile's filters and neither the source nor a hot node may be the
    scheduler's pick with the CPU read up to the load margin off (`misjudged`); the same with
    the victims terminating, unless nothing is feasible then."""
    found = []
    edits: list[TrialEdit] = []
    recent = dict(snap.recent_cpu_m)
    try:
        for move in plan.moves:
            gone = TrialEdit(snap, snap.nodes[move.source])
            edits.append(gone)
            gone.remove(move.pod)
            replacement = replacement_of(move.pod)
            found.append(misjudged(move, replacement, snap, "deleted", s, hot))
            with ExitStack() as dies:
                for victim in plan.moves[: plan.moves.index(move) + 1]:
                    dying = dies.enter_context(TrialEdit(snap, snap.nodes[victim.source]))
                    dying.add(terminating(victim.pod))
                found.append(misjudged(move, replacement, snap, "terminating", s, hot))
            arrive = TrialEdit(snap, snap.nodes[move.target])
            edits.append(arrive)
            arrive.add(replacement)
            snap.recent_cpu_m[move.target] = snap.recent_cpu_m.get(move.target, 0) + (
                ESTIMATOR.use(replacement, CPU)
            )
    finally:
        for edit in reversed(edits):
            edit.restore()
        snap.recent_cpu_m.clear()
        snap.recent_cpu_m.update(recent)
    return [f for f in found if f]


@pytest.mark.parametrize("chart", [False, True])
def test_the_margin_scores_each_node_at_its_worst_reading_as_the_whole_profile_would(chart):
    # margin.py scores again only the plugins that read loads and keeps the others' part, and
    # for the chart's profile (LoadVariationRiskBalancing, whose score falls with use) reads
    # the loads once, each node the way against the move; the whole profile on each reading,
    # here, must give the same lowest and highest per node.
    profile = chart_profile()[0] if chart else PROFILE
    checked = moved = 0
    for seed in range(40):
        snap, _, _ = random_state(seed)
        for node in snap.nodes.values():
            for pod in list(node.pods.values())[:2]:
                pending = replacement_of(pod)
                feasible, _ = profile.filter(pending, list(snap.nodes.values()), snap, CycleState())
                if len(feasible) < 2:
                    continue
                parts = ScoreParts()
                profile.score(pending, feasible, snap, CycleState(), parts)
                favoured = set(parts.names[::2])
                seen = LoadMargin(snap.loads, 5.0).worst(
                    profile, pending, feasible, snap, parts, favoured
                )
                scored = [
                    profile.score(pending, feasible, r, CycleState()) for r in readings(snap, 5.0)
                ]
                want = {
                    n: (min if n in favoured else max)(sc[n] for sc in scored) for n in parts.names
                }
                assert seen == want, seed
                checked += 1
                moved += seen != dict(zip(parts.names, parts.totals.tolist(), strict=True))
    assert checked >= 100 and moved >= checked // 2, (checked, moved)


def test_approved_moves_are_feasible_and_not_best_at_home_within_the_load_margin():
    moves = refused = 0
    kinds: set[str] = set()
    bad: list[str] = []
    for seed in (*range(STATES), *FOUND):
        snap, s, features = random_state(seed)
        view = view_of(snap)
        before = {n: set(i.pods) for n, i in snap.nodes.items()}
        plan = Judge(PROFILE, s, ESTIMATOR, lambda w: False).plan(view, hot_nodes(view), snap)
        assert {n: set(i.pods) for n, i in snap.nodes.items()} == before, seed
        hot = set(hot_nodes(view))
        bad += [f"seed {seed}: {v}" for v in violations(plan, snap, s, hot)]
        moves += len(plan.moves)
        kinds.update(k for m in plan.moves for k in features[m.pod.key])
        refused += sum(s.reason in (NO_TARGET, GOES_BACK) and s.pod != "" for s in plan.skips)
    assert bad == []
    # Not vacuous: many moves approved, many refused by the filters or the scores.
    assert moves >= STATES // 2 and refused >= STATES // 2, (moves, refused)
    # ... and moved pods of every constraint kind a pod that fits somewhere can have (a
    # missing or unbound claim, or a pod too big for any node, keeps it off every node).
    unplaceable = {"pvc-missing", "pvc-unbound", "fits-nowhere"}
    placeable = {n for n, _, _ in scenario.FEATURES} - unplaceable
    assert kinds >= placeable, placeable - kinds
