"""The differential test's own parts: the independent checker, message parsing, the generator."""

from __future__ import annotations

from typing import Any

from tests.differential import scenario
from tests.differential.checker import Cluster, violations
from tests.differential.report import compare, reason_histogram, summary
from tests.differential.upstream import outcome_of, strip_postfilter

ZONE = scenario.ZONE
HOST = scenario.HOSTNAME


def node(name: str, zone: str | None = "z1", taints=(), cpu="4", pods="110", **labels) -> dict:
    lab = {HOST: name, **labels}
    if zone:
        lab[ZONE] = zone
    return {
        "metadata": {"name": name, "labels": lab},
        "spec": {"taints": list(taints)},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}},
    }


def pod(name: str, ns: str = "a", labels: dict | None = None, **spec: Any) -> dict:
    spec.setdefault("containers", [{"name": "c"}])
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": spec}


def cluster(*nodes: dict, namespaces: dict | None = None) -> Cluster:
    return Cluster(
        nodes={n["metadata"]["name"]: n for n in nodes},
        namespaces=namespaces or {"a": {"team": "blue"}, "b": {"team": "red"}},
    )


def anti(selector: dict, key: str = HOST, **extra: Any) -> dict:
    term = {"labelSelector": selector, "topologyKey": key, **extra}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def affinity(selector: dict, key: str = HOST, **extra: Any) -> dict:
    term = {"labelSelector": selector, "topologyKey": key, **extra}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


# --- messages -----------------------------------------------------------------------------
def test_upstream_message_loses_what_postfilter_appends():
    msg = (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is "
        "not helpful for scheduling."
    )
    assert strip_postfilter(msg) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    plain = "0/3 nodes are available: 3 Insufficient cpu."
    assert strip_postfilter(plain) == plain


def test_histogram_counts_reasons_and_keeps_a_prefilter_text_whole():
    assert reason_histogram("0/5 nodes are available: 2 A b, 3 node(s) had x {k: v}.") == {
        "nodes": 5,
        "A b": 2,
        "node(s) had x {k: v}": 3,
    }
    pre = '0/5 nodes are available: persistentvolumeclaim "x" not found.'
    assert reason_histogram(pre) == {"nodes": 5, 'persistentvolumeclaim "x" not found': 0}


def test_compare_sees_sets_then_reasons():
    up = (["n1"], "")
    assert compare(1, 0, "a", {}, [], up, (["n1"], "")) is None
    assert compare(1, 0, "a", {}, [], up, (["n1", "n2"], "")).kind == "feasible"
    one = "0/2 nodes are available: 2 Insufficient cpu."
    two = "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    assert compare(1, 0, "a", {}, [], ([], one), ([], one)) is None
    assert compare(1, 0, "a", {}, [], ([], one), ([], two)).kind == "reasons"


def test_outcome_from_the_pod_object():
    assert outcome_of({"spec": {"nodeName": "n1"}}).node == "n1"
    gated = {
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
        }
    }
    assert outcome_of(gated) is None
    failed = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/1 nodes are available: 1 X. tail",
                }
            ]
        }
    }
    assert outcome_of(failed).message == "0/1 nodes are available: 1 X."


# --- the checker --------------------------------------------------------------------------
def test_taints_selectors_resources():
    c = cluster(
        node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        node("n2", cpu="1", disk="ssd"),
        node("n3", pods="1"),
    )
    assert violations(c, pod("p"), "n1")
    ok = pod("p", tolerations=[{"key": "k", "operator": "Exists"}])
    assert not violations(c, ok, "n1")
    assert not violations(c, pod("p", tolerations=[{"operator": "Exists"}]), "n1")
    wrong_value = pod("p", tolerations=[{"key": "k", "value": "w", "effect": "NoSchedule"}])
    assert violations(c, wrong_value, "n1")
    assert violations(c, pod("p", nodeSelector={"disk": "ssd"}), "n3")
    assert not violations(c, pod("p", nodeSelector={"disk": "ssd"}), "n2")
    big = pod("p", containers=[{"name": "c", "resources": {"requests": {"cpu": "600m"}}}])
    c.place(big, "n2")
    assert violations(c, big, "n2")  # 600m + 600m > 1
    c.place(pod("q"), "n3")
    assert violations(c, pod("r"), "n3")  # one pod allowed


