"""InterPodAffinity: each filter rule and reason, namespaces, the first replica, and the scores."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import CycleState, NodeInfo, PodInfo, snapshot_of
from scheduler.framework.errors import ConfigError
from scheduler.framework.fields import Fields
from scheduler.framework.resources import node_info, pod_info
from scheduler.plugins import inter_pod_affinity as ipa

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str | None = "a", **labels: str) -> NodeInfo:
    all_labels = {HOST: name, **labels}
    if zone is not None:
        all_labels[ZONE] = zone
    return node_info(
        {
            "metadata": {"name": name, "labels": all_labels},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}},
        }
    )


def term(key: str = HOST, ns: list[str] | None = None, ns_sel: Any = "unset", **labels: str):
    t: dict[str, Any] = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
    if ns is not None:
        t["namespaces"] = ns
    if ns_sel != "unset":
        t["namespaceSelector"] = ns_sel
    return t


def pod(
    name: str,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    affinity: list | None = None,
    anti: list | None = None,
    pref_affinity: list[tuple[int, dict]] | None = None,
    pref_anti: list[tuple[int, dict]] | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {"containers": []}
    aff: dict[str, Any] = {}
    req, pref = (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    if affinity or pref_affinity:
        aff["podAffinity"] = {
            req: affinity or [],
            pref: [{"weight": w, "podAffinityTerm": t} for w, t in pref_affinity or []],
        }
    if anti or pref_anti:
        aff["podAntiAffinity"] = {
            req: anti or [],
            pref: [{"weight": w, "podAffinityTerm": t} for w, t in pref_anti or []],
        }
    if aff:
        spec["affinity"] = aff
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    return pod_info({"metadata": {**meta, "labels": labels or {}}, "spec": spec})


def verdicts(incoming: PodInfo, nodes: list[NodeInfo], placed=(), namespaces=None, args=None):
    """{node: reason or ""} through pre_filter + filter, checked against filter_all."""
    snap = snapshot_of(nodes, list(placed))
    for name, labels in (namespaces or {}).items():
        snap.cluster.put("namespaces", name, {"metadata": {"name": name, "labels": labels}})
    plugin = ipa.Plugin(args)
    state = CycleState()
    pre = plugin.pre_filter(state, incoming, snap)
    if pre is False:
        return {n.name: "" for n in nodes}
    assert pre is True, pre
    out = {}
    for n in nodes:
        status = plugin.filter(state, incoming, n, snap)
        out[n.name] = "" if status.ok else status.reason
        if not status.ok:
            expected_unresolvable = status.reason == ipa.REASON_AFFINITY
            assert status.unresolvable is expected_unresolvable
    batch = plugin.filter_all(state, incoming, nodes, snap)
    assert {nodes[i].name: s.reason for i, s in batch.items()} == {
        k: v for k, v in out.items() if v
    }
    return out


# --- required anti-affinity ------------------------------------------------------------------
def test_anti_affinity_on_hostname_keeps_replicas_apart():
    nodes = [node("n1"), node("n2"), node("n3")]
    web = [term(HOST, app="web")]
    placed = [(pod("w1", labels={"app": "web"}, anti=web), "n1")]
    got = verdicts(pod("w2", labels={"app": "web"}, anti=web), nodes, placed)
    # n1 fails on the incoming pod's own rule first, before the symmetric one
    assert got == {"n1": ipa.REASON_ANTI_AFFINITY, "n2": "", "n3": ""}


def test_anti_affinity_on_zone_rejects_whole_zone():
    nodes = [node("n1", "a"), node("n2", "a"), node("n3", "b")]
    placed = [(pod("db", labels={"app": "db"}), "n2")]
    got = verdicts(pod("x", anti=[term(ZONE, app="db")]), nodes, placed)
    assert got == {"n1": ipa.REASON_ANTI_AFFINITY, "n2": ipa.REASON_ANTI_AFFINITY, "n3": ""}


def test_anti_affinity_ignores_nodes_without_the_key_and_pods_on_unknown_nodes():
    nodes = [node("n1", zone=None), node("n2", "a")]
    placed = [(pod("db", labels={"app": "db"}), "n1")]
    got = verdicts(pod("x", anti=[term(ZONE, app="db")]), nodes, placed)
    assert got == {"n1": "", "n2": ""}


def test_existing_pods_anti_affinity_is_symmetric():
    nodes = [node("n1", "a"), node("n2", "a"), node("n3", "b")]
    guard = pod("guard", labels={"app": "guard"}, anti=[term(ZONE, app="web")])
    got = verdicts(pod("w", labels={"app": "web"}), nodes, [(guard, "n1")])
    reason = ipa.REASON_EXISTING_ANTI_AFFINITY
    assert got == {"n1": reason, "n2": reason, "n3": ""}
    # a pod the guard's selector does not match is free to go anywhere
    assert set(verdicts(pod("o", labels={"app": "other"}), nodes, [(guard, "n1")]).values()) == {""}


def test_existing_anti_affinity_counts_each_member_of_a_group():
    nodes = [node(f"n{i}") for i in range(4)]
    web = [term(HOST, app="web")]
    placed = [(pod(f"w{i}", labels={"app": "web"}, anti=web), f"n{i}") for i in range(3)]
    got = verdicts(pod("plain", labels={"app": "web"}), nodes, placed)
    reason = ipa.REASON_EXISTING_ANTI_AFFINITY
    assert got == {"n0": reason, "n1": reason, "n2": reason, "n3": ""}


# --- required affinity -----------------------------------------------------------------------
def test_affinity_follower_goes_beside_its_target():
    nodes = [node("n1", "a"), node("n2", "a"), node("n3", "b"), node("n4", zone=None)]
    placed = [(pod("db", labels={"app": "db"}), "n1")]
    got = verdicts(pod("f", affinity=[term(ZONE, app="db")]), nodes, placed)
    reason = ipa.REASON_AFFINITY
    assert got == {"n1": "", "n2": "", "n3": reason, "n4": reason}


def test_affinity_terms_must_all_match_the_same_pod():
    nodes = [node("n1", "a"), node("n2", "b")]
    placed = [(pod("a", labels={"app": "db"}), "n1"), (pod("b", labels={"tier": "be"}), "n2")]
    terms = [term(ZONE, app="db"), term(HOST, tier="be")]
    got = verdicts(pod("f", affinity=terms), nodes, placed)
    assert got == {"n1": ipa.REASON_AFFINITY, "n2": ipa.REASON_AFFINITY}
    both = (pod("c", labels={"app": "db", "tier": "be"}), "n2")
    got = verdicts(pod("f", affinity=terms), nodes, [*placed, both])
    assert got == {"n1": ipa.REASON_AFFINITY, "n2": ""}


def test_first_replica_matching_itself_may_go_where_the_keys_are():
    nodes = [node("n1", "a"), node("n2", zone=None)]
    first = pod("w1", labels={"app": "web"}, affinity=[term(ZONE, app="web")])
    assert verdicts(first, nodes) == {"n1": "", "n2": ipa.REASON_AFFINITY}
    # not matching its own terms: nothing to join, nowhere to go
    lonely = pod("x", labels={"app": "other"}, affinity=[term(ZONE, app="web")])
    assert verdicts(lonely, nodes) == {"n1": ipa.REASON_AFFINITY, "n2": ipa.REASON_AFFINITY}


def test_first_replica_rule_ends_once_a_match_exists():
    nodes = [node("n1", "a"), node("n2", "b")]
    placed = [(pod("w0", labels={"app": "web"}), "n1")]
    second = pod("w1", labels={"app": "web"}, affinity=[term(ZONE, app="web")])
    assert verdicts(second, nodes, placed) == {"n1": "", "n2": ipa.REASON_AFFINITY}


def test_affinity_fails_before_anti_affinity():
    nodes = [node("n1", "a"), node("n2", "b")]
    placed = [(pod("db", labels={"app": "db"}), "n1"), (pod("c", labels={"app": "c"}), "n2")]
    p = pod("f", affinity=[term(ZONE, app="db")], anti=[term(ZONE, app="c")])
    assert verdicts(p, nodes, placed) == {"n1": "", "n2": ipa.REASON_AFFINITY}


# --- namespaces --------------------------------------------------------------------------------
def test_terms_default_to_the_pods_own_namespace():
    nodes = [node("n1"), node("n2")]
    placed = [(pod("db", namespace="other", labels={"app": "db"}), "n1")]
    assert verdicts(pod("x", anti=[term(HOST, app="db")]), nodes, placed) == {"n1": "", "n2": ""}
    listed = pod("x", anti=[term(HOST, ns=["other"], app="db")])
    assert verdicts(listed, nodes, placed)["n1"] == ipa.REASON_ANTI_AFFINITY


def test_namespace_selector_null_empty_and_labelled():
    nodes = [node("n1"), node("n2"), node("n3")]
    placed = [
        (pod("a", namespace="team-a", labels={"app": "db"}), "n1"),
        (pod("b", namespace="team-b", labels={"app": "db"}), "n2"),
        (pod("c", namespace="default", labels={"app": "db"}), "n3"),
    ]
    namespaces = {"team-a": {"team": "a"}, "team-b": {"team": "b"}, "default": {}}
    anti = ipa.REASON_ANTI_AFFINITY

    def run(t):
        return verdicts(pod("x", anti=[t]), nodes, placed, namespaces)

    # {} selects every namespace
    assert run(term(HOST, ns_sel={}, app="db")) == {"n1": anti, "n2": anti, "n3": anti}
    # a labelled selector selects namespaces by label; not the pod's own one implicitly
    picked = run(term(HOST, ns_sel={"matchLabels": {"team": "a"}}, app="db"))
    assert picked == {"n1": anti, "n2": "", "n3": ""}
    # namespaces and selector are ORed
    both = run(term(HOST, ns=["team-b"], ns_sel={"matchLabels": {"team": "a"}}, app="db"))
    assert both == {"n1": anti, "n2": anti, "n3": ""}
    # an explicit null selector with no names is the pod's own namespace
    assert run(term(HOST, ns_sel=None, app="db")) == {"n1": "", "n2": "", "n3": anti}


def test_existing_pods_namespace_selector_uses_the_incoming_pods_namespace_labels():
    nodes = [node("n1"), node("n2")]
    guard = pod(
        "g", namespace="ops", anti=[term(HOST, ns_sel={"matchLabels": {"env": "prod"}}, app="web")]
    )
    namespaces = {"ops": {}, "prod": {"env": "prod"}, "dev": {"env": "dev"}}
    in_prod = pod("w", namespace="prod", labels={"app": "web"})
    in_dev = pod("w", namespace="dev", labels={"app": "web"})
    got = verdicts(in_prod, nodes, [(guard, "n1")], namespaces)
    assert got == {"n1": ipa.REASON_EXISTING_ANTI_AFFINITY, "n2": ""}
    assert verdicts(in_dev, nodes, [(guard, "n1")], namespaces) == {"n1": "", "n2": ""}


def test_null_label_selector_matches_no_pod():
    nodes = [node("n1")]
    placed = [(pod("db", labels={"app": "db"}), "n1")]
    t = {"topologyKey": HOST}
    assert verdicts(pod("x", anti=[t]), nodes, placed) == {"n1": ""}
    # and an empty one matches every pod of the namespace
    t = {"topologyKey": HOST, "labelSelector": {}}
    assert verdicts(pod("x", anti=[t]), nodes, placed) == {"n1": ipa.REASON_ANTI_AFFINITY}


def test_match_expressions_narrow_and_negative_selectors_scan():
    nodes = [node("n1"), node("n2"), node("n3")]
    placed = [
        (pod("a", labels={"app": "db", "tier": "x"}), "n1"),
        (pod("b", labels={"app": "web"}), "n2"),
    ]
    t = {
        "topologyKey": HOST,
        "labelSelector": {
            "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]
        },
    }
    assert verdicts(pod("x", anti=[t]), nodes, placed) == {
        "n1": "",
        "n2": ipa.REASON_ANTI_AFFINITY,
        "n3": "",
    }


# --- pre-filter --------------------------------------------------------------------------------
def test_pre_filter_skips_pods_with_nothing_to_check():
    snap = snapshot_of([node("n1")], [(pod("a", labels={"app": "db"}), "n1")])
    assert ipa.Plugin().pre_filter(CycleState(), pod("x", labels={"app": "web"}), snap) is False


def test_pre_filter_rejects_a_pod_whose_terms_do_not_parse():
    bad = {
        "topologyKey": HOST,
        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]},
    }
    snap = snapshot_of([node("n1")])
    verdict = ipa.Plugin().pre_filter(CycleState(), pod("x", anti=[bad]), snap)
    assert not verdict.ok and verdict.unresolvable
    assert verdict.reason.startswith("parsing pod: ")


def test_placed_pods_added_and_removed_later_are_seen():
    nodes = [node("n1"), node("n2")]
    snap = snapshot_of(nodes)
    plugin = ipa.Plugin()
    incoming = pod("w", labels={"app": "web"})
    assert plugin.pre_filter(CycleState(), incoming, snap) is False
    guard = pod("g", anti=[term(HOST, app="web")])
    snap.nodes["n2"].add_pod(guard)
    snap.cluster.add_pod(guard, "n2")
    state = CycleState()
    assert plugin.pre_filter(state, incoming, snap) is True
    assert not plugin.filter(state, incoming, snap.nodes["n2"], snap).ok
    snap.cluster.remove_pod(guard.uid)
    assert plugin.pre_filter(CycleState(), incoming, snap) is False


# --- score ---------------------------------------------------------------------------------------
def scores(incoming, nodes, placed=(), args=None, namespaces=None) -> dict[str, int] | None:
    snap = snapshot_of(nodes, list(placed))
    for name, labels in (namespaces or {}).items():
        snap.cluster.put("namespaces", name, {"metadata": {"name": name, "labels": labels}})
    plugin = ipa.Plugin(args)
    state = CycleState()
    if not plugin.pre_score(state, incoming, nodes, snap):
        return None
    raw = {n.name: plugin.score(state, incoming, n, snap) for n in nodes}
    batch = plugin.score_all(state, incoming, nodes, snap)
    assert batch == list(raw.values())
    plugin.normalize(state, incoming, raw)
    return raw


def zoned_nodes() -> list[NodeInfo]:
    return [node("n1", "a"), node("n2", "a"), node("n3", "b"), node("n4", "c")]


def test_preferred_affinity_and_anti_affinity_weights_normalised():
    placed = [(pod("db", labels={"app": "db"}), "n1"), (pod("c", labels={"app": "cache"}), "n3")]
    p = pod(
        "x", pref_affinity=[(80, term(ZONE, app="db"))], pref_anti=[(50, term(ZONE, app="cache"))]
    )
    # raw: zone a +80, zone b -50, zone c 0 -> (s + 50) / 130 * 100, truncated
    assert scores(p, zoned_nodes(), placed) == {"n1": 100, "n2": 100, "n3": 0, "n4": 38}


def test_existing_required_affinity_scores_with_hard_weight():
    leader = pod("l", labels={"app": "l"}, affinity=[term(ZONE, app="web")])
    p = pod("w", labels={"app": "web"})
    assert scores(p, zoned_nodes(), [(leader, "n4")]) == {"n1": 0, "n2": 0, "n3": 0, "n4": 100}
    zero = ipa.Args(hard_pod_affinity_weight=0)
    assert scores(p, zoned_nodes(), [(leader, "n4")], args=zero) is None


def test_existing_preferred_terms_score_and_can_be_ignored():
    placed = [
        (pod("l", pref_affinity=[(30, term(ZONE, app="web"))]), "n3"),
        (pod("m", pref_anti=[(60, term(HOST, app="web"))]), "n1"),
    ]
    p = pod("w", labels={"app": "web"})
    # zone b +30 (n3), host n1 -60 -> min -60, max 30, span 90
    assert scores(p, zoned_nodes(), placed) == {"n1": 0, "n2": 66, "n3": 100, "n4": 66}
    ignore = ipa.Args(ignore_preferred_terms_of_existing_pods=True)
    assert scores(p, zoned_nodes(), placed, args=ignore) is None
    # ignoring only applies when the incoming pod has no preferred terms of its own
    with_own = pod("w", labels={"app": "web"}, pref_affinity=[(10, term(ZONE, app="none"))])
    assert scores(with_own, zoned_nodes(), placed, args=ignore) == {
        "n1": 0,
        "n2": 66,
        "n3": 100,
        "n4": 66,
    }


def test_equal_scores_normalise_to_zero_and_no_match_skips():
    placed = [(pod("db", labels={"app": "db"}), "n1")]
    nodes = [node("n1", "a"), node("n2", "a")]
    p = pod("x", pref_affinity=[(10, term(ZONE, app="db"))])
    assert scores(p, nodes, placed) == {"n1": 0, "n2": 0}
    assert scores(pod("y", pref_affinity=[(10, term(ZONE, app="none"))]), nodes, placed) is None


def test_parse_args_defaults_and_bounds():
    assert ipa.parse_args(Fields({}, "args")) == ipa.Args(1, False)
    got = ipa.parse_args(
        Fields({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}, "a")
    )
    assert got == ipa.Args(100, True)
    with pytest.raises(ConfigError):
        ipa.parse_args(Fields({"hardPodAffinityWeight": 101}, "a"))
    with pytest.raises(ConfigError):
        ipa.parse_args(Fields({"unknown": 1}, "a"))


def test_own_anti_affinity_reason_wins_over_existing_pods_on_another_key():
    nodes = [node("n1", "a"), node("n2", "a"), node("n3", "b")]
    guard = pod("g", anti=[term(HOST, app="web")])  # blocks host n1 for app=web
    db = pod("db", labels={"app": "db"})  # the incoming pod avoids db's zone
    p = pod("w", labels={"app": "web"}, anti=[term(ZONE, app="db")])
    got = verdicts(p, nodes, [(guard, "n1"), (db, "n2")])
    assert got == {"n1": ipa.REASON_ANTI_AFFINITY, "n2": ipa.REASON_ANTI_AFFINITY, "n3": ""}
    got = verdicts(p, nodes, [(guard, "n3"), (db, "n2")])
    reason = ipa.REASON_EXISTING_ANTI_AFFINITY
    assert got == {"n1": ipa.REASON_ANTI_AFFINITY, "n2": ipa.REASON_ANTI_AFFINITY, "n3": reason}
