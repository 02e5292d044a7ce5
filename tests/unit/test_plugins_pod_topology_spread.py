"""PodTopologySpread against upstream v1.34's own test vectors (filtering_test.go
TestPreFilterState, scoring_test.go TestPodTopologySpreadScore) and each option: policies,
minDomains, matchLabelKeys, system and List defaults, both reason texts."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from scheduler.framework import CycleState, NodeInfo, PodInfo, Status, snapshot_of
from scheduler.framework.errors import ConfigError
from scheduler.framework.fields import Fields
from scheduler.framework.labels import IN
from scheduler.framework.resources import node_info, pod_info
from scheduler.plugins import pod_topology_spread as pts

HOST = "kubernetes.io/hostname"
DNS, SA = "DoNotSchedule", "ScheduleAnyway"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def spread(skew: int, key: str, when: str, selector: Any = None, **extra: Any) -> dict:
    c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if selector is not None:
        c["labelSelector"] = selector
    return c


def pod(name: str, labels: dict | None = None, ns: str = "default", **spec: Any) -> PodInfo:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}
    meta["labels"] = labels or {}
    for key in ("ownerReferences", "deletionTimestamp"):
        if key in spec:
            meta[key] = spec.pop(key)
    return pod_info({"metadata": meta, "spec": {"containers": [], **spec}})


def foo_pod(name: str, **spec: Any) -> PodInfo:
    return pod(name, {"foo": ""}, **spec)


def node(name: str, taints: list | None = None, **labels: str) -> NodeInfo:
    labels = {k.replace("__", "/"): v for k, v in labels.items()}
    capacity = {"cpu": "8", "memory": "8Gi", "pods": "110"}
    return node_info(
        {
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints or []},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
    )


def hosts(*names: str) -> list[NodeInfo]:
    return [node(n, **{"kubernetes.io__hostname": n}) for n in names]


def zoned(spec: dict[str, str], **extra: str) -> list[NodeInfo]:
    """{node: zone} -> nodes labelled zone and node (upstream's test nodes)."""
    return [node(n, zone=z, node=n, **extra) for n, z in spec.items()]


def placed(spec: dict[str, int], labels: dict | None = None) -> list[tuple[PodInfo, str]]:
    """{node: count} -> that many matching pods on each node."""
    labels = {"foo": ""} if labels is None else labels
    return [(pod(f"p-{n}{i}", labels), n) for n, count in spec.items() for i in range(count)]


def filter_verdicts(
    plugin: pts.Plugin, p: PodInfo, nodes: list[NodeInfo], existing: list, build: Any = None
) -> dict[str, Status]:
    snap = (build or snapshot_of)(nodes, existing)
    state = CycleState()
    verdict = plugin.pre_filter(state, p, snap)
    assert verdict is not False
    one_by_one = {n.name: plugin.filter(state, p, n, snap) for n in nodes}
    batch = plugin.filter_all(state, p, nodes, snap)
    assert {nodes[i].name for i in batch} == {k for k, s in one_by_one.items() if not s.ok}
    assert all(batch[i] == one_by_one[nodes[i].name] for i in batch)
    return one_by_one


def scores(
    plugin: pts.Plugin,
    p: PodInfo,
    candidates: list[NodeInfo],
    existing: list,
    failed: list[NodeInfo] = (),  # type: ignore[assignment]
    build: Any = None,
) -> dict[str, int] | None:
    snap = (build or snapshot_of)([*candidates, *failed], existing)
    state = CycleState()
    if not plugin.pre_score(state, p, candidates, snap):
        return None
    raw = plugin.score_all(state, p, candidates, snap)
    assert raw == [plugin.score(state, p, n, snap) for n in candidates]
    out = dict(zip([n.name for n in candidates], raw, strict=True))
    plugin.normalize(state, p, out)
    return out


LIST = pts.Plugin(pts.Args(pts.LIST))
SYSTEM = pts.Plugin()


# --- PreFilter state: upstream's TestPreFilterState -------------------------------------
@pytest.mark.parametrize(
    ("name", "constraints", "nodes", "existing", "want"),
    [
        (
            "clean cluster with one spreadConstraint",
            [spread(5, "zone", DNS, {"matchLabels": {"foo": "bar"}})],
            {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"},
            {},
            [{"zone1": 0, "zone2": 0}],
        ),
        (
            "normal case with one spreadConstraint",
            [spread(1, "zone", DNS, FOO)],
            {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"},
            {"node-a": 2, "node-b": 1, "node-y": 2},
            [{"zone1": 3, "zone2": 2}],
        ),
        (
            "normal case with null label selector",
            [spread(1, "zone", DNS)],
            {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"},
            {"node-a": 2, "node-b": 1, "node-y": 2},
            [{"zone1": 0, "zone2": 0}],
        ),
        (
            "normal case with one spreadConstraint, on a 3-zone cluster",
            [spread(1, "zone", DNS, FOO)],
            {
                "node-a": "zone1",
                "node-b": "zone1",
                "node-x": "zone2",
                "node-y": "zone2",
                "node-o": "zone3",
                "node-p": "zone3",
            },
            {"node-a": 2, "node-b": 1, "node-y": 2},
            [{"zone1": 3, "zone2": 2, "zone3": 0}],
        ),
        (
            "normal case with two spreadConstraints",
            [spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)],
            {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"},
            {"node-a": 2, "node-b": 1, "node-y": 4},
            [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        ),
        (
            "soft spreadConstraints should be bypassed",
            [
                spread(1, "zone", SA, FOO),
                spread(1, "zone", DNS, FOO),
                spread(1, "node", SA, FOO),
                spread(1, "node", DNS, FOO),
            ],
            {"node-a": "zone1", "node-b": "zone1", "node-y": "zone2"},
            {"node-a": 2, "node-b": 1, "node-y": 4},
            [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        ),
    ],
)
def test_pre_filter_counts_match_upstream(name, constraints, nodes, existing, want):
    p = foo_pod("p", topologySpreadConstraints=constraints)
    snap = snapshot_of(zoned(nodes), placed(existing))
    parsed = pts._parse(p)
    assert pts.domain_counts(p, parsed.hard, parsed, snap) == want, name


def test_pods_of_other_namespaces_and_terminating_pods_do_not_count():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "zone", DNS, FOO)])
    nodes = zoned({"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"})
    existing = [
        (foo_pod("a1"), "node-a"),
        (foo_pod("a2", ns="ns1"), "node-a"),
        (foo_pod("b1"), "node-b"),
        (foo_pod("y1", ns="ns2"), "node-y"),
        (foo_pod("y2"), "node-y"),
        (foo_pod("y3", deletionTimestamp="2026-01-01T00:00:00Z"), "node-y"),
    ]
    parsed = pts._parse(p)
    counts = pts.domain_counts(p, parsed.hard, parsed, snapshot_of(nodes, existing))
    assert counts == [{"zone1": 2, "zone2": 1}]


def test_nodes_missing_any_key_are_left_out_of_every_domain():
    p = foo_pod(
        "p", topologySpreadConstraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)]
    )
    nodes = [
        *zoned({"node-a": "zone1"}),
        node("node-b", zone="zone2"),
        node("node-c", node="node-c"),
    ]
    parsed = pts._parse(p)
    snap = snapshot_of(nodes, placed({"node-a": 1, "node-b": 3, "node-c": 2}))
    assert pts.domain_counts(p, parsed.hard, parsed, snap) == [{"zone1": 1}, {"node-a": 1}]


# --- Filter ---------------------------------------------------------------------------
def test_skew_rejects_crowded_zones_with_upstream_reason():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "zone", DNS, FOO)])
    nodes = zoned({"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"})
    got = filter_verdicts(LIST, p, nodes, placed({"node-a": 2, "node-b": 1, "node-y": 2}))
    assert got["node-a"] == Status.reject(pts.REASON)
    assert got["node-b"].reason == "node(s) didn't match pod topology spread constraints"
    assert not got["node-b"].unresolvable  # upstream's Unschedulable: preemption may help
    assert got["node-x"].ok and got["node-y"].ok


