"""The rebalancer's safety rules as pure functions: which scheduler's pods it may move, the
opt-out and opt-in, minReplicas, a budget at its limit read from the cache, a 429's meaning,
and leadership as the elector reports it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client

from scheduler.config.profiles import build_profiles
from scheduler.framework.clusterindex import DEPLOYMENTS, NAMESPACES, PDBS, REPLICA_SETS
from scheduler.framework.errors import ConfigError
from scheduler.framework.resources import pod_info
from scheduler.framework.snapshot import snapshot_of
from scheduler.kube.leader import LeaderElector
from scheduler.rebalancer import evictions, limits, settings, victims
from scheduler.rebalancer.actor import (
    EVENT_TTL_S,
    MAX_REST_S,
    NOT_LEADING,
    THROTTLE_BACKOFF_S,
    THROTTLE_MAX_S,
)
from scheduler.rebalancer.classify import Classification
from scheduler.rebalancer.judge import Move, Plan
from scheduler.rebalancer.rounds import REPLANS
from scheduler.rebalancer.runtime import Options, Rebalancer
from tests.unit.test_rebalancer import pod

PROFILES = [{"schedulerName": "ballast"}, {"schedulerName": "ballast-batch"}]


def parse(section: dict[str, Any]) -> settings.RebalancerSettings:
    return settings.parse({"profiles": PROFILES, "rebalancer": section}).rebalancer


# --- config -------------------------------------------------------------------------------
def test_the_judged_schedulers_default_to_the_profile_and_must_be_profiles():
    assert parse({}).schedulers == ("ballast",)
    assert parse({"profile": "ballast-batch"}).schedulers == ("ballast-batch",)
    both = parse({"schedulers": ["ballast", "ballast-batch"]})
    assert both.schedulers == ("ballast", "ballast-batch")
    with pytest.raises(ConfigError, match="rebalancer.schedulers: no profile 'default-sched"):
        parse({"schedulers": ["ballast", "default-scheduler"]})
    with pytest.raises(ConfigError, match="at least one"):
        parse({"schedulers": []})


def test_min_relief_setting():
    assert parse({}).min_relief == 2.0
    assert parse({"minRelief": 0.5}).min_relief == 0.5
    with pytest.raises(ConfigError, match="minRelief"):
        parse({"minRelief": -1})


def test_load_margin_and_score_margin_settings():
    # The load margin on (one poll of the watcher's window, at most), the score margin off.
    assert (parse({}).load_margin, parse({}).score_margin) == (5.0, 0)
    s = parse({"loadMargin": 2.5, "scoreMargin": 10})
    assert (s.load_margin, s.score_margin) == (2.5, 10)
    assert parse({"loadMargin": 0}).load_margin == 0.0
    for bad in ({"loadMargin": -1}, {"loadMargin": 101}, {"loadMargin": "5%"}):
        with pytest.raises(ConfigError, match="loadMargin"):
            parse(bad)


def test_min_replicas_and_namespace_selector_settings():
    s = parse({})
    assert s.min_replicas == 2 and s.namespace_selector.everything
    s = parse({"minReplicas": 3, "namespaceSelector": {"matchLabels": {"rebalance": "on"}}})
    assert s.min_replicas == 3
    assert s.namespace_selector.matches({"rebalance": "on"})
    assert not s.namespace_selector.matches({})
    with pytest.raises(ConfigError, match="minReplicas"):
        parse({"minReplicas": 0})
    with pytest.raises(ConfigError, match="namespaceSelector"):
        parse({"namespaceSelector": {"rebalance": "on"}})  # labels without matchLabels
    with pytest.raises(ConfigError, match="namespaceSelector"):
        parse({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Maybe"}]}})


# --- victims ------------------------------------------------------------------------------
def test_only_pods_of_a_judged_scheduler_are_candidates():
    s = parse({})
    assert victims.ineligible(pod("mine"), s) == ""
    other = pod("theirs", schedulerName="default-scheduler")
    assert victims.ineligible(other, s) == victims.OTHER_SCHEDULER
    unnamed = pod("unnamed")
    del unnamed.raw["spec"]["schedulerName"]
    assert victims.ineligible(pod_info(unnamed.raw), s) == victims.OTHER_SCHEDULER
    batch = pod("batch", schedulerName="ballast-batch")
    assert victims.ineligible(batch, s) == victims.OTHER_SCHEDULER
    assert victims.ineligible(batch, parse({"schedulers": ["ballast", "ballast-batch"]})) == ""


def test_a_pod_annotated_false_opts_out():
    s = parse({})
    out = pod("out")
    out.raw["metadata"]["annotations"] = {victims.OPT_OUT_ANNOTATION: "False"}
    assert victims.ineligible(out, s) == victims.OPTED_OUT
    stays_in = pod("in")
    stays_in.raw["metadata"]["annotations"] = {victims.OPT_OUT_ANNOTATION: "true"}
    assert victims.ineligible(stays_in, s) == ""


def replica_set(name: str, replicas: int, annotations: dict | None = None, **labels: str):
    return {
        "metadata": {"name": name, "namespace": "app", "generation": 1},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": labels or {"app": name}, "annotations": annotations or {}}
            },
        },
        "status": {"observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas},
    }


def test_workload_rules_from_the_cache():
    index = snapshot_of([]).cluster
    s = parse({})
    w = victims.Workload("ReplicaSet", "app", "web")
    # Unknown to the cache: counts as one replica, under minReplicas 2.
    assert victims.workload_ineligible(w, index, s) == victims.FEW_REPLICAS
    index.put(REPLICA_SETS, "app/web", replica_set("web", 1))
    assert victims.workload_ineligible(w, index, s) == victims.FEW_REPLICAS
    index.put(REPLICA_SETS, "app/web", replica_set("web", 2))
    assert victims.workload_ineligible(w, index, s) == ""
    assert victims.workload_ineligible(w, index, parse({"minReplicas": 3})) == victims.FEW_REPLICAS
    # A Job's pods are allowed by evictJobs alone, whatever minReplicas says.
    job = victims.Workload("Job", "app", "once")
    assert victims.workload_ineligible(job, index, parse({"minReplicas": 1})) == ""
    assert victims.workload_ineligible(job, index, s) == ""
    # The template's opt-out annotation.
    index.put(
        REPLICA_SETS,
        "app/web",
        replica_set("web", 3, {victims.OPT_OUT_ANNOTATION: "false"}),
    )
    assert victims.workload_ineligible(w, index, s) == victims.OPTED_OUT
    index.put(REPLICA_SETS, "app/web", replica_set("web", 3))
    # The namespace selector: only namespaces that opt in.
    picky = parse({"namespaceSelector": {"matchLabels": {"rebalance": "on"}}})
    assert victims.workload_ineligible(w, index, picky) == victims.NOT_SELECTED
    index.put(NAMESPACES, "app", {"metadata": {"name": "app", "labels": {"rebalance": "off"}}})
    assert victims.workload_ineligible(w, index, picky) == victims.NOT_SELECTED
    index.put(NAMESPACES, "app", {"metadata": {"name": "app", "labels": {"rebalance": "on"}}})
    assert victims.workload_ineligible(w, index, picky) == ""


# --- limits -------------------------------------------------------------------------------
def pdb(name: str, allowed: int, selector: dict | None, generation: int = 1, observed: int = 1):
    return {
        "metadata": {"name": name, "namespace": "app", "generation": generation},
        "spec": {"selector": selector},
        "status": {"observedGeneration": observed, "disruptionsAllowed": allowed},
    }


def test_a_budget_at_its_limit_is_read_from_the_cache():
    index = snapshot_of([]).cluster
    w = victims.Workload("ReplicaSet", "app", "db")
    index.put(REPLICA_SETS, "app/db", replica_set("db", 3, app="db", tier="data"))
    assert limits.budget_at_limit(w, index) == ""
    index.put(PDBS, "app/other", pdb("other", 0, {"matchLabels": {"app": "web"}}))
    index.put(PDBS, "app/room", pdb("room", 1, {"matchLabels": {"app": "db"}}))
    assert limits.budget_at_limit(w, index) == ""
    index.put(PDBS, "app/null", pdb("null", 0, None))  # a null selector matches nothing
    assert limits.budget_at_limit(w, index) == ""
    index.put(PDBS, "app/stale", pdb("stale", 0, {"matchLabels": {"app": "db"}}, 2, 1))
    assert limits.budget_at_limit(w, index) == ""  # status older than spec: ask the server
    index.put(
        PDBS, "app/db", pdb("db", 0, {"matchExpressions": [{"key": "tier", "operator": "Exists"}]})
    )
    assert limits.budget_at_limit(w, index) == "db"
    index.drop(PDBS, "app/db")
    index.put(PDBS, "app/all", pdb("all", 0, {}))  # policy/v1: an empty selector matches all
    assert limits.budget_at_limit(w, index) == "all"


def test_set_asides_last_their_rest_period_and_in_flight_its_hold():
    r = limits.SetAside()
    w = victims.Workload("ReplicaSet", "app", "db")
    r.add(w.key, 100.0, evictions.PDB)
    r.add("uid-1", 50.0, evictions.FAILED)
    r.add("uid-1", 40.0, evictions.NO_ANSWER)  # an earlier end never shortens a set-aside
    assert r.why(w.key, 99.0) == evictions.PDB and r.why(w.key, 100.0) == ""
    assert r.why("uid-1", 45.0) == evictions.FAILED
    r.prune(101.0)
    assert r.until == {}

    bucket = limits.TokenBucket(60.0, 1, clock=lambda: 0.0)
    assert bucket.take() and not bucket.take()
    bucket.give_back()  # a refused request: its token is not spent
    assert bucket.take()

    now = [0.0]
    index = snapshot_of([]).cluster
    victim = pod("db-a")
    index.add_pod(victim, "n1")
    held = limits.InFlight(clock=lambda: now[0])
    held.add(w, victim.uid, hold=30.0)  # a dry run's pod never leaves: it holds 30 s
    now[0] = 29.0
    assert held.busy(w, index)
    now[0] = 31.0
    assert not held.busy(w, index)


# --- a 429's meaning ----------------------------------------------------------------------
def status_429(message: str, causes: list[dict] | None = None, retry: int | None = None) -> bytes:
    details: dict[str, Any] = {}
    if causes is not None:
        details["causes"] = causes
    if retry is not None:
        details["retryAfterSeconds"] = retry
    body = {"kind": "Status", "status": "Failure", "message": message, "code": 429}
    return json.dumps({**body, "reason": "TooManyRequests", "details": details}).encode()


def test_a_429_from_a_budget_is_pdb_and_any_other_is_throttling():
    budget = evictions.refusal(
        status_429(
            "Cannot evict pod as it would violate the pod's disruption budget.",
            [{"reason": "DisruptionBudget", "message": "The disruption budget db needs 2 healthy"}],
        )
    )
    assert budget.result == evictions.PDB and "budget db needs 2" in budget.detail
    throttled = evictions.refusal(status_429("Too many requests, please try again later.", retry=3))
    wrong_field = status_429("busy", [{"type": "DisruptionBudget"}])  # a cause's type is "reason"
    assert evictions.refusal(wrong_field).result == evictions.THROTTLED
    assert throttled.result == evictions.THROTTLED and throttled.retry_after == 3.0
    assert evictions.refusal(b"<html>busy</html>").result == evictions.THROTTLED
    assert evictions.refusal(status_429("slow down")).retry_after == 0.0


# --- leadership ---------------------------------------------------------------------------
def elector() -> LeaderElector:
    return LeaderElector(client.ApiClient(client.Configuration()), "ns", "lease", "me", 3, 2, 0.5)


def test_a_lease_seen_in_another_hands_ends_the_leadership_at_once():
    e = elector()
    lost: list[bool] = []
    e._on_lost = lambda: lost.append(True)
    e._renewed_at = time.monotonic()
    e._observed = ("me", "t1")
    assert e.is_leader()
    e._observed = ("intruder", "t2")  # what the next read saw
    assert not e.is_leader()  # before any deadline
    e._observed = ("me", "t1")
    e._renewed_at = time.monotonic() - 2.5  # past the renew deadline
    assert not e.is_leader()
    assert lost == []
    # confirm() renews on the spot; when the renewal finds another holder it is lost.
    e._renewed_at = time.monotonic()

    def taken() -> bool:
        e._observed = ("intruder", "t3")
        return False

    e._try_acquire_or_renew = taken  # type: ignore[method-assign]
    assert e.confirm(margin=0.5) == 0.0
    assert lost == [True] and not e.is_leader()


def test_confirm_keeps_the_margin_back():
    e = elector()
    e._renewed_at = time.monotonic()
    e._observed = ("me", "t1")
    e._try_acquire_or_renew = lambda: True  # type: ignore[method-assign]
    left = e.confirm(margin=0.5)
    assert 1.4 < left <= 1.5  # renew deadline 2 s less the margin
    assert e.confirm(margin=2.0) == 0.0  # no room for a call at all


# --- throttling: tried again, each time behind a confirmation -------------------------------
class Writer:
    """The rebalancer's writer replaced by a script of outcomes (the API server's answers are
    the sandbox tests' part); records the time budget each call was given."""

    def __init__(self, *outcomes: evictions.Outcome) -> None:
        self.outcomes = list(outcomes)
        self.within: list[float] = []

    def evict(self, pod: Any, within: float, dry_run: bool = False) -> evictions.Outcome:
        self.within.append(within)
        return self.outcomes.pop(0)


