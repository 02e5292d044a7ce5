"""The workloads' history (watcher/workloadhistory.py): per workload the most one replica used in
each of the last 24 peak buckets, kept when the pods are gone, bounded, reloaded on a takeover."""

from __future__ import annotations

import json

from watcher.workloadhistory import ROWS, WorkloadHistory, in_namespace

WEB, DB = "ns/Deployment/web", "ns/StatefulSet/db"
A, B, C = ("ns", "web-1"), ("ns", "web-2"), ("ns", "db-0")
BUCKET = 60.0
T0 = 1000 * BUCKET  # the start of a bucket


def figures(doc, workload, resource="cpu"):
    i = doc["workloads"].index(workload)
    return doc[resource]["max"][i], doc[resource]["bucketMean"][i], doc["held"][i]


def test_each_bucket_keeps_the_most_one_replica_used():
    history = WorkloadHistory(BUCKET)
    keys = {A: WEB, B: WEB, C: DB}
    history.add(T0 + 1, {A: (100.0, 5e6), B: (300.0, 1e6), C: (50.0, 9e6)}, keys)
    history.add(T0 + 30, {A: (200.0, 2e6), B: (10.0, 1e6), C: (70.0, 9e6)}, keys)
    history.add(T0 + BUCKET + 1, {A: (500.0, 1e6)}, keys)  # the next bucket: one replica left
    doc = history.doc(T0 + BUCKET + 1)
    # the max over the replicas' per-bucket maxima, each resource on its own
    assert figures(doc, WEB) == (500, 400, 2)  # buckets 300 and 500
    assert figures(doc, WEB, "memory") == (5e6, 3e6, 2)
    assert figures(doc, DB) == (70, 70, 1)
    assert doc["peakBucket"] == BUCKET and doc["buckets"] == 24


def test_bare_pods_are_left_out():
    history = WorkloadHistory(BUCKET)
    history.add(T0, {A: (1.0, 1.0), ("ns", "bare"): (5.0, 5.0)}, {A: WEB})
    assert history.doc(T0)["workloads"] == [WEB]


def test_the_history_outlives_the_pods_for_a_day_of_buckets():
    history = WorkloadHistory(BUCKET)
    history.add(T0 + 1, {A: (900.0, 1e6)}, {A: WEB})
    history.add(T0 + 5 * BUCKET, {C: (10.0, 1e6)}, {C: DB})
    later = T0 + 23 * BUCKET + 50  # the 24th bucket: the first still counts, no pod of web ran
    history.trim(later)
    assert figures(history.doc(later), WEB) == (900, 900, 1)
    history.trim(T0 + 24 * BUCKET + 1)  # the 25th: web's day holds nothing, db's still does
    assert history.doc(T0 + 24 * BUCKET + 1)["workloads"] == [DB]


def test_an_old_slot_is_not_read_as_this_rounds():
    history = WorkloadHistory(BUCKET)
    history.add(T0 + 1, {A: (900.0, 1e6)}, {A: WEB})
    history.add(T0 + 24 * BUCKET + 1, {A: (100.0, 1e6)}, {A: WEB})  # the same slot, a day on
    assert figures(history.doc(T0 + 24 * BUCKET + 1), WEB) == (100, 100, 1)


def test_max_workloads_drops_the_least_recently_seen():
    history = WorkloadHistory(BUCKET, max_workloads=2)
    for i, key in enumerate(("ns/Deployment/a", "ns/Deployment/b", "ns/Deployment/c")):
        history.add(T0 + i, {("ns", f"p{i}"): (1.0, 1.0)}, {("ns", f"p{i}"): key})
    assert set(history.slots) == {"ns/Deployment/b", "ns/Deployment/c"}


def test_rows_reload_on_takeover_and_another_bucket_length_is_ignored():
    history = WorkloadHistory(BUCKET)
    for i in range(30):
        history.add(T0 + 17 * i, {A: (10.0 * i, 1e6), C: (5.0, 2e6)}, {A: WEB, C: DB})
    blob = history.encode()
    again = WorkloadHistory(BUCKET)
    again.load(blob)
    now = T0 + 17 * 29
    assert again.doc(now) == history.doc(now)
    hourly = WorkloadHistory(3600.0)  # slots of other spans: dropped, refilled by the polls
    hourly.load(blob)
    assert len(hourly) == 0
    hourly.load(b"not a blob")
    assert len(hourly) == 0


def test_the_cost_per_workload_is_fixed():
    history = WorkloadHistory(BUCKET)
    pods = {("ns", f"p{i}"): (1.0, 1.0) for i in range(1000)}
    history.add(T0, pods, {pod: f"ns/Deployment/w{i}" for i, pod in enumerate(pods)})
    per_row = sum(getattr(history, name)[0:1].nbytes for name in ROWS)
    assert per_row == 248  # docs/peak-model.md: 24 x 2 x 4 B of maxima, 24 x 2 B stamps, 8 B


def test_a_namespace_keeps_its_workloads_alone():
    history = WorkloadHistory(BUCKET)
    history.add(
        T0, {A: (1.0, 1.0), ("other", "x"): (2.0, 2.0)}, {A: WEB, ("other", "x"): "other/Job/x"}
    )
    mine = in_namespace(history.doc(T0), "ns")
    assert mine["workloads"] == [WEB] and mine["cpu"]["max"] == [1] and mine["buckets"] == 24


def test_the_pod_poller_serves_and_stores_it_and_a_taking_over_poller_reloads_it(monkeypatch):
    from watcher import podpoller
    from watcher.podpoller import PodPoller
    from watcher.podusage import PodFetch
    from watcher.store import MemoryStore

    class Source:
        def __init__(self) -> None:
            self.t, self.pods = T0, {A: (400.0, 1e6), C: (7.0, 2e6)}

        def fetch(self) -> PodFetch:
            self.t += 15
            return PodFetch(time=self.t, usage=dict(self.pods))

    class Owners:  # the owner reader's lookup: web's and db's pods
        owners: dict = {}

        def update(self, unknown: bool) -> None:
            return None

        def lookup(self, namespace: str, pod: str):
            from shared.workloads import Workload

            if pod.startswith("web"):
                return Workload(namespace, "Deployment", "web", "abc")
            return Workload(namespace, "StatefulSet", "db", "r1")

    store, source = MemoryStore(300), Source()
    monkeypatch.setattr(podpoller, "PERSIST_EVERY", 0.0)
    first = PodPoller(
        source, Owners(), store, 3600, 15, 100, node_window=300, half_life=600, bucket=BUCKET
    )
    for _ in range(3):
        first.poll()
    source.pods = {C: (7.0, 2e6)}  # web's pod is gone (evicted, replaced later)
    for _ in range(25):  # past the node window: its per-pod row is forgotten
        first.poll()
    doc = json.loads(store.pods_doc())
    assert doc["pods"] == ["ns/db-0"]
    assert figures(doc["workloadHistory"], WEB) == (400, 400, 1)
    second = PodPoller(
        source, Owners(), store, 3600, 15, 100, node_window=300, half_life=600, bucket=BUCKET
    )
    second.take_over()
    assert second.history.doc(source.t) == first.history.doc(source.t)