def test_node_without_the_key_is_unresolvable_with_missing_label_reason():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "zone", DNS, FOO)])
    nodes = [*zoned({"node-a": "zone1"}), node("bare")]
    got = filter_verdicts(LIST, p, nodes, [])
    assert got["bare"] == Status.reject(
        "node(s) didn't match pod topology spread constraints (missing required label)",
        unresolvable=True,
    )
    assert got["node-a"].ok


def test_constraints_are_checked_in_order_first_failure_wins():
    cs = [spread(1, "zone", DNS, FOO), spread(1, "rack", DNS, FOO)]
    p = foo_pod("p", topologySpreadConstraints=cs)
    nodes = [node("a", zone="z1", rack="r1"), node("b", zone="z1"), node("c", zone="z2", rack="r2")]
    existing = placed({"a": 2})
    got = filter_verdicts(LIST, p, nodes, existing)
    assert got["b"].reason == pts.REASON  # zone fails before the missing rack is seen
    assert got["a"].reason == pts.REASON
    assert got["c"].ok


@pytest.mark.parametrize(("min_domains", "ok"), [(None, True), (3, True), (4, False)])
def test_min_domains_treats_global_minimum_as_zero(min_domains, ok):
    extra = {} if min_domains is None else {"minDomains": min_domains}
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "zone", DNS, FOO, **extra)])
    nodes = zoned({"a": "z1", "b": "z2", "c": "z3"})
    got = filter_verdicts(LIST, p, nodes, placed({"a": 2, "b": 2, "c": 2}))
    assert all(s.ok == ok for s in got.values())


