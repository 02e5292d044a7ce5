"""The watcher's per-pod statistics (watcher/podstats.py): exact window figures, history
percentiles within a bucket, decay, reload, forgetting gone pods, a fixed cost per pod."""

from __future__ import annotations

import numpy as np
import pytest

from watcher.podstats import ROWS, PodStats, in_namespace

A, B = ("ns", "a"), ("ns", "b")


def column(doc, pod, resource, scope, field):
    return doc[resource][scope][field][doc["pods"].index(f"{pod[0]}/{pod[1]}")]


def test_window_figures_are_exact_over_the_last_samples():
    stats = PodStats(window=300, poll_interval=15, half_life=3600)
    assert stats.k == 20
    values = np.arange(1, 31, dtype=float) * 10  # 30 polls: the window holds the last 20
    for i, v in enumerate(values):
        stats.add(1000 + 15 * i, {A: (v, 1e6)}, {A: "ns/Deployment/web"})
    doc = stats.doc(1000 + 15 * 29)
    last = values[-20:]
    assert column(doc, A, "cpu", "window", "mean") == pytest.approx(last.mean(), abs=0.05)
    assert column(doc, A, "cpu", "window", "std") == pytest.approx(last.std(), abs=0.05)
    for field, q in (("p90", 90), ("p95", 95), ("p99", 99)):
        expected = np.percentile(last, q)
        assert column(doc, A, "cpu", "window", field) == pytest.approx(expected, abs=0.05)
    assert column(doc, A, "cpu", "window", "max") == 300.0
    assert doc["samples"] == [20] and doc["workloads"] == ["ns/Deployment/web"]
    # the history saw all 30, the older ones weighing less (halving every 3600 s)
    weights = 2.0 ** (-(15.0 * (29 - np.arange(30))) / 3600)
    decayed = (weights * values).sum() / weights.sum()
    assert column(doc, A, "cpu", "history", "mean") == pytest.approx(decayed, abs=0.05)
    assert column(doc, A, "cpu", "history", "weight") == pytest.approx(weights.sum(), abs=0.01)


def test_history_percentiles_are_within_a_bucket_of_the_truth():
    rng = np.random.default_rng(7)
    stats = PodStats(window=300, poll_interval=15, half_life=1e9)  # no decay: plain percentiles
    samples = rng.gamma(2.0, 150.0, 2000) + 1.0
    for i, v in enumerate(samples):
        stats.add(15.0 * i, {A: (v, 3e8)})
    doc = stats.doc(15.0 * len(samples))
    for field, q in (("p90", 90), ("p95", 95), ("p99", 99)):
        got = column(doc, A, "cpu", "history", field)
        assert got == pytest.approx(np.percentile(samples, q), rel=0.13)
    # a steady value reads exactly (clamped to what was seen), not its bucket's middle
    assert column(doc, A, "memory", "history", "p95") == 3e8


def test_an_old_burst_fades_from_the_history():
    stats = PodStats(window=300, poll_interval=15, half_life=600)
    t = 0.0
    for _ in range(20):
        stats.add(t, {A: (2000.0, 1e6)})
        t += 15
    for _ in range(400):  # 100 minutes quiet: ten half-lives
        stats.add(t, {A: (100.0, 1e6)})
        t += 15
    doc = stats.doc(t)
    assert column(doc, A, "cpu", "history", "p99") < 150
    assert column(doc, A, "cpu", "window", "max") == 100.0
    assert column(doc, A, "cpu", "history", "max") == 2000.0  # the most it used in 24 hours


