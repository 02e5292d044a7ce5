"""The decision record: the profile's parts, what a record says, the bounded store."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.backend import decisions, explanation
from scheduler.backend.decisions import DecisionStore
from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.framework import CycleState, PostFilterResult
from scheduler.framework.profile import FILTER_TALLY, ScoreParts
from scheduler.plugins.helpers import loadview
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats

WEIGHTED = {
    "profiles": [
        {
            "plugins": {
                "score": {
                    "disabled": [{"name": "*"}],
                    "enabled": [
                        {"name": "TargetLoadPacking", "weight": 2},
                        {"name": "NodeAffinity", "weight": 3},
                    ],
                }
            }
        }
    ]
}


def profile(doc=None):
    return build_profiles(parse_config(doc))["ballast"]


def affinity_pod():
    pref = [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}
    ]
    return make_pod(
        containers=[container(cpu="200m")],
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}},
    )


def cluster():
    nodes = [make_node(f"n{i}", cpu="4", labels={"ssd": "1"} if i % 2 else {}) for i in range(6)]
    loads = {
        f"n{i}": {"cpu": stats(avg=10.0 * i, std=1.5), "memory": stats(avg=20)} for i in range(5)
    }
    loads["n4"] = {"cpu": stats(avg=40, state="stale", age=200, horizon=100, expiry=300)}
    return nodes, snapshot(nodes, loads, recent={"n1": 300})


def test_score_parts_add_up_to_the_totals_and_change_nothing():
    nodes, snap = cluster()
    p, pod = profile(WEIGHTED), affinity_pod()
    plain = p.score(pod, nodes, snap, CycleState())
    parts = ScoreParts()
    assert p.score(pod, nodes, snap, CycleState(), parts) == plain
    assert parts.names == [n.name for n in nodes]
    assert [name for name, *_ in parts.plugins] == ["TargetLoadPacking", "NodeAffinity"]
    for i, name in enumerate(parts.names):
        assert plain[name] == sum(w * int(norm[i]) for _, w, _, norm in parts.plugins)
    # NodeAffinity normalises: raw is the preference weight, normalised 0 or 100
    _, _, raw, norm = parts.plugins[1]
    assert {int(v) for v in raw} == {0, 5} and {int(v) for v in norm} == {0, 100}


def test_a_plugin_pre_score_skips_is_listed_as_skipped():
    nodes, snap = cluster()
    parts = ScoreParts()
    p = profile(WEIGHTED)
    p.score(make_pod(containers=[container(cpu="200m")]), nodes, snap, CycleState(), parts)
    assert parts.plugins[1][0] == "NodeAffinity" and parts.plugins[1][2] is None


def test_filter_tally_counts_rejections_per_plugin_and_reason():
    nodes = [
        make_node("ok"),
        make_node("small", cpu="100m"),
        make_node("tiny", cpu="100m", memory="1Mi"),
        make_node("tainted", taints=[{"key": "k", "effect": "NoSchedule"}]),
    ]
    pod = make_pod(containers=[container(cpu="500m", memory="10Mi")])
    state = CycleState()
    state[FILTER_TALLY] = {}
    feasible, reasons = profile().filter(pod, nodes, snapshot(nodes), state)
    assert [n.name for n in feasible] == ["ok"]
    assert state[FILTER_TALLY] == {
        "TaintToleration": {"node(s) had untolerated taint(s)": 1},
        "NodeResourcesFit": {"Insufficient cpu": 2, "Insufficient memory": 1},
    }
    counts = explanation.expand(
        {"p": 0, "n": [4] * 6, "f": explanation.filter_counts(reasons, state), "c": 0}
    )["filters"]
    assert counts["rejectedNodes"] == 3
    assert counts["byReason"] == {
        "Insufficient cpu": 2,
        "Insufficient memory": 1,
        "node(s) had untolerated taint(s)": 1,
    }
    assert counts["byPlugin"] == state[FILTER_TALLY]


def test_rejections_no_plugin_made_are_put_down_to_nominated_pods():
    state = CycleState()
    state[FILTER_TALLY] = {"NodeResourcesFit": {"Insufficient cpu": 1}}
    reasons = {"a": ["Insufficient cpu"], "b": ["Insufficient cpu"]}
    _, _, by_plugin, _ = explanation.filter_counts(reasons, state)
    assert by_plugin["(room for nominated pods)"] == {"other": 1}


def test_top_indices_best_first():
    totals = np.array([5, 9, 9, 1, 7, 9])
    assert explanation.top_indices(totals, 3) == [1, 2, 5]
    assert explanation.top_indices(totals, 10) == [1, 2, 5, 4, 0, 3]
    assert explanation.top_indices(totals, 2) == [1, 2]  # ties by position
    rng = np.random.default_rng(7)
    for _ in range(200):  # against a plain sort by (-total, position)
        many = rng.integers(0, 12, int(rng.integers(1, 40)))
        k = int(rng.integers(1, 8))
        expected = sorted(range(len(many)), key=lambda i: (-int(many[i]), i))[:k]
        assert explanation.top_indices(many, k) == expected


def test_a_tie_won_beyond_the_top_k_is_shown_all_the_same():
    nodes, snap = cluster()
    parts = ScoreParts(names=[f"n{i}" for i in range(6)], totals=np.array([9, 9, 9, 1, 9, 9]))
    parts.plugins = [("P", 1, [9, 9, 9, 1, 9, 9], [9, 9, 9, 1, 9, 9])]
    _, winner, rows = explanation.scores(parts, "n5", snap, 2)
    assert winner[:3] == ["n5", 9, 5] and "n5" in [row[0] for row in rows]
    assert len(rows) == 2 and winner[3] != "n5"


def test_placed_record_explains_the_winner():
    nodes, snap = cluster()
    p, pod = profile(WEIGHTED), affinity_pod()
    parts = ScoreParts()
    totals = p.score(pod, nodes, snap, CycleState(), parts)
    chosen = max(totals, key=lambda n: (totals[n], n))
    counts = explanation.node_counts(6, 6, 6, 6, 0, 6)
    state = CycleState()
    doc = explanation.expand(
        explanation.placed(pod, counts, {}, state, snap, parts, chosen, 300, 3)
    )
    winner = doc["scores"]["winner"]
    assert winner["node"] == chosen and winner["total"] == totals[chosen]
    ranked = sorted(totals.values(), reverse=True)
    assert winner["margin"] == ranked[0] - ranked[1]
    assert winner["ties"] == ranked.count(ranked[0])
    top = doc["scores"]["top"]
    assert len(top) == 3 and top[0]["total"] == ranked[0]
    for row in top:
        assert row["total"] == sum(part["weighted"] for part in row["plugins"].values())
        assert row["total"] == totals[row["node"]]
    by_node = {row["node"]: row for row in top}
    if "n1" in by_node:
        assert by_node["n1"]["load"]["recentCpuM"] == 300

    def load(node):
        return explanation._expand_load(explanation.load_view(snap.nodes[node], snap))

    assert load("n4")["cpu"]["state"] == "stale" and 0 < load("n4")["cpu"]["measuredShare"] < 1
    assert load("n4")["memory"]["state"] == "unserved"  # n4 reports cpu only
    assert load("n5")["cpu"]["state"] == "missing"
    for resource in ("cpu", "memory"):  # no data at all: the fallback as the scores take it
        u = loadview.usage(CycleState(), snap.nodes["n5"], snap, resource)
        assert load("n5")[resource] == {
            "usage": u.avg, "std": 0.0, "state": "missing", "measuredShare": 0.0, "age": None
        }  # fmt: skip
    assert load("n1")["cpu"] == {
        "usage": 10.0, "std": 1.5, "state": "fresh", "measuredShare": 1.0, "age": 1.0
    }  # fmt: skip
    assert load("n1")["recentCpuM"] == 300 and load("n1")["recentCountedCpuM"] == 300
    assert doc["prediction"]["cpuM"] == 300
    assert state.fallbacks == {}  # the record's look at the loads counts no fallback


def test_unschedulable_record_carries_message_and_preemption():
    pod, victim = make_pod("big"), make_pod("low", priority=1)
    post = PostFilterResult(nominated_node="n1", victims=(victim,))
    reasons = {"n1": ["Insufficient cpu"]}
    doc = explanation.expand(
        explanation.unschedulable(
            pod,
            explanation.node_counts(1, 1, 0, 0, 0, 1),
            reasons,
            CycleState(),
            "0/1 ...",
            post,
            1,
        )
    )
    assert doc["message"] == "0/1 ..."
    assert doc["filters"]["byReason"] == {"Insufficient cpu": 1}
    assert doc["preemption"]["nominatedNode"] == "n1"
    assert [v["name"] for v in doc["preemption"]["victims"]] == ["low"]


DETAIL = {"p": 0, "n": [1, 1, 1, 1, 0, 1], "f": [0, {}, {}, None], "c": 150}


def record(store, name, outcome=decisions.BINDING, node="n1", profile="ballast", uid=None):
    return store.add(f"ns/{name}", uid or f"uid-{name}", 1.0, profile, outcome, node, DETAIL)


def test_store_keeps_the_last_pods_and_attempts():
    store = DecisionStore(pods=3, attempts=2, top=1)
    for name in ("a", "b", "c", "d"):
        record(store, name)
    assert len(store) == 3 and store.get("ns", "a") is None
    for _ in range(3):
        number = record(store, "b", decisions.UNSCHEDULABLE, node="")
    assert number == 4
    doc = store.get("ns", "b")
    assert [a["attempt"] for a in doc["attempts"]] == [4, 3]  # newest first, two kept
    first = doc["attempts"][0]
    assert first["prediction"]["cpuM"] == 150 and first["outcome"] == "unschedulable"
    four = DecisionStore(attempts=4)
    for _ in range(3):
        record(four, "a")
    assert [a["attempt"] for a in four.get("ns", "a")["attempts"]] == [3, 2, 1]
    record(store, "e")  # b was used last: c goes
    assert store.get("ns", "c") is None and store.get("ns", "b") is not None


def test_store_outcome_only_for_the_same_pod_and_a_pending_binding():
    store = DecisionStore()
    record(store, "a")
    store.outcome("ns/a", "other-uid", decisions.BOUND)
    assert store.get("ns", "a")["attempts"][0]["outcome"] == decisions.BINDING
    store.outcome("ns/a", "uid-a", decisions.BIND_FAILED, "failed: 500")
    store.outcome("ns/a", "uid-a", decisions.BOUND)  # a late answer changes nothing more
    attempt = store.get("ns", "a")["attempts"][0]
    assert attempt["outcome"] == decisions.BIND_FAILED
    assert attempt["outcomeDetail"] == "failed: 500"


def test_store_lists_newest_first_with_filters():
    store = DecisionStore()
    record(store, "a", node="n1")
    record(store, "b", decisions.UNSCHEDULABLE, node="", profile="other")
    record(store, "c", node="n2")
    assert [d["pod"] for d in store.recent(10)] == ["c", "b", "a"]
    assert [d["pod"] for d in store.recent(1)] == ["c"]
    assert [d["pod"] for d in store.recent(10, node="n1")] == ["a"]
    assert [d["pod"] for d in store.recent(10, profile="other")] == ["b"]
    assert [d["pod"] for d in store.recent(10, outcome="unschedulable")] == ["b"]
    assert store.recent(10, namespace="elsewhere") == []


def test_store_refuses_a_zero_size():
    with pytest.raises(ValueError):
        DecisionStore(pods=0)


def test_the_cycles_estimate_is_what_the_record_says():
    guess = {"cpuM": 420, "memoryBytes": 1 << 28, "source": "profile", "workload": "ns/D/web@abc"}
    doc = explanation.expand({**DETAIL, "prediction": guess})
    assert doc["prediction"] == guess
    assert explanation.expand(DETAIL)["prediction"] == {"cpuM": 150, "source": "requests"}


def test_one_feasible_node_says_why_it_was_not_scored():
    nodes, snap = cluster()
    for considered, why in ((1, explanation.NOMINATED_FIRST), (6, explanation.ONLY_NODE)):
        counts = explanation.node_counts(6, considered, 1, 0, 0, 6)
        doc = explanation.placed(make_pod(), counts, {}, CycleState(), snap, None, "n1", 100, 3)
        winner = explanation.expand(doc)["scores"]["winner"]
        assert winner == {**winner, "node": "n1", "total": None, "tieBreak": why}