def offline_rebalancer(options: Options | None = None) -> Rebalancer:
    cfg = settings.parse(
        {"profiles": [{"schedulerName": "ballast"}], "leaderElection": {"leaderElect": False}}
    )
    api = client.ApiClient(client.Configuration())
    return Rebalancer(cfg, api, build_profiles(cfg.scheduler), options)


class Pauses:
    """The rebalancer's stop event, recording each pause it is asked to wait."""

    def __init__(self) -> None:
        self.waited: list[float] = []

    def wait(self, seconds: float) -> bool:
        self.waited.append(seconds)
        return False

    def is_set(self) -> bool:
        return False


def test_throttling_is_tried_again_after_its_retry_after_and_a_budget_is_not(monkeypatch):
    r = offline_rebalancer()
    pauses = Pauses()
    monkeypatch.setattr(r.actor, "stopping", pauses)
    slow = evictions.Outcome(evictions.THROTTLED, "slow down", retry_after=2.0)
    bare = evictions.Outcome(evictions.THROTTLED, "slow down")  # no retryAfterSeconds
    r.actor.writer = Writer(slow, bare, evictions.Outcome(evictions.EVICTED))
    assert r.actor.evict(pod("web")).result == evictions.EVICTED
    assert len(r.actor.writer.within) == 3
    # The server's retryAfterSeconds first, then the backoff (0.5 s doubled once).
    assert pauses.waited == [2.0, 2 * THROTTLE_BACKOFF_S]
    pauses.waited.clear()
    huge = evictions.Outcome(evictions.THROTTLED, "slow down", retry_after=60.0)
    r.actor.writer = Writer(huge, huge, huge, evictions.Outcome(evictions.EVICTED))
    assert r.actor.evict(pod("web")).result == evictions.THROTTLED  # three attempts, then skipped
    assert pauses.waited == [THROTTLE_MAX_S, THROTTLE_MAX_S]  # never longer than the cap
    r.actor.writer = Writer(
        evictions.Outcome(evictions.PDB, "budget"), evictions.Outcome(evictions.EVICTED)
    )
    assert r.actor.evict(pod("db")).result == evictions.PDB
    assert len(r.actor.writer.within) == 1  # a budget's refusal is not asked again