def test_the_history_max_is_the_last_days():
    stats = PodStats(window=300, poll_interval=15, half_life=3600)
    t0, hour = 100 * 3600.0, 3600.0  # the start of an hour
    stats.add(t0 + 10, {A: (900.0, 1e6)})
    stats.add(t0 + 5 * hour, {A: (400.0, 1e6)})
    stats.add(t0 + 23 * hour + 3000, {A: (100.0, 1e6)})  # the 24th hour: the first still counts
    assert column(stats.doc(t0 + 23 * hour + 3000), A, "cpu", "history", "max") == 900.0
    stats.add(t0 + 24 * hour + 10, {A: (100.0, 1e6)})  # the 25th takes the first one's slot
    assert column(stats.doc(t0 + 24 * hour + 10), A, "cpu", "history", "max") == 400.0
    # five hours on, only the newest hours are left
    assert column(stats.doc(t0 + 29 * hour + 10), A, "cpu", "history", "max") == 100.0


def test_held_says_how_many_of_the_days_buckets_the_pods_max_covers():
    stats = PodStats(window=7200, poll_interval=15, half_life=3600)
    t0, hour = 100 * 3600.0, 3600.0
    stats.add(t0 + 10, {A: (900.0, 1e6)})
    stats.add(t0 + 20, {A: (800.0, 1e6)})  # the same bucket: still one
    stats.add(t0 + hour + 10, {B: (100.0, 1e6)})
    stats.add(t0 + 2 * hour + 10, {A: (100.0, 1e6), B: (100.0, 1e6)})
    doc = stats.doc(t0 + 2 * hour + 10)
    assert dict(zip(doc["pods"], doc["held"], strict=True)) == {"ns/a": 2, "ns/b": 2}
    assert in_namespace(doc, "ns")["held"] == [2, 2] and in_namespace(doc, "x")["held"] == []
    for i in range(3, 30):  # a day and more, every hour: at most the 24 of the look-back
        stats.add(t0 + i * hour + 10, {A: (100.0, 1e6)})
    doc = stats.doc(t0 + 29 * hour + 10)
    assert doc["held"][doc["pods"].index("ns/a")] == 24


def test_the_bucket_is_a_setting_and_the_look_back_is_24_of_them():
    stats = PodStats(window=5, poll_interval=1, half_life=720, bucket=60.0)  # an hour at 60x
    t0 = 1000 * 60.0
    stats.add(t0 + 1, {A: (900.0, 1e6)})
    stats.add(t0 + 23 * 60 + 50, {A: (100.0, 1e6)})  # the 24th bucket: the first still counts
    assert column(stats.doc(t0 + 23 * 60 + 50), A, "cpu", "history", "max") == 900.0
    stats.add(t0 + 24 * 60 + 1, {A: (100.0, 1e6)})  # the 25th takes the first one's slot
    doc = stats.doc(t0 + 24 * 60 + 1)
    assert column(doc, A, "cpu", "history", "max") == 100.0 and doc["peakBucket"] == 60.0


def test_a_reload_with_another_bucket_length_drops_the_maxima_alone():
    hourly = PodStats(window=300, poll_interval=15, half_life=3600)
    for i in range(25):
        hourly.add(15.0 * i, {A: (10.0 * i + 5, 1e6)})
    blob = hourly.encode()
    # Hour 0's slot read as minute 0's would still count at minute 6: the maxima are dropped.
    minutes = PodStats(window=300, poll_interval=15, half_life=3600, bucket=60.0)
    minutes.load(blob)
    now = 15.0 * 24
    doc, before = minutes.doc(now), hourly.doc(now)
    assert column(doc, A, "cpu", "history", "max") == 0.0  # dropped: no bucket yet
    for field in ("mean", "std", "p95", "weight"):  # the rest is kept
        assert column(doc, A, "cpu", "history", field) == column(before, A, "cpu", "history", field)
    assert column(doc, A, "cpu", "window", "max") == 245.0
    minutes.add(now + 15, {A: (30.0, 1e6)})
    assert column(minutes.doc(now + 15), A, "cpu", "history", "max") == 30.0
    # the same bucket length keeps them
    again = PodStats(window=300, poll_interval=15, half_life=3600)
    again.load(blob)
    assert column(again.doc(now), A, "cpu", "history", "max") == 245.0