def test_pod_not_matching_its_own_selector_adds_nothing():
    p = pod("p", {"other": "x"}, topologySpreadConstraints=[spread(1, "zone", DNS, FOO)])
    nodes = zoned({"a": "z1", "b": "z2"})
    got = filter_verdicts(LIST, p, nodes, placed({"a": 2, "b": 1}))
    assert got["a"].ok and got["b"].ok  # 2 + 0 - 1 <= 1
    got = filter_verdicts(
        LIST,
        foo_pod("q", topologySpreadConstraints=[spread(1, "zone", DNS, FOO)]),
        nodes,
        placed({"a": 2, "b": 1}),
    )
    assert not got["a"].ok and got["b"].ok


def test_empty_selector_counts_nothing_as_v1_34():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "zone", DNS, {})])
    nodes = zoned({"a": "z1", "b": "z2"})
    got = filter_verdicts(LIST, p, nodes, placed({"a": 5}))
    assert all(s.ok for s in got.values())


@pytest.mark.parametrize(("policy", "a_ok"), [(None, True), ("Honor", True), ("Ignore", False)])
def test_node_affinity_policy(policy, a_ok):
    extra = {} if policy is None else {"nodeAffinityPolicy": policy}
    p = foo_pod(
        "p",
        nodeSelector={"ssd": "yes"},
        topologySpreadConstraints=[spread(1, "zone", DNS, FOO, **extra)],
    )
    nodes = [node("a", zone="z1", ssd="yes"), node("x", zone="z2")]
    got = filter_verdicts(LIST, p, nodes, placed({"a": 1}))
    # Honor: zone z2 has no eligible node, so the minimum is zone z1's own count.
    assert got["a"].ok is a_ok
    assert got["x"].ok


def test_node_affinity_policy_honours_required_terms():
    term = {"matchExpressions": [{"key": "ssd", "operator": "In", "values": ["yes"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    p = foo_pod("p", affinity=affinity, topologySpreadConstraints=[spread(1, "zone", DNS, FOO)])
    nodes = [node("a", zone="z1", ssd="yes"), node("x", zone="z2")]
    assert filter_verdicts(LIST, p, nodes, placed({"a": 1}))["a"].ok


@pytest.mark.parametrize(("policy", "a_ok"), [(None, False), ("Ignore", False), ("Honor", True)])
def test_node_taints_policy(policy, a_ok):
    extra = {} if policy is None else {"nodeTaintsPolicy": policy}
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "zone", DNS, FOO, **extra)])
    nodes = [node("a", zone="z1"), node("x", [UNSCHEDULABLE_TAINT], zone="z2")]
    got = filter_verdicts(LIST, p, nodes, placed({"a": 1}))
    assert got["a"].ok is a_ok


def test_tolerated_taint_keeps_the_domain_under_honor():
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
    p = foo_pod(
        "p",
        tolerations=tol,
        topologySpreadConstraints=[spread(1, "zone", DNS, FOO, nodeTaintsPolicy="Honor")],
    )
    nodes = [node("a", zone="z1"), node("x", [UNSCHEDULABLE_TAINT], zone="z2")]
    assert not filter_verdicts(LIST, p, nodes, placed({"a": 1}))["a"].ok


def test_match_label_keys_narrow_the_group():
    c = spread(1, "zone", DNS, FOO, matchLabelKeys=["rev"])
    p = pod("p", {"foo": "", "rev": "2"}, topologySpreadConstraints=[c])
    nodes = zoned({"a": "z1", "b": "z2"})
    existing = placed({"a": 3}, {"foo": "", "rev": "1"}) + placed({"b": 1}, {"foo": "", "rev": "2"})
    got = filter_verdicts(LIST, p, nodes, existing)
    assert got["a"].ok  # the old revision's pods are not counted
    assert not got["b"].ok


def test_match_label_keys_already_merged_by_the_apiserver_are_not_added_twice():
    merged = {"matchExpressions": [{"key": "rev", "operator": "In", "values": ["2"]}]}
    c = spread(1, "zone", DNS, merged, matchLabelKeys=["rev"])
    (got,) = pts.constraints_of([c], {"rev": "2"}, DNS)
    assert got.selector.requirements == (("rev", IN, frozenset({"2"})),)
    (fresh,) = pts.constraints_of(
        [spread(1, "zone", DNS, {}, matchLabelKeys=["rev", "gone"])], {"rev": "2"}, DNS
    )
    assert fresh.selector.requirements == (("rev", IN, frozenset({"2"})),)


def test_pod_without_hard_constraints_has_nothing_to_filter():
    snap = snapshot_of(zoned({"a": "z1"}))
    assert LIST.pre_filter(CycleState(), foo_pod("p"), snap) is False
    soft = foo_pod("q", topologySpreadConstraints=[spread(1, "zone", SA, FOO)])
    assert SYSTEM.pre_filter(CycleState(), soft, snap) is False


# --- Score: upstream's TestPodTopologySpreadScore --------------------------------------
HOST_2103 = {"node-a": 2, "node-b": 1, "node-d": 3}
HOST_4321 = {"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}


@pytest.mark.parametrize(
    ("name", "constraints", "existing", "want"),
    [
        ("no existing pods", [spread(1, HOST, SA, FOO)], {}, [100, 100]),
        (
            "same number everywhere",
            [spread(1, HOST, SA, FOO)],
            {"node-a": 1, "node-b": 1},
            [100, 100],
        ),
    ],
)
def test_score_two_hosts(name, constraints, existing, want):
    p = foo_pod("p", topologySpreadConstraints=constraints)
    got = scores(SYSTEM, p, hosts("node-a", "node-b"), placed(existing))
    assert list(got.values()) == want, name


@pytest.mark.parametrize(
    ("skew", "selector", "existing", "want"),
    [
        (1, FOO, HOST_2103, [20, 60, 100, 0]),
        (1, None, HOST_2103, [100, 100, 100, 100]),
        (2, FOO, HOST_2103, [33, 66, 100, 16]),
        (3, FOO, HOST_4321, [44, 66, 77, 100]),
    ],
)
def test_score_four_hosts(skew, selector, existing, want):
    p = foo_pod("p", topologySpreadConstraints=[spread(skew, HOST, SA, selector)])
    got = scores(SYSTEM, p, hosts("node-a", "node-b", "node-c", "node-d"), placed(existing))
    assert list(got.values()) == want


def test_score_only_one_candidate_gets_100():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, HOST, SA, FOO)])
    got = scores(SYSTEM, p, hosts("node-a"), placed({"node-a": 2, "node-b": 1}), hosts("node-b"))
    assert got == {"node-a": 100}