def test_node_affinity_operators():
    c = cluster(node("n1", gen="3"), node("n2", zone=None))
    term = {
        "matchExpressions": [
            {"key": "gen", "operator": "Gt", "values": ["2"]},
            {"key": ZONE, "operator": "Exists"},
        ]
    }
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    assert not violations(c, pod("p", affinity=aff), "n1")
    assert violations(c, pod("p", affinity=aff), "n2")


def test_host_ports_conflict_by_protocol_and_ip():
    c = cluster(node("n1"))

    def with_port(name, port, proto="TCP", ip=None):
        p = {"containerPort": port, "hostPort": port, "protocol": proto}
        if ip:
            p["hostIP"] = ip
        return pod(name, containers=[{"name": "c", "ports": [p]}])

    c.place(with_port("a", 80, ip="127.0.0.1"), "n1")
    assert not violations(c, with_port("b", 80, "UDP"), "n1")
    assert not violations(c, with_port("b", 80, ip="10.0.0.1"), "n1")
    assert violations(c, with_port("b", 80), "n1")  # 0.0.0.0 overlaps every IP
    assert violations(c, with_port("b", 80, ip="127.0.0.1"), "n1")


def test_anti_affinity_both_ways_and_namespaces():
    c = cluster(node("n1", "z1"), node("n2", "z1"), node("n3", "z2"))
    c.place(pod("web", labels={"app": "web"}), "n1")
    incoming = pod("p", affinity=anti({"matchLabels": {"app": "web"}}, ZONE))
    assert violations(c, incoming, "n2")
    assert not violations(c, incoming, "n3")
    other_ns = pod("p", ns="b", affinity=anti({"matchLabels": {"app": "web"}}, ZONE))
    assert not violations(c, other_ns, "n2")
    by_selector = pod(
        "p",
        ns="b",
        affinity=anti(
            {"matchLabels": {"app": "web"}},
            ZONE,
            namespaceSelector={"matchLabels": {"team": "blue"}},
        ),
    )
    assert violations(c, by_selector, "n2")
    # symmetric: a placed pod's anti-affinity keeps matching pods out of its domain
    c.place(pod("guard", labels={"app": "g"}, affinity=anti({"matchLabels": {"app": "x"}})), "n3")
    assert violations(c, pod("x", labels={"app": "x"}), "n3")
    assert not violations(c, pod("x", labels={"app": "x"}), "n2")


def test_affinity_first_pod_rule_and_match_label_keys():
    c = cluster(node("n1", "z1"), node("n2", "z2"))
    first = pod("p", labels={"app": "db"}, affinity=affinity({"matchLabels": {"app": "db"}}, ZONE))
    assert not violations(c, first, "n1")  # nothing matches anywhere, and it matches itself
    loner = pod("p", labels={"app": "web"}, affinity=affinity({"matchLabels": {"app": "db"}}))
    assert violations(c, loner, "n1")
    c.place(pod("db", labels={"app": "db", "ver": "v1"}), "n2")
    assert violations(c, first, "n1")
    assert not violations(c, first, "n2")
    keyed = pod(
        "p",
        labels={"app": "db", "ver": "v2"},
        affinity=affinity({"matchLabels": {"app": "db"}}, ZONE, matchLabelKeys=["ver"]),
    )
    assert not violations(c, keyed, "n1")  # no v2 pod anywhere: the first-pod rule again


