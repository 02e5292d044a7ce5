"""The cache's bookkeeping, fed watch events directly (the reflectors are tested on the sandbox)."""

from __future__ import annotations

import pytest
from kubernetes import client

from scheduler.backend.cache import ASSUME_GRACE, ClusterCache, take_snapshot
from scheduler.backend.recent import RecentlyBound
from scheduler.framework.labels import LabelSelector
from scheduler.framework.resources import pod_info


class Recorder:
    def __init__(self) -> None:
        self.pending: list[str] = []
        self.gone: list[str] = []
        self.bound: list[str] = []
        self.changes = 0

    def pod_pending(self, pod) -> None:
        self.pending.append(pod.name)

    def pod_gone(self, uid) -> None:
        self.gone.append(uid)

    def pod_bound(self, pod) -> None:
        self.bound.append(pod.name)

    def cluster_changed(self) -> None:
        self.changes += 1


def node(name: str, cpu: str = "2", labels: dict | None = None, ready: bool = True) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}, "resourceVersion": "1"},
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": "4Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name: str, node_name: str = "", scheduler: str = "ballast", cpu: str = "500m") -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "schedulerName": scheduler,
            "nodeName": node_name or None,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


@pytest.fixture
def cache():
    rec = Recorder()
    c = ClusterCache(client.ApiClient(client.Configuration()), ["ballast"], rec)
    c._node_event("ADDED", node("n1"))
    c._node_event("ADDED", node("n2"))
    c.rec = rec
    return c


def test_pending_pods_of_our_names_only(cache):
    cache._pod_event("ADDED", pod("ours"))
    cache._pod_event("ADDED", pod("theirs", scheduler="default-scheduler"))
    assert cache.rec.pending == ["ours"]


def test_bound_pods_count_on_their_node_whoever_bound_them(cache):
    cache._pod_event("ADDED", pod("a", "n1", scheduler="default-scheduler"))
    cache._pod_event("MODIFIED", pod("a", "n1", scheduler="default-scheduler"))
    assert cache.nodes["n1"].requested["cpu"] == 500
    cache._pod_event("DELETED", pod("a", "n1"))
    assert cache.nodes["n1"].requested.get("cpu", 0) == 0


def test_assumed_pod_counts_at_once_and_forget_undoes_it(cache):
    cache._pod_event("ADDED", pod("a"))
    p = pod_info(pod("a"))
    assert cache.assume(p, "n2")
    assert cache.nodes["n2"].requested["cpu"] == 500
    cache._pod_event("MODIFIED", pod("a"))  # the watch lags behind: still pending there
    assert cache.rec.pending == ["a"]  # not queued a second time
    cache.forget(p)
    assert cache.nodes["n2"].requested.get("cpu", 0) == 0


def test_confirmed_binding_replaces_the_assumption(cache):
    p = pod_info(pod("a"))
    cache.assume(p, "n1")
    cache._pod_event("MODIFIED", pod("a", "n1"))
    assert not cache.is_assumed(p.uid)
    cache.forget(p)  # too late: the API says it is bound
    assert cache.nodes["n1"].requested["cpu"] == 500


def test_terminal_pods_free_their_node(cache):
    cache._pod_event("ADDED", pod("a", "n1"))
    done = pod("a", "n1")
    done["status"]["phase"] = "Succeeded"
    cache._pod_event("MODIFIED", done)
    assert cache.nodes["n1"].requested.get("cpu", 0) == 0
    assert "uid-a" in cache.rec.gone


def test_node_changes_that_filters_see_wake_the_queue(cache):
    before = cache.rec.changes
    cache._node_event("MODIFIED", node("n1"))  # a heartbeat: nothing a filter reads
    assert cache.rec.changes == before
    cache._node_event("MODIFIED", node("n1", labels={"zone": "a"}))
    assert cache.rec.changes == before + 1


def test_pods_survive_their_node_being_recreated(cache):
    cache._pod_event("ADDED", pod("a", "n1"))
    cache._node_event("DELETED", node("n1"))
    cache._node_event("ADDED", node("n1", cpu="4"))
    assert cache.nodes["n1"].requested["cpu"] == 500
    assert cache.nodes["n1"].allocatable["cpu"] == 4000


def test_relist_drops_what_disappeared(cache):
    cache._pod_event("ADDED", pod("a", "n1"))
    cache._pod_event("ADDED", pod("b", "n1"))
    cache._pod_event("ADDED", pod("pending"))
    cache._replace_pods([pod("b", "n1")])
    assert set(cache.nodes["n1"].pods) == {"uid-b"}
    assert {"uid-a", "uid-pending"} <= set(cache.rec.gone)
    cache._replace_nodes([node("n2")])
    assert set(cache.nodes) == {"n2"}


