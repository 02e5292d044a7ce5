"""Frames, the window, the snapshot and the views built on it: pure functions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shared import wire
from watcher import snapshot
from watcher.config import load
from watcher.errors import StoreError
from watcher.views import View, duration_name
from watcher.window import Frame, Window

CFG = load(env={"BALLAST_PROMETHEUS_URL": "http://p", "BALLAST_POLL_INTERVAL": "1"})


def frame(t: float, cpu: dict[str, float], memory: dict[str, float] | None = None) -> Frame:
    return Frame.build(t, {"cpu": cpu, "memory": memory if memory is not None else cpu})


def test_frame_round_trip():
    f = frame(100.5, {"a": 1.5, "b": 99.0}, {"a": 3.0})
    back = Frame.decode(f.encode())
    assert back.time == 100.5 and back.nodes == ("a", "b")
    assert back.values["cpu"].tolist() == [1.5, 99.0]
    assert back.values["memory"][0] == 3.0 and np.isnan(back.values["memory"][1])
    with pytest.raises(StoreError):
        Frame.decode(b"garbage")


def test_window_matrix_aligns_changing_node_sets_and_trims():
    w = Window(length=10)
    w.add(frame(0, {"a": 1, "b": 2}))
    w.add(frame(5, {"b": 3, "c": 4}))
    w.add(frame(5, {"z": 9}))  # not newer: ignored
    w.add(frame(9, {"a": 5, "b": 6}))
    nodes = w.nodes()
    assert nodes == ["a", "b", "c"]
    times, m = w.matrix("cpu", nodes)
    assert times.tolist() == [0, 5, 9]
    assert np.array_equal(m, np.array([[1, 2, np.nan], [np.nan, 3, 4], [5, 6, np.nan]]), True)
    assert w.samples("cpu", "b") == [(0, 2.0), (5, 3.0), (9, 6.0)]
    w.trim(now=14)
    assert [f.time for f in w.frames] == [5, 9]


def build_view(now: float, frames: list[Frame]) -> View:
    w = Window(CFG.window)
    for f in frames:
        w.add(f)
    specs = CFG.metric_specs()
    doc = snapshot.build(
        version="v1",
        built=now,
        config=CFG,
        specs=specs,
        source="Prometheus",
        nodes=snapshot.node_stats(w, specs, CFG),
        last_poll={"time": now, "ok": True, "error": None, "duration": 0.1},
        last_success=now,
        leader="me",
        counters={},
    )
    return View(json.loads(doc))


def test_views_add_age_and_state_at_request_time():
    t0 = 1_000_000.0
    view = build_view(t0 + 20, [frame(t0 + i, {"a": 40.0 + i % 2, "old": 10.0}) for i in range(20)]
                      + [frame(t0 + 20, {"a": 41.0})])  # fmt: skip
    node = view.node("a", t0 + 21)
    cpu = node["metrics"]["cpu"]
    assert cpu["count"] == 21 and cpu["latest"] == 41.0 and cpu["min"] == 40.0
    assert cpu["age"] == pytest.approx(1.0) and cpu["state"] == "fresh"
    assert cpu["horizon"] == pytest.approx(5.0)  # 5 points / 1 point per second
    assert view.node("a", t0 + 20 + 6)["state"] == "stale"
    assert view.node("a", t0 + 20 + 301)["state"] == "expired"
    # "old" stopped reporting one poll before "a"; still fresh (it never moved: horizon 300).
    assert view.node("old", t0 + 21)["metrics"]["cpu"]["horizon"] == 300.0
    assert view.node("nope", t0) is None
    assert view.states(t0 + 21) == {"fresh": 2, "stale": 0, "expired": 0}
    assert view.states(t0 + 26) == {"fresh": 1, "stale": 1, "expired": 0}
    assert view.states(t0 + 400) == {"fresh": 0, "stale": 0, "expired": 2}
    # The spliced JSON text of /api/v1/nodes says what the per-node objects say.
    assert view.nodes_doc(t0 + 26)["nodes"]["a"] == view.node("a", t0 + 26)


def test_envelope_leaves_out_expired_metrics_and_unknown_hosts():
    t0 = 2_000_000.0
    view = build_view(t0 + 400, [frame(t0, {"gone": 5.0}), frame(t0 + 400, {"here": 50.0})])
    env = view.envelope(t0 + 401)
    assert list(env["data"]["NodeMetricsMap"]) == ["here"]
    assert env["timestamp"] == int(t0 + 400) and env["window"]["duration"] == "5m"
    assert view.envelope(t0 + 401, host="gone") is None
    assert view.envelope(t0 + 401, host="ghost") is None
    assert view.expired_count(t0 + 401) == 2  # cpu and memory of "gone"
    metrics = view.envelope(t0 + 401, host="here")["data"]["NodeMetricsMap"]["here"]["metrics"]
    # paypal/load-watcher v0.2.4 from Prometheus: every metric's avg_over_time, then every
    # metric's stddev_over_time; no Latest, which Trimaran would read in place of AVG.
    assert [(m["name"], m["type"], m["operator"]) for m in metrics] == [
        ("node_cpu_utilisation", "CPU", "AVG"), ("node_memory_utilisation", "Memory", "AVG"),
        ("node_cpu_utilisation", "CPU", "STD"), ("node_memory_utilisation", "Memory", "STD"),
    ]  # fmt: skip
    assert {m["rollup"] for m in metrics} == {"5m"}


def test_envelope_operators_on_request_and_by_source():
    t0 = 3_000_000.0
    view = build_view(t0 + 2, [frame(t0, {"n": 10.0}), frame(t0 + 2, {"n": 30.0})])

    def answer(operators=None):
        metrics = view.envelope(t0 + 3, operators=operators)["data"]["NodeMetricsMap"]["n"]
        return [(m["type"], m["operator"], m["value"]) for m in metrics["metrics"]]

    asked = answer(wire.parse_operators("Latest,AVG"))
    assert asked == [("CPU", "Latest", 30.0), ("Memory", "Latest", 30.0),
                     ("CPU", "AVG", 20.0), ("Memory", "AVG", 20.0)]  # fmt: skip
    assert [op for _, op, _ in answer()] == ["AVG", "AVG", "STD", "STD"]
    # From metrics-server load-watcher answers CPU then Memory as Latest, unnamed, no rollup.
    view.doc["source"] = wire.METRICS_SERVER
    env = view.envelope(t0 + 3)
    assert env["data"]["NodeMetricsMap"]["n"]["metrics"] == [
        {"name": "", "type": "CPU", "operator": "Latest", "rollup": "", "value": 30.0},
        {"name": "", "type": "Memory", "operator": "Latest", "rollup": "", "value": 30.0},
    ]


@pytest.mark.parametrize("text", ["", "avg", "AVG,", "AVG,AVG", "AVG, STD", "Unknown"])
def test_unknown_or_repeated_operators_are_refused(text):
    with pytest.raises(wire.WireFormatError, match="operators"):
        wire.parse_operators(text)


@pytest.mark.parametrize("seconds,name", [(300, "5m"), (900, "15m"), (90, "90s"), (3600, "1h")])
def test_duration_name(seconds, name):
    assert duration_name(seconds) == name