def test_score_system_defaults_use_the_service_selector_without_zone_labels():
    p = foo_pod("p")
    nodes = hosts("node-a", "node-b", "node-c", "node-d")
    snap_objects = {
        "default/svc": {
            "metadata": {"name": "svc", "namespace": "default"},
            "spec": {"selector": {"foo": ""}},
        }
    }
    snap = snapshot_of(nodes, placed(HOST_4321))
    snap.cluster.objects[pts.SERVICES] = snap_objects
    state = CycleState()
    assert SYSTEM.pre_score(state, p, nodes, snap)
    got = {n.name: SYSTEM.score(state, p, n, snap) for n in nodes}
    SYSTEM.normalize(state, p, got)
    assert list(got.values()) == [44, 66, 77, 100]
    # No Service, no owner: no selector, no default constraints (upstream skips the plugin).
    assert not SYSTEM.pre_score(CycleState(), p, nodes, snapshot_of(nodes, placed(HOST_4321)))


def test_score_three_of_four_candidates():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, HOST, SA, FOO)])
    existing = placed({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3})
    got = scores(SYSTEM, p, hosts("node-a", "node-b", "node-x"), existing, hosts("node-y"))
    assert got == {"node-a": 33, "node-b": 83, "node-x": 100}
    # node-b without the key: ignored, scored 0, and the hostname weight counts 2 nodes
    cands = [*hosts("node-a"), node("node-b", n="node-b"), *hosts("node-x")]
    got = scores(SYSTEM, p, cands, existing, hosts("node-y"))
    assert got == {"node-a": 16, "node-b": 0, "node-x": 100}


def test_score_zone_three_of_four_candidates():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "zone", SA, FOO)])
    existing = placed({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3})
    cands = [
        node(n, zone=z, **{"kubernetes.io__hostname": n})
        for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"))
    ]
    failed = [node("node-y", zone="zone2", **{"kubernetes.io__hostname": "node-y"})]
    assert scores(SYSTEM, p, cands, existing, failed) == {"node-a": 75, "node-b": 75, "node-x": 100}


def _zone_host(spec: dict[str, str]) -> list[NodeInfo]:
    return [node(n, zone=z, **{"kubernetes.io__hostname": n}) for n, z in spec.items()]


def test_score_two_constraints_zone_and_node_two_candidates():
    p = foo_pod(
        "p", topologySpreadConstraints=[spread(1, "zone", SA, FOO), spread(1, HOST, SA, FOO)]
    )
    existing = placed({"node-a": 2, "node-b": 1, "node-x": 2, "node-y": 4})
    got = scores(
        SYSTEM,
        p,
        _zone_host({"node-a": "zone1", "node-x": "zone2"}),
        existing,
        _zone_host({"node-b": "zone1", "node-y": "zone2"}),
    )
    assert got == {"node-a": 100, "node-x": 63}


def test_score_two_zone_constraints_with_different_selectors():
    p = pod(
        "p",
        {"foo": "", "bar": ""},
        topologySpreadConstraints=[spread(1, "zone", SA, FOO), spread(1, "zone", SA, BAR)],
    )
    fb, f = {"foo": "", "bar": ""}, {"foo": ""}
    existing = [
        (pod("a1", fb), "node-a"),
        (pod("a2", f), "node-a"),
        (pod("b1", fb), "node-b"),
        (pod("y1", f), "node-y"),
        (pod("y2", fb), "node-y"),
        (pod("y3", f), "node-y"),
    ]
    cands = [node("node-a", zone="zone1"), node("node-x", zone="zone2")]
    failed = [node("node-b", zone="zone1"), node("node-y", zone="zone2")]
    assert scores(SYSTEM, p, cands, existing, failed) == {"node-a": 85, "node-x": 100}