def test_gone_pods_are_forgotten_and_rows_reused():
    stats = PodStats(window=300, poll_interval=15, half_life=3600)
    stats.add(0.0, {A: (1.0, 1.0), B: (2.0, 2.0)})
    stats.add(200.0, {A: (1.0, 1.0)})
    stats.trim(400.0)  # B last seen 400 s ago, over the window
    assert list(stats.slots) == [A]
    rows = len(stats.last)
    stats.add(400.0, {("ns", "c"): (5.0, 5.0)})
    assert len(stats.last) == rows  # B's row reused
    doc = stats.doc(400.0)
    assert column(doc, ("ns", "c"), "cpu", "window", "mean") == 5.0
    assert column(doc, ("ns", "c"), "cpu", "history", "weight") == 1.0


def test_rows_reload_on_takeover_and_a_foreign_blob_is_ignored():
    stats = PodStats(window=300, poll_interval=15, half_life=3600)
    for i in range(25):
        stats.add(15.0 * i, {A: (10.0 * i, 1e6), B: (5.0, 2e6)}, {A: "ns/Deployment/web"})
    blob = stats.encode()
    other = PodStats(window=300, poll_interval=15, half_life=3600)
    other.load(blob)
    assert other.doc(400.0) == stats.doc(400.0)
    shorter = PodStats(window=60, poll_interval=15, half_life=3600)  # another ring length
    shorter.load(blob)
    assert len(shorter) == 0
    shorter.load(b"not a blob")
    assert len(shorter) == 0


def test_the_cost_per_pod_is_fixed():
    stats = PodStats(window=300, poll_interval=15, half_life=3600)
    stats.add(0.0, {("ns", f"p{i}"): (1.0, 1.0) for i in range(1000)})
    per_row = sum(getattr(stats, name)[0:1].nbytes for name in ROWS)
    arrays = sum(getattr(stats, name).nbytes for name in ROWS)
    assert arrays == per_row * len(stats.last)
    assert per_row <= 880  # docs/peak-model.md: 860 bytes of arrays per pod at a 20-sample window


def test_max_pods_drops_the_least_recently_sampled():
    stats = PodStats(window=300, poll_interval=15, half_life=3600, max_pods=2)
    stats.add(0.0, {A: (1.0, 1.0)})
    stats.add(1.0, {B: (1.0, 1.0)})
    stats.add(2.0, {("ns", "c"): (1.0, 1.0)})
    assert set(stats.slots) == {B, ("ns", "c")}


def test_the_pod_poller_stores_them_and_a_taking_over_poller_reloads_them(monkeypatch):
    import json

    from watcher import podpoller
    from watcher.podpoller import PodPoller
    from watcher.podusage import PodFetch
    from watcher.store import MemoryStore

    class Source:
        def __init__(self) -> None:
            self.t = 1000.0

        def fetch(self) -> PodFetch:
            self.t += 15
            return PodFetch(time=self.t, usage={A: (self.t % 100, 1e6), B: (7.0, 2e6)})

    store, source = MemoryStore(300), Source()
    monkeypatch.setattr(podpoller, "PERSIST_EVERY", 0.0)  # the rows at every poll, not each minute
    first = PodPoller(source, None, store, 3600, 15, 100, node_window=300, half_life=600)
    for _ in range(5):
        first.poll()
    doc = json.loads(store.pods_doc())
    assert doc["pods"] == ["ns/a", "ns/b"] and doc["samples"] == [5, 5]
    assert doc["halfLife"] == 600 and doc["lastPoll"]["ok"]
    assert doc["workloads"] == [None, None]  # no owner reader: statistics all the same
    second = PodPoller(source, None, store, 3600, 15, 100, node_window=300, half_life=600)
    second.take_over()
    assert second.stats.doc(source.t) == first.stats.doc(source.t)
