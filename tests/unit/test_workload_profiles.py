"""Workload keys, per-pod sample validation and the bounded profile rings (pure parts)."""

from __future__ import annotations

import math

from shared.workloads import Workload, parse_key, workload_of
from watcher.owners import owners_from
from watcher.podusage import join, validate_pods
from watcher.profiles import CAPACITY, PodSample, ProfileBook, Ring


def meta(kind: str, owner: str, labels: dict | None = None, controller: bool = True) -> dict:
    return {
        "name": "p",
        "namespace": "ns",
        "labels": labels or {},
        "ownerReferences": [{"kind": kind, "name": owner, "controller": controller, "uid": "u"}],
    }


def test_replicaset_of_a_deployment_names_the_deployment_and_its_revision() -> None:
    w = workload_of(meta("ReplicaSet", "web-5d4f8c7b9", {"pod-template-hash": "5d4f8c7b9"}))
    assert w == Workload("ns", "Deployment", "web", "5d4f8c7b9")
    assert w.key == "ns/Deployment/web"
    assert parse_key(w.key) == ("ns", "Deployment", "web")


def test_bare_replicaset_statefulset_daemonset_job() -> None:
    assert workload_of(meta("ReplicaSet", "rs")) == Workload("ns", "ReplicaSet", "rs", "")
    sts = meta("StatefulSet", "db", {"controller-revision-hash": "db-7c"})
    assert workload_of(sts) == Workload("ns", "StatefulSet", "db", "db-7c")
    assert workload_of(meta("DaemonSet", "agent")).kind == "DaemonSet"
    assert workload_of(meta("Job", "batch-1")) == Workload("ns", "Job", "batch-1", "")


def test_pod_without_controller_owner_has_no_workload() -> None:
    assert workload_of({"name": "p", "namespace": "ns"}) is None
    assert workload_of(meta("ReplicaSet", "rs", controller=False)) is None
    assert workload_of(meta("Node", "n1")) is None  # static pods: not a workload
    assert workload_of({"namespace": "ns", "ownerReferences": "garbage"}) is None
    assert owners_from([{"metadata": {"name": "bare", "namespace": "ns"}}, "junk"]) == {}


def item(ns: str | None, pod: str | None, value: object) -> dict:
    labels = {k: v for k, v in (("namespace", ns), ("pod", pod)) if v is not None}
    return {"metric": labels, "value": [0, value]}


def test_pod_samples_rejected_by_reason_and_duplicates_dropped() -> None:
    items = [
        item("ns", "a", "0.25"),
        item("ns", None, "1"),  # a series without a pod label
        item("ns", "b", "NaN"),
        item("ns", "c", "-1"),
        item("ns", "d", "+Inf"),
        item("ns", "e", "1"),
        item("ns", "e", "2"),
        {"value": [0, "1"]},
    ]
    accepted, rejected = validate_pods(items, 1000.0)
    assert accepted == {("ns", "a"): 250.0}
    assert rejected == {"no_pod_label": 2, "nan": 1, "negative": 1, "inf": 1, "duplicate": 2}


def test_pods_missing_one_metric_are_left_out() -> None:
    rejected: dict = __import__("collections").Counter()
    both = join({("n", "a"): 1.0, ("n", "b"): 2.0}, {("n", "a"): 5.0}, rejected)
    assert both == {("n", "a"): (1.0, 5.0)} and rejected["incomplete"] == 1


def web(rev: str = "h1") -> Workload:
    return Workload("ns", "Deployment", "web", rev)


def test_profile_percentiles_over_replicas_and_time() -> None:
    book = ProfileBook(window=600, poll_interval=15)
    for t in range(10):
        book.add(
            1000.0 + t, {web(): [PodSample(f"web-{i}", 100.0 * (i + 1), 1e6) for i in range(4)]}
        )
    stats = book.doc()["workloads"]["ns/Deployment/web"]["revisions"]["h1"]
    assert stats["samples"] == 40 and stats["replicas"] == 4 and stats["distinctPods"] == 4
    assert stats["cpu"]["max"] == 400.0 and stats["cpu"]["p50"] == 250.0
    assert stats["memory"]["p95"] == 1e6


def test_a_big_workload_costs_what_a_small_one_does() -> None:
    book = ProfileBook(window=3600, poll_interval=15)
    replicas = [PodSample(f"web-{i}", float(i), 1.0) for i in range(500)]
    for t in range(1000):
        book.add(float(t), {web(): replicas})
    ring = book.rings[("ns/Deployment/web", "h1")]
    assert ring.count == CAPACITY and ring.total == 1000 * book.per_poll
    # taken in turn: the ring's samples come from across the replicas, not the first few
    assert ring.cpu.max() > 400 and ring.cpu.min() < 100


