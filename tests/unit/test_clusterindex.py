"""The cluster index the constraint plugins read: kept in step with pods coming and going."""

from __future__ import annotations

from scheduler.framework.clusterindex import NAMESPACES, PVCS, ClusterIndex, object_key
from tests.unit.plugin_helpers import make_pod


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
