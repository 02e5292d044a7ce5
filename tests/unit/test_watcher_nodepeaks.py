"""Each node's 72-hour max (watcher/nodepeaks.py) and the snapshot's `peak` field."""

from __future__ import annotations

import math

import numpy as np

from watcher import snapshot
from watcher.config import Config
from watcher.nodepeaks import NodePeaks
from watcher.window import Frame, Window

HOUR = 3600.0


def frame(t: float, cpu: dict[str, float], memory: dict[str, float] | None = None) -> Frame:
    return Frame.build(t, {"cpu": cpu, "memory": memory or dict.fromkeys(cpu, 10.0)})


def test_the_most_of_the_last_72_hours():
    peaks = NodePeaks()
    t0 = 1000 * HOUR
    peaks.add(frame(t0 + 10, {"a": 90.0, "b": 20.0}))
    peaks.add(frame(t0 + 30 * HOUR, {"a": 40.0, "b": 30.0, "c": 5.0}))
    got = peaks.peaks("cpu", ["a", "b", "c", "unknown"], t0 + 71 * HOUR)
    assert got[:3].tolist() == [90.0, 30.0, 5.0] and math.isnan(got[3])
    # 72 hours on, the first hour's slot is taken by the new one
    peaks.add(frame(t0 + 72 * HOUR + 5, {"a": 10.0}))
    got = peaks.peaks("cpu", ["a", "b"], t0 + 72 * HOUR + 5)
    assert got.tolist() == [40.0, 30.0]
    assert peaks.peaks("memory", ["a"], t0 + 72 * HOUR).tolist() == [10.0]
    assert math.isnan(peaks.peaks("net_rx", ["a"], t0)[0])


def test_the_bucket_is_a_setting_and_the_look_back_is_72_of_them():
    peaks, minute = NodePeaks(bucket=60.0), 60.0  # an hour replayed at 60x
    t0 = 1000 * minute
    peaks.add(frame(t0 + 1, {"a": 90.0}))
    peaks.add(frame(t0 + 71 * minute, {"a": 40.0}))
    assert peaks.peaks("cpu", ["a"], t0 + 71 * minute).tolist() == [90.0]
    peaks.add(frame(t0 + 72 * minute + 1, {"a": 10.0}))  # the first bucket's slot, reused
    assert peaks.peaks("cpu", ["a"], t0 + 72 * minute + 1).tolist() == [40.0]


def test_the_poller_keeps_node_peaks_per_configured_bucket():
    from watcher.poller import Poller

    config = Config(prometheus_url="http://p", peak_bucket_seconds=60.0)
    poller = Poller(config, provider=None, store=None, namer=None, holder="h")
    assert poller.peaks.bucket == 60.0


def test_a_missing_sample_is_no_zero():
    peaks = NodePeaks()
    f = frame(HOUR, {"a": 50.0, "b": 60.0})
    f.values["cpu"][1] = np.nan
    peaks.add(f)
    got = peaks.peaks("cpu", ["a", "b"], HOUR)
    assert got[0] == 50.0 and math.isnan(got[1])


def test_the_snapshot_serves_peak_at_least_the_windows_max():
    cfg = Config(prometheus_url="http://x").validate()
    window, peaks = Window(300.0), NodePeaks()
    t0 = 500 * HOUR
    old = frame(t0 - 3 * HOUR, {"a": 95.0})  # hours ago: out of the window, in the peaks
    peaks.add(old)
    for i in range(5):
        f = frame(t0 + 15 * i, {"a": 30.0 + i})
        window.add(f)
        peaks.add(f)
    specs = cfg.metric_specs()
    at = snapshot.STAT_FIELDS.index("peak")
    rows = snapshot.node_stats(window, specs, cfg, peaks=peaks)
    assert rows["a"]["cpu"][at] == 95.0
    assert rows["a"]["cpu"][snapshot.STAT_FIELDS.index("max")] == 34.0
    plain = snapshot.node_stats(window, specs, cfg)
    assert plain["a"]["cpu"][at] == 34.0  # nothing longer known: the window's max