FOO_BAR_PODS = [
    (pod("a1", {"foo": ""}), "node-a"),
    (pod("b1", {"foo": "", "bar": ""}), "node-b"),
    (pod("y1", {"foo": ""}), "node-y"),
    (pod("y2", {"bar": ""}), "node-y"),
]
FOUR = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}


def test_score_zone_and_node_with_different_selectors():
    cs = [spread(1, "zone", SA, FOO), spread(1, HOST, SA, BAR)]
    p = pod("p", {"foo": "", "bar": ""}, topologySpreadConstraints=cs)
    got = scores(SYSTEM, p, _zone_host(FOUR), FOO_BAR_PODS)
    assert list(got.values()) == [60, 20, 100, 60]
    three = {k: v for k, v in FOUR.items() if k != "node-y"}
    got = scores(SYSTEM, p, _zone_host(three), FOO_BAR_PODS, _zone_host({"node-y": "zone2"}))
    assert list(got.values()) == [50, 25, 100]
    some_zero = [
        (pod("b1", {"bar": ""}), "node-b"),
        (pod("x1", {"foo": ""}), "node-x"),
        (pod("y1", {"foo": "", "bar": ""}), "node-y"),
    ]
    assert list(scores(SYSTEM, p, _zone_host(FOUR), some_zero).values()) == [100, 60, 40, 0]


def test_score_ignores_other_namespaces_and_terminating_pods():
    p = foo_pod("p", topologySpreadConstraints=[spread(1, HOST, SA, FOO)])
    existing = [
        (foo_pod("a1", ns="ns1"), "node-a"),
        (foo_pod("a2"), "node-a"),
        (foo_pod("b1"), "node-b"),
        (foo_pod("b2"), "node-b"),
    ]
    assert scores(SYSTEM, p, hosts("node-a", "node-b"), existing) == {"node-a": 100, "node-b": 33}
    existing = [
        (foo_pod("a", deletionTimestamp="2026-01-01T00:00:00Z"), "node-a"),
        (foo_pod("b"), "node-b"),
    ]
    assert scores(SYSTEM, p, hosts("node-a", "node-b"), existing) == {"node-a": 100, "node-b": 0}


def test_score_min_domains_has_no_effect_when_schedule_anyway():
    p = foo_pod("p", topologySpreadConstraints=[spread(2, "node", SA, FOO, minDomains=10)])
    nodes = [node(n, node=n) for n in ("node-a", "node-b", "node-c")]
    got = scores(SYSTEM, p, nodes, placed({"node-a": 2, "node-b": 2, "node-c": 1}))
    assert list(got.values()) == [75, 75, 100]


@pytest.mark.parametrize(
    ("extra", "spec", "want"),
    [
        ({}, {"nodeSelector": {"foo": ""}}, [0, 33, 100]),
        ({"nodeAffinityPolicy": "Ignore"}, {"nodeSelector": {"foo": ""}}, [66, 100, 100]),
        ({}, {"affinity": "foo-in"}, [0, 33, 100]),
        ({"nodeAffinityPolicy": "Ignore"}, {"affinity": "foo-in"}, [66, 100, 100]),
    ],
)
def test_score_node_affinity_policy(extra, spec, want):
    if spec.get("affinity") == "foo-in":
        term = {"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}
        spec = {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            }
        }
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "node", SA, FOO, **extra)], **spec)
    nodes = [
        node("node-a", node="node-a", foo=""),
        node("node-b", node="node-b", foo=""),
        node("node-c", node="node-c"),
    ]
    got = scores(SYSTEM, p, nodes, placed({"node-a": 2, "node-b": 1, "node-c": 1}))
    assert list(got.values()) == want


@pytest.mark.parametrize(
    ("extra", "want"), [({"nodeTaintsPolicy": "Honor"}, [0, 33, 100]), ({}, [66, 100, 100])]
)
def test_score_node_taints_policy(extra, want):
    p = foo_pod("p", topologySpreadConstraints=[spread(1, "node", SA, FOO, **extra)])
    nodes = [
        node("node-a", node="node-a"),
        node("node-b", node="node-b"),
        node("node-c", [UNSCHEDULABLE_TAINT], node="node-c"),
    ]
    got = scores(SYSTEM, p, nodes, placed({"node-a": 2, "node-b": 1, "node-c": 1}))
    assert list(got.values()) == want