def test_spread_skew_policies_and_min_domains():
    c = cluster(node("n1", "z1"), node("n2", "z2"), node("n3", "z3", disk="ssd"), node("n4", None))

    def spreading(**extra):
        con = {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "s"}},
            **extra,
        }
        return pod("p", labels={"app": "s"}, topologySpreadConstraints=[con])

    c.place(pod("s1", labels={"app": "s"}), "n1")
    assert violations(c, spreading(), "n1")  # 2 - 0 > 1
    assert not violations(c, spreading(), "n2")
    assert violations(c, spreading(), "n4")  # no zone label
    # only n3 counts when the node selector is honoured: one domain, skew 1 - 1 = 0 on n3
    selective = spreading()
    selective["spec"]["nodeSelector"] = {"disk": "ssd"}
    assert not violations(c, selective, "n3")
    c.place(pod("s2", labels={"app": "s"}), "n2")
    c.place(pod("s3", labels={"app": "s"}), "n3")
    assert not violations(c, spreading(), "n1")  # 2 - 1
    assert violations(c, spreading(minDomains=4), "n1")  # 3 domains < 4: min counts as 0
    soft = spreading(whenUnsatisfiable="ScheduleAnyway")
    c.place(pod("s4", labels={"app": "s"}), "n1")
    assert not violations(c, soft, "n1")


def test_volumes():
    c = cluster(node("n1", "z1"), node("n2", "z2"))
    pv_affinity = {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}
            ]
        }
    }
    c.volumes["pv1"] = {"metadata": {"name": "pv1"}, "spec": {"nodeAffinity": pv_affinity}}
    c.claims[("a", "bound")] = {"spec": {"volumeName": "pv1"}}
    c.claims[("a", "once")] = {"spec": {"volumeName": "pv1", "accessModes": ["ReadWriteOncePod"]}}
    c.claims[("a", "loose")] = {"spec": {}}

    def using(claim):
        return pod("p", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": claim}}])

    assert not violations(c, using("bound"), "n1")
    assert violations(c, using("bound"), "n2")
    assert violations(c, using("missing"), "n1")
    assert violations(c, using("loose"), "n1")
    c.place(using("once"), "n1")
    assert violations(c, using("once"), "n1")


# --- the generator ------------------------------------------------------------------------
def test_generator_is_seeded_and_prefix_stable():
    a, b = scenario.generate(5, pods=60), scenario.generate(5, pods=30)
    assert a.pods[:30] == b.pods
    assert a.nodes == b.nodes
    assert scenario.generate(6, pods=30).pods != b.pods
    zones = {n.labels.get(ZONE) for n in a.nodes} - {None}
    assert len(zones) >= 3 and len(a.nodes) >= 20
    assert {f for _, _, fs in a.pods for f in fs} >= {"spread", "pod-anti-affinity"}


def test_run_renames_namespaces_and_gates():
    pod_ = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c"}],
            "affinity": anti({"matchLabels": {"app": "x"}}, namespaces=["b"]),
        },
    }
    body = scenario.pod_for_run(pod_, "run1", "default-scheduler", gated=True)
    term = body["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert term["namespaces"] == ["run1-b"]
    assert body["spec"]["schedulingGates"]
    assert pod_["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["namespaces"] == ["b"]


def test_mismatch_names_the_plugins_to_blame():
    m = compare(1, 0, "a", {}, ["spread"], (["n1"], ""), (["n1", "n2"], ""))
    m.detail = ["checker on n2: PodTopologySpread: skew on zone 2 > 1; NodePorts: host port x"]
    assert m.plugins() == {"PodTopologySpread", "NodePorts"}
    r = compare(
        1,
        1,
        "a",
        {},
        [],
        ([], "0/2 nodes are available: 2 node(s) had untolerated taint(s)."),
        ([], "0/2 nodes are available: 2 node(s) had untolerated taint {k: v}."),
    )
    assert r.plugins() == {
        "'node(s) had untolerated taint(s)'",
        "'node(s) had untolerated taint {k: v}'",
    }
    assert "PodTopologySpread 1" in summary([m, r])