def test_no_eviction_call_without_a_confirmed_lease():
    r = offline_rebalancer()
    r.actor.writer = Writer(evictions.Outcome(evictions.EVICTED))

    class Elector:
        retry_period = 2.0
        margins: list[float] = []

        def confirm(self, margin: float) -> float:
            self.margins.append(margin)
            return 0.0

    r.elector = Elector()
    assert r.actor.evict(pod("web")).result == NOT_LEADING
    assert r.actor.writer.within == [] and Elector.margins == [2.0]


# --- the operator's own markers, QoS and the estimator's settings ---------------------------
def test_safe_to_evict_false_keeps_a_pod_where_it_is():
    s = parse({})
    kept = pod("kept")
    kept.raw["metadata"]["annotations"] = {victims.SAFE_TO_EVICT_ANNOTATION: "false"}
    assert victims.ineligible(kept, s) == victims.NOT_SAFE
    free = pod("free")
    free.raw["metadata"]["annotations"] = {victims.SAFE_TO_EVICT_ANNOTATION: "true"}
    assert victims.ineligible(free, s) == ""


def test_qos_is_the_status_else_computed_from_parsed_quantities():
    # Requests "1" and limits "1000m" are equal: Guaranteed, not Burstable.
    same = {"cpu": "1000m", "memory": "1Gi"}
    g = pod("g", cpu="1", limits_=same)
    g.raw["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1073741824"
    assert victims.qos_class(g) == "Guaranteed"
    assert victims.qos_class(pod("b", cpu="500m", limits_=same)) == "Burstable"
    assert victims.qos_class(pod("e", cpu="")) == "BestEffort"
    # The status says what the kubelet decided; it wins over the spec.
    told = pod("told", cpu="500m", limits_=same)
    told.raw["status"]["qosClass"] = "Guaranteed"
    assert victims.qos_class(told) == "Guaranteed"


def deployment_obj(name: str, annotations: dict | None = None, template: dict | None = None):
    return {
        "metadata": {"name": name, "namespace": "app", "annotations": annotations or {}},
        "spec": {"replicas": 3, "template": {"metadata": {"annotations": template or {}}}},
    }


def test_the_opt_out_is_read_up_the_owner_chain_from_the_cache():
    index = snapshot_of([]).cluster
    s = parse({})
    w = victims.Workload("ReplicaSet", "app", "web-5d8")
    rs = replica_set("web-5d8", 3)
    rs["metadata"]["ownerReferences"] = [{"kind": "Deployment", "name": "web", "controller": True}]
    index.put(REPLICA_SETS, "app/web-5d8", rs)
    assert victims.workload_ineligible(w, index, s) == ""
    index.put(DEPLOYMENTS, "app/web", deployment_obj("web"))
    assert victims.workload_ineligible(w, index, s) == ""
    out = {victims.OPT_OUT_ANNOTATION: "false"}
    index.put(DEPLOYMENTS, "app/web", deployment_obj("web", annotations=out))
    assert victims.workload_ineligible(w, index, s) == victims.OPTED_OUT  # on the Deployment
    index.put(DEPLOYMENTS, "app/web", deployment_obj("web", template=out))
    assert victims.workload_ineligible(w, index, s) == victims.OPTED_OUT  # on its template
    index.put(DEPLOYMENTS, "app/web", deployment_obj("web"))
    rs["metadata"]["annotations"] = out
    index.put(REPLICA_SETS, "app/web-5d8", rs)
    assert victims.workload_ineligible(w, index, s) == victims.OPTED_OUT  # on the ReplicaSet


def test_job_pods_move_with_evict_jobs_alone():
    job_pod = pod("once-x", owner="Job")
    assert victims.ineligible(job_pod, parse({})) == victims.JOBS
    assert victims.ineligible(job_pod, parse({"evictJobs": True})) == ""
    index = snapshot_of([]).cluster
    job = victims.Workload("Job", "app", "once")
    assert victims.workload_ineligible(job, index, parse({"evictJobs": True})) == ""


def test_the_estimator_takes_the_judging_profile_s_load_plugin():
    def profile(plugins: list[str], args: dict | None = None):
        doc = {
            "schedulerName": "ballast",
            "plugins": {"score": {"enabled": [{"name": p, "weight": 1} for p in plugins]}},
            "pluginConfig": [{"name": n, "args": a} for n, a in (args or {}).items()],
        }
        disabled = [
            p for p in ("TargetLoadPacking", "LoadVariationRiskBalancing") if p not in plugins
        ]
        doc["plugins"]["score"]["disabled"] = [{"name": p} for p in disabled]
        cfg = settings.parse({"profiles": [doc]})
        return build_profiles(cfg.scheduler)["ballast"]

    burstable = pod("web", cpu="400m")  # no limit
    # LoadVariationRiskBalancing alone (the chart's profile): the pod's request, no multiplier.
    lvrb = victims.Estimator.for_profile(profile(["LoadVariationRiskBalancing"]))
    assert lvrb.use(burstable, "cpu") == 400
    # TargetLoadPacking's rule with its own args: request x its multiplier.
    tlp = victims.Estimator.for_profile(
        profile(["TargetLoadPacking"], {"TargetLoadPacking": {"defaultRequestsMultiplier": "2"}})
    )
    assert tlp.use(burstable, "cpu") == 800


def test_a_node_rests_in_proportion_to_the_relief_and_never_past_the_event_ttl():
    r = offline_rebalancer()  # provider lag 15 s
    view = Classification(window={"n1": 300.0})
    web = pod("web")
    w = victims.Workload("ReplicaSet", "app", "web")

    def move(after: float) -> Move:
        high = {"cpu": 80.0}
        return Move(web, w, "n1", "n2", {"cpu": 92.0}, {"cpu": after}, {}, {}, {}, high)

    assert r.actor.rest(view, move(70.0)) == 315.0  # under high: the whole window
    assert r.actor.rest(view, move(83.0)) == 0.75 * 300 + 15  # 9 of 12 points
    assert r.actor.rest(view, move(91.0)) == 0.5 * 300 + 15  # never under half the window
    long = Classification(window={"n1": 7200.0})
    assert r.actor.rest(long, move(70.0)) == MAX_REST_S < EVENT_TTL_S


def test_a_node_whose_eviction_may_have_happened_is_not_planned_again(monkeypatch):
    """No answer, and the pod's state unknown: the node rests and the round does not take a
    second pod off it; a plain failure lets the round plan the node again."""
    r = offline_rebalancer()
    web = pod("web")
    w = victims.Workload("ReplicaSet", "app", "web")
    cpu = {"cpu": 10.0}
    move = Move(web, w, "n1", "n2", {"cpu": 92.0}, {"cpu": 70.0}, cpu, cpu, cpu, {"cpu": 80.0})
    view = Classification(window={"n1": 300.0})
    plans: list[list[str]] = []

    def plan(view_, nodes, *args, **kwargs):
        plans.append(list(nodes))
        return Plan(moves=[move])

    monkeypatch.setattr(r.rounds, "_plan", plan)
    for answer, replans in (("unknown", 1), ("there", REPLANS)):
        plans.clear()
        r.memory.cooldowns.until.clear()
        outcome = evictions.Outcome(
            evictions.NO_ANSWER, f"timeout; pod {answer}", maybe=answer == "unknown"
        )
        monkeypatch.setattr(r.actor, "evict", lambda pod, dry_run=False, o=outcome: o)
        monkeypatch.setattr(r.actor.writer, "intend", lambda *a: "")
        summary: dict = {"evicted": [], "wouldEvict": []}
        r.rounds.act(view, ["n1"], None, time.time(), {}, frozenset(), summary)
        assert len(plans) == replans, answer
        assert r.memory.cooldowns.active("n1", time.time()) == (answer == "unknown")