def test_score_match_label_keys():
    nodes = _zone_host({"node-a": "zone1", "node-b": "zone1", "node-c": "zone2", "node-d": "zone2"})
    existing = [
        (pod("a1", {"foo": ""}), "node-a"),
        (pod("b1", {"foo": "", "bar": ""}), "node-b"),
        (pod("y1", {"foo": ""}), "node-c"),
        (pod("y2", {"bar": ""}), "node-c"),
    ]
    cs = [
        spread(1, "zone", SA, {}, matchLabelKeys=["foo"]),
        spread(1, HOST, SA, {}, matchLabelKeys=["bar"]),
    ]
    p = pod("p", {"foo": "", "bar": ""}, topologySpreadConstraints=cs)
    assert list(scores(SYSTEM, p, nodes, existing).values()) == [60, 20, 60, 100]
    existing = [
        (pod("a1", {"foo": ""}), "node-a"),
        (pod("b1", {"foo": "", "bar": "", "baz": ""}), "node-b"),
        (pod("c1", {"foo": ""}), "node-c"),
        (pod("c2", {"bar": ""}), "node-c"),
        (pod("d3", {"bar": "", "baz": ""}), "node-c"),
    ]
    cs = [spread(1, "zone", SA, FOO), spread(1, HOST, SA, BAR, matchLabelKeys=["baz"])]
    p = pod("p", {"foo": "", "bar": "", "baz": ""}, topologySpreadConstraints=cs)
    assert list(scores(SYSTEM, p, nodes, existing).values()) == [60, 20, 60, 100]


# --- defaults ---------------------------------------------------------------------------
def _owned(kind: str, api: str, name: str = "owner") -> dict:
    return {
        "ownerReferences": [
            {"apiVersion": api, "kind": kind, "name": name, "controller": True, "uid": "u"}
        ]
    }


def test_default_selector_joins_services_and_the_controller():
    nodes = zoned({"a": "z1"})
    snap = snapshot_of(nodes)
    snap.cluster.objects[pts.SERVICES] = {
        "default/web": {"spec": {"selector": {"app": "web"}}},
        "default/other": {"spec": {"selector": {"app": "db"}}},
        "elsewhere/web": {"spec": {"selector": {"tier": "x"}}},
        "default/headless": {"spec": {}},
    }
    rs_selector = {
        "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["h1"]}]
    }
    snap.cluster.objects[pts.REPLICA_SETS] = {"default/owner": {"spec": {"selector": rs_selector}}}
    snap.cluster.objects[pts.REPLICATION_CONTROLLERS] = {
        "default/owner": {"spec": {"selector": {"rc": "1"}}}
    }
    labels = {"app": "web", "tier": "x", "pod-template-hash": "h1", "rc": "1"}
    rs_pod = pod("p", labels, **_owned("ReplicaSet", "apps/v1"))
    assert pts.default_selector(rs_pod, snap).requirements == (
        ("app", IN, frozenset({"web"})),
        ("pod-template-hash", IN, frozenset({"h1"})),
    )
    rc_pod = pod("p", labels, **_owned("ReplicationController", "v1"))
    assert [r[0] for r in pts.default_selector(rc_pod, snap).requirements] == ["app", "rc"]
    lone = pod("p", {"tier": "x"})
    assert pts.default_selector(lone, snap).everything  # nothing selects it: no defaults


def test_system_defaults_spread_replicaset_pods_by_host_and_zone():
    rs = {"default/owner": {"spec": {"selector": {"matchLabels": {"app": "web"}}}}}
    p = pod("p", {"app": "web"}, **_owned("ReplicaSet", "apps/v1"))
    nodes = _zone_host({"a": "z1", "b": "z1", "c": "z2"})
    snap = snapshot_of(nodes, placed({"a": 2, "b": 1}, {"app": "web"}))
    snap.cluster.objects[pts.REPLICA_SETS] = rs
    state = CycleState()
    assert SYSTEM.pre_filter(state, p, snap) is False  # System defaults are all ScheduleAnyway
    assert SYSTEM.pre_score(state, p, nodes, snap)
    got = {n.name: SYSTEM.score(state, p, n, snap) for n in nodes}
    SYSTEM.normalize(state, p, got)
    assert got["c"] == 100 and got["a"] < got["b"] < 100


def test_list_defaults_filter_with_the_deduced_selector():
    args = pts.parse_args(
        Fields({"defaultingType": "List", "defaultConstraints": [spread(1, "zone", DNS)]}, "args")
    )
    plugin = pts.Plugin(args)
    svc = {"default/web": {"spec": {"selector": {"app": "web"}}}}
    nodes = zoned({"a": "z1", "b": "z2"})
    p = pod("p", {"app": "web"})
    snap = snapshot_of(nodes, placed({"a": 2}, {"app": "web"}))
    snap.cluster.objects[pts.SERVICES] = svc
    state = CycleState()
    assert plugin.pre_filter(state, p, snap) is True
    assert plugin.filter(state, p, nodes[0], snap) == Status.reject(pts.REASON)
    assert plugin.filter(state, p, nodes[1], snap).ok
    # the pod's own constraints replace the defaults entirely
    own = pod("q", {"app": "web"}, topologySpreadConstraints=[spread(1, "zone", SA, FOO)])
    assert plugin.pre_filter(CycleState(), own, snap) is False