def test_relist_keeps_fresh_assumptions_and_drops_stale_ones(cache):
    fresh, stale = pod_info(pod("fresh")), pod_info(pod("stale"))
    cache.assume(stale, "n1")
    cache._assumed_at[stale.uid] -= ASSUME_GRACE + 1  # its bind ended long ago
    cache.assume(fresh, "n1")
    cache._replace_pods([])  # neither pod is in the new list
    assert set(cache.nodes["n1"].pods) == {fresh.uid}
    assert cache.is_assumed(fresh.uid) and not cache.is_assumed(stale.uid)


def test_malformed_node_and_pod_are_skipped_and_counted(cache):
    bad_node = node("n3")
    bad_node["spec"] = {"taints": "not-a-list"}
    cache._replace_nodes([node("n1"), bad_node, node("n4")])
    assert sorted(cache.nodes) == ["n1", "n4"]
    bad_pod = pod("bad")
    bad_pod["spec"]["containers"] = "x"
    cache._pod_event("ADDED", bad_pod)
    cache._pod_event("ADDED", pod("good"))
    assert cache.rec.pending == ["good"]
    assert cache.stats()["skipped_objects"] == 2


def test_gated_pod_waits_until_its_gate_is_removed(cache):
    gated = pod("g")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
    cache._pod_event("ADDED", gated)
    assert cache.rec.pending == [] and cache.stats()["gated_pods"] == 1
    cache._pod_event("MODIFIED", pod("g"))
    assert cache.rec.pending == ["g"] and cache.stats()["gated_pods"] == 0


def test_relabelled_bound_pod_updates_the_index(cache):
    first = pod("a", "n1")
    first["metadata"]["labels"] = {"app": "x"}
    cache._pod_event("ADDED", first)
    assert cache.index.with_label("ns", "app", "x") == {"uid-a"}
    relabelled = pod("a", "n1")
    relabelled["metadata"]["labels"] = {"app": "y"}
    cache._pod_event("MODIFIED", relabelled)
    assert cache.index.with_label("ns", "app", "x") == frozenset()
    assert cache.index.with_label("ns", "app", "y") == {"uid-a"}
    assert cache.nodes["n1"].requested["cpu"] == 500  # counted once


def test_spread_counts_follow_pods_and_relabelled_nodes(cache):
    """The index's per-zone counts read the cache's own nodes: a relabelled, new or deleted
    node redraws them; a status-only update keeps them."""
    cache._node_event("MODIFIED", node("n1", labels={"zone": "a"}))
    cache._node_event("MODIFIED", node("n2", labels={"zone": "b"}))
    for name, where in (("a", "n1"), ("b", "n2"), ("c", "n2")):
        body = pod(name, where)
        body["metadata"]["labels"] = {"app": "x"}
        cache._pod_event("ADDED", body)
    counts = cache.index.selector_counts("ns", LabelSelector.parse({"matchLabels": {"app": "x"}}))
    assert counts.by_node == {"n1": 1, "n2": 2}
    assert cache.index.value_counts(counts, "zone") == {"a": 1, "b": 2}
    cache._node_event("MODIFIED", node("n2", cpu="3", labels={"zone": "b"}))
    assert counts.by_value == {"zone": {"a": 1, "b": 2}}  # status only: kept
    cache._node_event("MODIFIED", node("n2", labels={"zone": "a"}))
    assert cache.index.value_counts(counts, "zone") == {"a": 3}
    cache._node_event("DELETED", node("n1"))
    assert cache.index.value_counts(counts, "zone") == {"a": 2}
    terminating = pod("c", "n2")
    terminating["metadata"]["labels"] = {"app": "x"}
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    cache._pod_event("MODIFIED", terminating)
    assert counts.by_node == {"n1": 1, "n2": 1}  # n1's pod waits for its node to come back
    assert cache.index.value_counts(counts, "zone") == {"a": 1}


def test_a_node_cordoned_tainted_or_not_ready_after_a_cycle_is_filtered_out(cache):
    """The filters skip their pass while no node is cordoned, not ready or tainted (a memo
    in the index); a node that becomes one after that memo was made is still rejected."""
    from scheduler.config.loader import parse_config
    from scheduler.config.profiles import build_profiles
    from scheduler.framework import CycleState

    profile = build_profiles(parse_config({}))["ballast"]
    incoming = pod_info(pod("p"))

    def rejected() -> dict[str, list[str]]:
        snap = take_snapshot(cache, {}, RecentlyBound(), 0.0)
        _, reasons = profile.filter(incoming, cache.node_list(), snap, CycleState())
        return reasons

    assert rejected() == {}
    changes = [
        ({"spec": {"unschedulable": True}}, "node(s) were unschedulable"),
        ({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}, "untolerated taint(s)"),
        ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "not ready"),
    ]
    for change, reason in changes:
        doc = node("n2")
        for part, fields in change.items():
            doc[part] |= fields
        cache._node_event("MODIFIED", doc)
        assert list(rejected()) == ["n2"] and reason in rejected()["n2"][0]
        cache._node_event("MODIFIED", node("n2"))
        assert rejected() == {}