def test_samples_leave_after_the_window_and_empty_profiles_go() -> None:
    book = ProfileBook(window=60, poll_interval=15)
    book.add(0.0, {web(): [PodSample("a", 1.0, 1.0)]})
    book.add(50.0, {web(): [PodSample("a", 2.0, 1.0)]})
    book.trim(100.0)
    assert book.rings[("ns/Deployment/web", "h1")].count == 1
    book.trim(200.0)
    assert len(book) == 0 and book.doc()["workloads"] == {}


def test_two_revisions_kept_newest_first_a_third_drops_the_oldest() -> None:
    book = ProfileBook(window=600, poll_interval=15)
    for t, rev in enumerate(("h1", "h2", "h3")):
        book.add(float(t), {web(rev): [PodSample("a", 1.0, 1.0)]})
    doc = book.doc()["workloads"]["ns/Deployment/web"]
    assert doc["current"] == "h3" and list(doc["revisions"]) == ["h3", "h2"]


def test_a_rollout_keeps_its_order_a_rollback_reverses_it() -> None:
    book = ProfileBook(window=600, poll_interval=15)

    def order() -> list[str]:
        return list(book.doc()["workloads"]["ns/Deployment/web"]["revisions"])

    book.add(0.0, {web("h1"): [PodSample("a", 1.0, 1.0)]})
    # h2 rolls out while h1 still runs; whichever a poll lists first, h2 stays the newest
    book.add(15.0, {web("h2"): [PodSample("b", 1.0, 1.0)], web("h1"): [PodSample("a", 1.0, 1.0)]})
    book.add(30.0, {web("h1"): [PodSample("a", 1.0, 1.0)], web("h2"): [PodSample("b", 1.0, 1.0)]})
    assert order() == ["h2", "h1"]
    # rolled back: h1 alone is sampled after h2 stopped, and becomes the newest
    book.add(45.0, {web("h1"): [PodSample("a", 1.0, 1.0)]})
    book.add(60.0, {web("h1"): [PodSample("a", 1.0, 1.0)]})
    assert order() == ["h1", "h2"]


def test_profile_count_is_bounded() -> None:
    book = ProfileBook(window=600, poll_interval=15, max_profiles=10)
    for i in range(50):
        book.add(float(i), {Workload("ns", "Job", f"j{i}"): [PodSample("a", 1.0, 1.0)]})
    assert len(book) == 10 and "ns/Job/j49" in book.doc()["workloads"]


def test_rings_survive_encode_and_decode() -> None:
    book = ProfileBook(window=600, poll_interval=15)
    for t in range(300):
        book.add(1e9 + t, {web(): [PodSample("a", float(t), 2.0 * t)]})
    again = ProfileBook(window=600, poll_interval=15)
    again.load(book.encode(), {"ns/Deployment/web": web()})
    assert again.doc(0)["workloads"] == book.doc(0)["workloads"]
    ring = Ring.decode(Ring(8).encode(), 8)
    assert ring.count == 0 and not math.isnan(ring.last)


def test_batched_percentiles_match_numpy() -> None:
    import numpy as np

    from watcher.profiles import percentiles

    rng = np.random.default_rng(1)
    rings = []
    for n in (1, 2, 7, 300):
        ring = Ring(CAPACITY)
        for t, v in enumerate(rng.uniform(0, 1000, n)):
            ring.add(float(t), float(v), 1.0)
        rings.append(ring)
    for ring, got in zip(rings, percentiles(rings, "cpu", 3), strict=True):
        live = ring.cpu[ring._live()].astype(float)
        want = np.percentile(live, (50, 95))
        assert abs(got["p50"] - want[0]) < 1e-2 and abs(got["p95"] - want[1]) < 1e-2
        assert got["max"] == round(float(live.max()), 3)
    assert percentiles([Ring(4)], "cpu", 0) == [None]


def test_top_renders_one_row_per_revision_and_filters_by_namespace() -> None:
    from watcher.top import render_workloads

    book = ProfileBook(window=600, poll_interval=15)
    book.add(1.0, {web("h1"): [PodSample("a", 300.0, 256 * 1024**2)]})
    book.add(2.0, {web("h2"): [PodSample("b", 500.0, 512 * 1024**2)]})
    doc = {**book.doc(2.0), "pods": 1, "lastPoll": {"ok": True}}
    text = render_workloads(doc)
    rows = [line for line in text.splitlines() if line.startswith("ns/Deployment/web")]
    assert len(rows) == 2 and rows[0].split()[1] == "h2" and "500" in rows[0] and "512" in rows[0]
    assert "0 profile(s)" in render_workloads(doc, ["other"])
