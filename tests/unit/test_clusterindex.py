"""The cluster index the constraint plugins read: kept in step with pods coming and going."""

from __future__ import annotations

import random

import pytest

from scheduler.framework import PodInfo, TrialEdit, snapshot_of
from scheduler.framework.clusterindex import (
    NAMESPACES,
    PVCS,
    SELECTORS_PER_NAMESPACE,
    ClusterIndex,
    object_key,
)
from scheduler.framework.labels import LabelSelector
from scheduler.framework.resources import pod_info
from tests.unit.plugin_helpers import make_node, make_pod


def _labelled(name: str, **labels: str):
    pod = make_pod(name)
    pod.labels = dict(labels)
    return pod


def test_label_lookups_follow_adds_replacements_and_removals():
    index = ClusterIndex()
    web = _labelled("web", app="web", tier="front")
    db = _labelled("db", app="db")
    index.add_pod(web, "n1")
    index.add_pod(db, "n2")
    assert index.with_label("ns", "app", "web") == {web.uid}
    assert index.with_label_key("ns", "app") == {web.uid, db.uid}
    assert index.with_label("other", "app", "web") == frozenset()
    relabelled = _labelled("web", app="api")
    index.add_pod(relabelled, "n3")  # same uid: the old copy goes
    assert index.with_label("ns", "app", "web") == frozenset()
    assert index.placed[web.uid] == "n3" and index.pods[web.uid] is relabelled
    index.remove_pod(db.uid)
    index.remove_pod("unknown")
    assert set(index.in_namespace("ns")) == {web.uid}
    assert index.with_label_key("ns", "tier") == frozenset()


def test_affinity_pods_are_indexed_cluster_wide():
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = make_pod(
        "anti",
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    pref = make_pod(
        "pref",
        affinity={
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": term}
                ]
            }
        },
    )
    index = ClusterIndex()
    for pod in (anti, pref, make_pod("plain")):
        index.add_pod(pod, "n1")
    assert set(index.affinity_pods) == {anti.uid, pref.uid}
    assert set(index.anti_affinity_pods) == {anti.uid}
    index.remove_pod(anti.uid)
    assert set(index.anti_affinity_pods) == set()


def test_objects_by_kind_and_key():
    index = ClusterIndex()
    ns = {"metadata": {"name": "team", "labels": {"env": "prod"}}}
    claim = {"metadata": {"name": "data", "namespace": "team"}}
    index.replace(NAMESPACES, [ns])
    index.put(PVCS, object_key(claim), claim)
    assert NAMESPACES in index.synced and PVCS not in index.synced
    assert index.namespace_labels("team") == {"env": "prod"} and index.namespace_labels("x") is None
    assert index.objects[PVCS]["team/data"] is claim
    index.drop(PVCS, "team/data")
    assert index.objects[PVCS] == {}


# --- counts per selector (PodTopologySpread) ----------------------------------------------
def _recount(index: ClusterIndex, ns: str, selector: LabelSelector) -> dict[str, int]:
    counts: dict[str, int] = {}
    for uid in index.matching(ns, selector):
        counts[index.placed[uid]] = counts.get(index.placed[uid], 0) + 1
    return counts