# --- args -------------------------------------------------------------------------------
def test_args_defaults_to_system():
    args = pts.parse_args(Fields({}, "args"))
    assert args == pts.Args("System", ())
    assert pts.Plugin(args).defaults == pts.SYSTEM_DEFAULTS


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"defaultingType": "Other"}, "must be one of"),
        ({"defaultConstraints": [spread(1, "zone", SA)]}, "must be empty"),
        (
            {"defaultingType": "List", "defaultConstraints": [spread(1, "zone", SA, FOO)]},
            "labelSelector",
        ),
        ({"defaultingType": "List", "defaultConstraints": [spread(0, "zone", SA)]}, "maxSkew"),
        ({"defaultingType": "List", "defaultConstraints": [spread(1, "", SA)]}, "topologyKey"),
        (
            {"defaultingType": "List", "defaultConstraints": [spread(1, "zone", "Maybe")]},
            "whenUnsatisfiable",
        ),
        ({"defaultingType": "List", "defaultConstraints": [spread(1, "zone", SA)] * 2}, "twice"),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{**spread(1, "zone", SA), "typo": 1}],
            },
            "unknown field",
        ),
        ({"surprise": 1}, "unknown field"),
    ],
)
def test_args_are_validated_as_upstream(doc: dict, message: str):
    with pytest.raises(ConfigError, match=message):
        pts.parse_args(Fields(doc, "args"))


# --- randomised: the indexed implementation against a node-by-node transcription of upstream --
def _naive_eligible(c: pts.Constraint, p: PodInfo, n: NodeInfo) -> bool:
    parsed = pts._parse(p)
    if c.honor_affinity and not pts._Eligibility(parsed)._affinity_ok(n):
        return False
    hard = [t for t in n.taints if t.get("effect") in ("NoSchedule", "NoExecute")]
    return not (c.honor_taints and not all(pts.tolerated(parsed.tolerations, t) for t in hard))


def _naive_count(c: pts.Constraint, p: PodInfo, n: NodeInfo) -> int:
    if c.selector.nothing or not c.selector.requirements:
        return 0
    return sum(
        1
        for q in n.pods.values()
        if q.namespace == p.namespace
        and not q.raw["metadata"].get("deletionTimestamp")
        and c.selector.matches(q.labels)
    )


def _naive_filter(p: PodInfo, nodes: list[NodeInfo]) -> dict[str, str]:
    cs = pts._parse(p).hard
    counts: list[dict[str, int]] = [{} for _ in cs]
    for n in nodes:
        if all(c.key in n.labels for c in cs):
            for i, c in enumerate(cs):
                if _naive_eligible(c, p, n):
                    v = n.labels[c.key]
                    counts[i][v] = counts[i].get(v, 0) + _naive_count(c, p, n)
    out = {}
    for n in nodes:
        for i, c in enumerate(cs):
            if c.key not in n.labels:
                out[n.name] = pts.REASON_MISSING_LABEL
                break
            low = min(counts[i].values()) if len(counts[i]) >= c.min_domains else 0
            own = int(c.selector.matches(p.labels))
            if counts[i].get(n.labels[c.key], 0) + own - low > c.max_skew:
                out[n.name] = pts.REASON
                break
    return out


def _naive_scores(p: PodInfo, cands: list[NodeInfo], nodes: list[NodeInfo]) -> dict[str, int]:
    cs = pts._parse(p).soft
    ignored = {n.name for n in cands if not all(c.key in n.labels for c in cs)}
    counts: list[dict[str, int]] = [{} for _ in cs]
    for n in cands:
        if n.name not in ignored:
            for i, c in enumerate(cs):
                if c.key != HOST:
                    counts[i].setdefault(n.labels.get(c.key, ""), 0)
    for n in nodes:
        if all(c.key in n.labels for c in cs):
            for i, c in enumerate(cs):
                v = n.labels.get(c.key, "")
                if c.key != HOST and v in counts[i] and _naive_eligible(c, p, n):
                    counts[i][v] += _naive_count(c, p, n)
    raw = {}
    for n in cands:
        total = 0.0
        for i, c in enumerate(cs):
            if n.name in ignored or c.key not in n.labels:
                continue
            size = len(cands) - len(ignored) if c.key == HOST else len(counts[i])
            cnt = _naive_count(c, p, n) if c.key == HOST else counts[i][n.labels[c.key]]
            total += cnt * math.log(size + 2) + (c.max_skew - 1)
        raw[n.name] = 0 if n.name in ignored else int(total + 0.5)
    rest = [v for k, v in raw.items() if k not in ignored]
    low, high = min(rest, default=0), max(rest, default=0)
    return {
        k: 0 if k in ignored else 100 if high == 0 else 100 * (high + low - v) // high
        for k, v in raw.items()
    }


def _untracked(nodes: list[NodeInfo], existing: list) -> Any:
    """A snapshot whose index follows no node map: counts read node by node."""
    snap = snapshot_of(nodes, existing)
    snap.cluster.nodes = None
    return snap


