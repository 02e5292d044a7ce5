"""The rebalancer's decisions as pure functions: classification, streaks, victims, limits, and
the judgement on a snapshot with the default profile."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.profiles import build_profiles
from scheduler.framework import MetricStats, NodeLoad, PodInfo
from scheduler.framework.clusterindex import REPLICA_SETS
from scheduler.framework.errors import ConfigError
from scheduler.framework.resources import node_info, pod_info
from scheduler.framework.snapshot import snapshot_of
from scheduler.rebalancer import limits, rest, settings, victims
from scheduler.rebalancer.classify import COLD, HOT, NORMAL, UNKNOWN, HotStreaks, classify
from scheduler.rebalancer.judge import GOES_BACK, NO_TARGET, Judge
from scheduler.rebalancer.settings import DEVIATION, ResourceRule


def load(cpu: float, state: str = "fresh", sample: float = 100.0, p95: float | None = None):
    m = MetricStats(cpu, 1.0, cpu, state, 1.0, sample, p95=p95, expiry=120.0)
    return NodeLoad({"cpu": m}, "ballast")


def pod(
    name: str,
    cpu: str = "500m",
    owner: str | None = "ReplicaSet",
    priority: int = 0,
    ns: str = "app",
    limits_: dict[str, str] | None = None,
    **spec: Any,
) -> PodInfo:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": f"{name}-owner", "controller": True}]
    res: dict[str, Any] = {"requests": {"cpu": cpu}} if cpu else {}
    if limits_:
        res["limits"] = limits_
    body = {
        "metadata": meta,
        "spec": {
            "schedulerName": "ballast",
            "priority": priority,
            "containers": [{"name": "c", "resources": res}],
            **spec,
        },
        "status": {"phase": "Running"},
    }
    return pod_info(body)


def node(name: str, cpu: str = "4"):
    return node_info(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {
                "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


RULES = (ResourceRule("cpu", "avg", 80.0, 50.0),)


# --- config -------------------------------------------------------------------------------
def test_config_splits_the_scheduler_file_and_refuses_typos():
    cfg = settings.parse(
        {
            "watcherAddress": "http://w:2020",
            "profiles": [{"schedulerName": "ballast"}],
            "rebalancer": {
                "resources": [{"name": "cpu", "statistic": "p95", "high": 70, "low": 40}],
                "consecutive": 4,
                "dryRun": True,
            },
        }
    )
    assert cfg.scheduler.watcher_address == "http://w:2020"
    assert cfg.rebalancer.profile == "ballast"
    assert cfg.rebalancer.rules == (ResourceRule("cpu", "p95", 70.0, 40.0),)
    assert cfg.rebalancer.consecutive == 4 and cfg.rebalancer.dry_run
    with pytest.raises(ConfigError, match="rebalancer.maxPerNodes: unknown field"):
        settings.parse({"rebalancer": {"maxPerNodes": 2}})
    with pytest.raises(ConfigError, match="low: must be below high"):
        settings.parse({"rebalancer": {"resources": [{"name": "cpu", "high": 50, "low": 60}]}})
    with pytest.raises(ConfigError, match="no profile 'other'"):
        settings.parse({"rebalancer": {"profile": "other"}})


# --- classification and streaks -----------------------------------------------------------
def test_classify_absolute_and_only_fresh_data_counts():
    loads = {
        "hot": load(90),
        "cold": load(20),
        "mid": load(60),
        "stale": load(99, state="stale"),
        "expired": load(99, state="expired"),
    }
    view = classify([*loads, "missing"], loads, RULES, settings.ABSOLUTE)
    assert view.state == {
        "hot": HOT,
        "cold": COLD,
        "mid": NORMAL,
        "stale": UNKNOWN,
        "expired": UNKNOWN,
        "missing": UNKNOWN,
    }
    assert view.why_unknown == {"stale": "stale", "expired": "expired", "missing": "missing"}
    assert view.excess("hot") == pytest.approx({"cpu": 10.0})


def test_classify_by_statistic_and_by_deviation_from_the_mean():
    loads = {"a": load(50, p95=85), "b": load(50, p95=60)}
    p95 = (ResourceRule("cpu", "p95", 80.0, 50.0),)
    assert classify(loads, loads, p95, settings.ABSOLUTE).state["a"] == HOT
    assert classify(loads, loads, RULES, settings.ABSOLUTE).state["a"] == NORMAL
    loads = {"a": load(70), "b": load(30), "c": load(20)}  # mean 40
    dev = (ResourceRule("cpu", "avg", 20.0, 15.0),)
    view = classify(loads, loads, dev, DEVIATION)
    assert view.high["cpu"] == pytest.approx(60.0) and view.low["cpu"] == pytest.approx(25.0)
    assert view.state == {"a": HOT, "b": NORMAL, "c": COLD}


def test_streak_counts_new_samples_only_and_breaks_on_stale_data():
    streaks = HotStreaks()

    def observe(cpu: float, sample: float, state: str = "fresh") -> int:
        loads = {"n": load(cpu, state=state, sample=sample)}
        streaks.observe(classify(["n"], loads, RULES, settings.ABSOLUTE))
        return streaks.count.get("n", 0)

    assert observe(90, 1) == 1
    assert observe(90, 1) == 1  # the same window read again
    assert observe(90, 2) == 2
    assert observe(90, 3, state="stale") == 0
    assert observe(90, 4) == 1
    assert observe(90, 5) == 2 and streaks.confirmed(2) == ["n"]
    streaks.reset("n")
    assert observe(90, 5) == 0  # after an eviction: the old sample does not count again
    assert observe(70, 6) == 0


# --- victims ------------------------------------------------------------------------------
def test_eligibility():
    s = settings.RebalancerSettings()
    assert victims.ineligible(pod("rs"), s) == ""
    assert victims.ineligible(pod("sts", owner="StatefulSet"), s) == ""
    assert victims.ineligible(pod("ds", owner="DaemonSet"), s) == victims.DAEMONSET
    assert victims.ineligible(pod("bare", owner=None), s) == victims.BARE
    assert victims.ineligible(pod("job", owner="Job"), s) == victims.JOBS
    jobs = settings.RebalancerSettings(evict_jobs=True)
    assert victims.ineligible(pod("job", owner="Job"), jobs) == ""
    assert victims.ineligible(pod("sys", ns="kube-system"), s) == victims.EXCLUDED
    assert victims.ineligible(pod("crit", priority=2_000_000_000), s) == victims.CRITICAL
    critical_class = pod("crit2", priorityClassName="system-node-critical")
    assert victims.ineligible(critical_class, s) == victims.CRITICAL
    scratch = pod("tmp", volumes=[{"name": "v", "emptyDir": {}}])
    assert victims.ineligible(scratch, s) == victims.LOCAL_STORAGE
    local = settings.RebalancerSettings(evict_local_storage=True)
    assert victims.ineligible(scratch, local) == ""
    mirror = pod("static")
    mirror.raw["metadata"]["annotations"] = {victims.MIRROR_ANNOTATION: "x"}
    assert victims.ineligible(mirror, s) == victims.MIRROR


def test_victim_order_priority_qos_then_cover():
    n = node("n")
    est = victims.Estimator()
    high_prio = pod("high", cpu="100m", priority=10)
    guaranteed = pod("guaranteed", cpu="", limits_={"cpu": "1", "memory": "1Gi"})
    small = pod("small", cpu="200m")  # 300m predicted: 7.5 %
    covers = pod("covers", cpu="400m")  # 600m: 15 %
    big = pod("big", cpu="1200m")  # 1800m: 45 %
    ordered = victims.order(
        [high_prio, guaranteed, big, small, covers],
        {"cpu": 10.0},
        lambda p, r: est.percent(p, n, r),
    )
    # covers just covers the 10-point excess; big covers it too but moves more; small alone
    # does not; Guaranteed after Burstable; higher priority last.
    assert [p.name for p in ordered] == ["covers", "big", "small", "guaranteed", "high"]


# --- limits -------------------------------------------------------------------------------
def test_round_budget_and_token_bucket_and_cooldown():
    s = settings.RebalancerSettings(max_per_node=1, max_per_namespace=2, max_per_round=3)
    b = limits.RoundBudget(s)
    w = [victims.Workload("ReplicaSet", "a", str(i)) for i in range(4)]
    assert b.refusal("n1", "a", w[0]) == ""
    b.spend("n1", "a", w[0])
    assert b.refusal("n1", "a", w[1]) == limits.PER_NODE
    assert b.refusal("n2", "a", w[0]) == limits.PER_WORKLOAD
    b.spend("n2", "a", w[1])
    assert b.refusal("n3", "a", w[2]) == limits.PER_NAMESPACE
    b.spend("n3", "b", w[2])
    assert b.refusal("n4", "c", w[3]) == limits.PER_ROUND

    now = [0.0]
    bucket = limits.TokenBucket(6.0, 2, clock=lambda: now[0])  # one per 10 s, burst 2
    assert bucket.take() and bucket.take() and not bucket.take()
    now[0] = 10.0
    assert bucket.take() and not bucket.take()

    c = rest.Cooldowns()
    c.start("n", 100.0, 60.0)
    assert c.active("n", 159.0) and not c.active("n", 161.0)


def test_workload_busy_until_its_controller_is_whole_again():
    index = snapshot_of([]).cluster
    w = victims.Workload("ReplicaSet", "app", "web-1")
    in_flight = limits.InFlight()
    rs = {
        "metadata": {"name": "web-1", "namespace": "app", "generation": 1},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3},
    }
    assert limits.workload_busy(w, index, in_flight)  # unknown controller: hands off
    index.put(REPLICA_SETS, "app/web-1", rs)
    assert not limits.workload_busy(w, index, in_flight)
    rs["status"]["readyReplicas"] = 2
    assert limits.workload_busy(w, index, in_flight)
    rs["status"]["readyReplicas"] = 3
    victim = pod("web-1-a")
    index.add_pod(victim, "n1")
    in_flight.add(w, victim.uid)
    assert limits.workload_busy(w, index, in_flight)  # our evicted pod is still placed
    index.remove_pod(victim.uid)
    assert not limits.workload_busy(w, index, in_flight)


# --- the judgement ------------------------------------------------------------------------
def profile():
    cfg = settings.parse({"profiles": [{"schedulerName": "ballast"}]})
    return build_profiles(cfg.scheduler)["ballast"]


def judge(**kw: Any) -> Judge:
    s = settings.RebalancerSettings(**kw)
    p = profile()
    return Judge(p, s, victims.Estimator.for_profile(p), lambda w: False)


def scene(loads: dict[str, float], placed: list[tuple[PodInfo, str]], cpu: str = "4"):
    nodes = [node(n, cpu) for n in loads]
    snap = snapshot_of(nodes, placed, {n: load(v) for n, v in loads.items()})
    view = classify(list(loads), snap.loads, RULES, settings.ABSOLUTE)
    return snap, view


def test_moves_go_to_cold_nodes_and_count_on_their_targets():
    # hot at 95 %: two 600m pods (900m predicted, 22.5 % each) must leave to get under 80.
    a, b = pod("a", cpu="600m"), pod("b", cpu="600m")
    snap, view = scene({"hot": 95, "cold1": 40, "cold2": 45, "mid": 70}, [(a, "hot"), (b, "hot")])
    plan = judge(max_per_node=2).plan(view, ["hot"], snap)
    assert [m.pod.name for m in plan.moves] == ["a"]  # 95 - 22.5 = 72.5: relieved after one
    assert plan.moves[0].target in ("cold1", "cold2")
    assert plan.moves[0].source_after["cpu"] == pytest.approx(72.5)
    # Nothing of the plan stays in the cache's objects.
    assert set(snap.nodes["hot"].pods) == {a.uid, b.uid}
    assert not snap.nodes["cold1"].pods and not snap.nodes["cold2"].pods

    # 99 %: both must go; the second cannot count on the headroom the first took.
    snap, view = scene({"hot": 120, "cold": 45, "mid": 70}, [(a, "hot"), (b, "hot")])
    plan = judge(max_per_node=2).plan(view, ["hot"], snap)
    assert [(m.pod.name, m.target) for m in plan.moves] == [("a", "cold")]
    assert plan.moves[0].target_after["cpu"] == pytest.approx(67.5)
    assert any(s.pod == "app/b" and s.reason == NO_TARGET for s in plan.skips)


def test_no_move_when_nothing_fits_anywhere_cooler():
    big = pod("big", cpu="2")  # 3000m predicted: 75 % of a 4-CPU node
    snap, view = scene({"hot": 95, "cold": 30}, [(big, "hot")])
    plan = judge().plan(view, ["hot"], snap)
    assert plan.moves == []
    assert [s.reason for s in plan.skips] == [NO_TARGET]
    # The filters decide too: a nodeSelector only the hot node matches.
    pinned = pod("pinned", cpu="300m", nodeSelector={"kubernetes.io/hostname": "hot"})
    snap, view = scene({"hot": 95, "cold": 30}, [(pinned, "hot")])
    plan = judge().plan(view, ["hot"], snap)
    assert plan.moves == [] and plan.skips[0].detail.startswith("0 of 1 candidates")


def test_no_move_when_the_scheduler_would_put_it_back():
    # A cold node fits, but the pod prefers the hot node (NodeAffinity, weight 2, outweighs
    # TargetLoadPacking): the replacement would likely land where it was; the pod stays.
    prefer_hot = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["hot"]}
                        ]
                    },
                }
            ]
        }
    }
    p = pod("p", cpu="300m", affinity=prefer_hot)
    snap, view = scene({"hot": 85, "cold": 30}, [(p, "hot")])
    plan = judge().plan(view, ["hot"], snap)
    assert plan.moves == []
    assert [s.reason for s in plan.skips] == [GOES_BACK]
    plain = pod("plain", cpu="300m")
    snap, view = scene({"hot": 85, "cold": 30}, [(plain, "hot")])
    assert [m.target for m in judge().plan(view, ["hot"], snap).moves] == ["cold"]


def test_ineligible_pods_are_never_planned():
    ds = pod("ds", owner="DaemonSet")
    bare = pod("bare", owner=None)
    snap, view = scene({"hot": 95, "cold": 20}, [(ds, "hot"), (bare, "hot")])
    plan = judge().plan(view, ["hot"], snap)
    assert plan.moves == []
    assert {s.reason for s in plan.skips} == {victims.DAEMONSET, victims.BARE, NO_TARGET}


def test_victims_use_the_workload_profile_when_the_watcher_has_one():
    from scheduler.framework.workloads import (
        Percentiles,
        RevisionProfile,
        WorkloadProfile,
        WorkloadProfiles,
    )

    p = pod("web-1", cpu="200m")  # owner ReplicaSet "web-1-owner", no template hash
    rev = RevisionProfile(50, 3, 0.0, Percentiles(600, 900, 1000), Percentiles(1, 2, 3))
    profiles = WorkloadProfiles(
        {"app/ReplicaSet/web-1-owner": WorkloadProfile("ReplicaSet", {"": rev})}
    )
    measured = victims.Estimator(profiles=lambda: profiles)
    assert measured.use(p, "cpu") == 900  # the profile's p95, not 200m x 1.5
    assert victims.Estimator().use(p, "cpu") == 300