def _by_value(index: ClusterIndex, by_node: dict[str, int], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, n in by_node.items():
        node = (index.nodes or {}).get(name)
        if node is not None:
            value = node.labels.get(key, "")
            out[value] = out.get(value, 0) + n
    return out


def _random_pod(rnd: random.Random, i: int, prefix: str = "p") -> PodInfo:
    labels = {k: rnd.choice("ab") for k in ("app", "rev") if rnd.random() < 0.8}
    meta: dict = {"name": f"{prefix}{i % 40}", "namespace": rnd.choice(["ns", "ns", "other"])}
    meta["uid"] = f"uid-{meta['namespace']}-{meta['name']}"
    meta["labels"] = labels
    if rnd.random() < 0.1:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod_info({"metadata": meta, "spec": {"containers": []}})


@pytest.mark.parametrize("seed", range(30))
def test_selector_counts_equal_a_recount_through_adds_removes_and_trial_edits(seed):
    """Counts asked at any moment stay equal to a walk over the pods, per node and per zone,
    through adds, replacements (relabelled, terminating), removals, relabelled and deleted
    nodes, and preemption's trial edits (and their restore)."""
    rnd = random.Random(seed)
    nodes = [make_node(f"n{i}", labels={"zone": f"z{i % 3}"} if i % 5 else {}) for i in range(8)]
    snap = snapshot_of(nodes)
    index = snap.cluster
    selectors = [
        LabelSelector.parse({"matchLabels": {"app": "a"}}),
        LabelSelector.parse({"matchExpressions": [{"key": "rev", "operator": "Exists"}]}),
        LabelSelector.parse(
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["b"]}]}
        ),
        LabelSelector.parse({"matchLabels": {"app": "a", "rev": "b"}}),
    ]

    def check() -> None:
        for ns in ("ns", "other"):
            for sel in selectors:
                counts = index.selector_counts(ns, sel)
                assert counts.by_node == _recount(index, ns, sel), (ns, sel)
                zones = index.value_counts(counts, "zone")
                assert zones == _by_value(index, counts.by_node, "zone"), (ns, sel)

    for step in range(120):
        roll = rnd.random()
        if roll < 0.55:
            pod = _random_pod(rnd, step)
            where = rnd.choice([*snap.nodes, "unknown-node"])
            was = snap.nodes.get(index.placed.get(pod.uid, ""))
            if was is not None:  # a known uid moves: off its old node too
                was.remove_pod(pod)
            index.add_pod(pod, where)
            if where in snap.nodes:
                snap.nodes[where].add_pod(pod)
        elif roll < 0.75 and index.pods:
            uid = rnd.choice(sorted(index.pods))
            node = snap.nodes.get(index.placed[uid])
            if node is not None:
                node.remove_pod(index.pods[uid])
            index.remove_pod(uid)
        elif roll < 0.85:
            name = rnd.choice(sorted(snap.nodes))
            snap.nodes[name].labels = {"zone": rnd.choice(["z0", "z1", "z9"])}
            if rnd.random() < 0.3:
                snap.nodes.pop(name)
            index.nodes_changed()
        else:
            node = snap.nodes[rnd.choice(sorted(snap.nodes))]
            before = {s: dict(index.selector_counts("ns", s).by_node) for s in selectors}
            with TrialEdit(snap, node) as trial:
                for pod in list(node.pods.values()):
                    if rnd.random() < 0.7:
                        trial.remove(pod)
                check()
                for pod in list(trial._removed.values()):
                    if rnd.random() < 0.5:
                        trial.add(pod[0])
                trial.add(_random_pod(rnd, step, "nominated"))
                check()
            assert {s: index.selector_counts("ns", s).by_node for s in selectors} == before
        if rnd.random() < 0.3:
            check()
    check()


def test_selector_counts_keep_the_most_recently_asked_selectors():
    index = ClusterIndex()
    pod = _labelled("web", app="web")
    index.add_pod(pod, "n1")
    for i in range(SELECTORS_PER_NAMESPACE + 5):
        sel = LabelSelector.parse({"matchLabels": {"app": "web", "k": str(i)}})
        assert index.selector_counts("ns", sel).by_node == {}
    kept = index._selectors["ns"]
    assert len(kept) == SELECTORS_PER_NAMESPACE
    web = LabelSelector.parse({"matchLabels": {"app": "web"}})
    assert index.selector_counts("ns", web).by_node == {"n1": 1}
    assert index.selector_counts("ns", LabelSelector()).by_node == {}  # empty: nothing
    index.remove_pod(pod.uid)
    assert index.selector_counts("ns", web).by_node == {}