def _incremental(nodes: list[NodeInfo], existing: list) -> Any:
    """A snapshot whose counts were asked for before half of the pods came, some of the
    others went and a node was relabelled (the cache's order of things)."""
    half = len(existing) // 2
    snap = snapshot_of(nodes, existing[:half] + [(pod("gone", {"app": "a"}), nodes[0].name)])
    for pod_ in (_incoming_any(), _incoming_any(True)):
        LIST.pre_filter(CycleState(), pod_, snap)
        LIST.pre_score(CycleState(), pod_, nodes, snap)
    for p, where in existing[half:]:
        snap.nodes[where].add_pod(p)
        snap.cluster.add_pod(p, where)
    gone = snap.cluster.pods["uid-default-gone"]
    snap.nodes[nodes[0].name].remove_pod(gone)
    snap.cluster.remove_pod(gone.uid)
    snap.nodes[nodes[-1].name].labels["zone"] = "z-moved"
    snap.cluster.nodes_changed()
    snap.nodes[nodes[-1].name].labels = dict(nodes[-1].labels)
    snap.cluster.nodes_changed()
    return snap


def _incoming_any(soft: bool = False) -> PodInfo:
    """A pod whose constraints ask for the usual selectors, so their counts are kept."""
    when = SA if soft else DNS
    cs = [spread(1, key, when, {"matchLabels": {"app": "a"}}) for key in ("zone", HOST, "ssd")] + [
        spread(1, "zone", when, FOO)
    ]
    keys = [(c["topologyKey"], c["whenUnsatisfiable"]) for c in cs]
    cs = [c for i, c in enumerate(cs) if keys.index(keys[i]) == i]
    return pod("asker", {"app": "a"}, topologySpreadConstraints=cs)


@pytest.mark.parametrize("build", [None, _untracked, _incremental])
@pytest.mark.parametrize("seed", range(40))
def test_random_clusters_agree_with_a_node_by_node_transcription(seed, build):
    """Also with counts read node by node (no node map), and with counts kept through pods
    coming and going and a node relabelled after they were first asked for."""
    rnd = random.Random(seed)
    nodes = []
    for i in range(rnd.randint(3, 14)):
        labels = {HOST.replace("/", "__"): f"n{i}"}
        if rnd.random() < 0.85:
            labels["zone"] = f"z{rnd.randint(0, 3)}"
        if rnd.random() < 0.5:
            labels["ssd"] = "yes"
        if rnd.random() < 0.3:
            del labels[HOST.replace("/", "__")]
        taints = [UNSCHEDULABLE_TAINT] if rnd.random() < 0.2 else []
        nodes.append(node(f"n{i}", taints, **labels))
    existing = []
    for j in range(rnd.randint(0, 40)):
        labels = {
            k: v
            for k, v in (("app", rnd.choice("ab")), ("rev", rnd.choice("12")))
            if rnd.random() < 0.8
        }
        extra = {"deletionTimestamp": "2026-01-01T00:00:00Z"} if rnd.random() < 0.1 else {}
        ns = "default" if rnd.random() < 0.85 else "other"
        existing.append((pod(f"e{j}", labels, ns=ns, **extra), rnd.choice(nodes).name))

    def constraint(when: str) -> dict:
        c = spread(rnd.randint(1, 3), rnd.choice(["zone", HOST, "ssd"]), when)
        c["labelSelector"] = rnd.choice(
            [
                {"matchLabels": {"app": "a"}},
                {},
                FOO,
                None,
                {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
            ]
        )
        for field, values in (
            ("minDomains", [2, 3, 5]),
            ("nodeAffinityPolicy", ["Honor", "Ignore"]),
            ("nodeTaintsPolicy", ["Honor", "Ignore"]),
            ("matchLabelKeys", [["rev"]]),
        ):
            if rnd.random() < 0.3 and not (field == "minDomains" and when == SA):
                c[field] = rnd.choice(values)
        if c["labelSelector"] is None:
            del c["labelSelector"]
        return c

    cs = [constraint(rnd.choice([DNS, SA])) for _ in range(rnd.randint(1, 3))]
    keys = [(c["topologyKey"], c["whenUnsatisfiable"]) for c in cs]
    cs = [c for i, c in enumerate(cs) if keys.index(keys[i]) == i]
    spec: dict[str, Any] = {"topologySpreadConstraints": cs}
    if rnd.random() < 0.4:
        spec["nodeSelector"] = {"ssd": "yes"}
    p = pod("incoming", {"app": "a", "rev": rnd.choice("12")}, **spec)
    snap_nodes = [
        node(n.name, n.taints, **{k.replace("/", "__"): v for k, v in n.labels.items()})
        for n in nodes
    ]
    if pts._parse(p).hard:
        got = {
            k: s.reason
            for k, s in filter_verdicts(LIST, p, snap_nodes, existing, build).items()
            if not s.ok
        }
        assert got == _naive_filter(p, snap_nodes), cs
    if pts._parse(p).soft:
        cands = [n for n in snap_nodes if rnd.random() < 0.8] or snap_nodes[:1]
        assert scores(
            LIST, p, cands, existing, [n for n in snap_nodes if n not in cands], build
        ) == _naive_scores(p, cands, snap_nodes), cs
