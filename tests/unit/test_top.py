"""`ballast top`'s table, from /api/v1/nodes documents and from a plain load-watcher envelope."""

from __future__ import annotations

from shared import wire
from watcher import top


def stats(latest, avg, std, p95, mx, state="fresh", age=3.0):
    return {"latest": latest, "avg": avg, "std": std, "p95": p95, "max": mx,
            "state": state, "age": age}  # fmt: skip


DOC = {
    "timestamp": 1000.0,
    "window": {"duration": "5m", "seconds": 300},
    "source": "Prometheus",
    "lastPoll": {"time": 996.0, "ok": True, "error": None, "duration": 0.3},
    "nodes": {
        "node-b": {"state": "stale", "age": 95.0,
                   "metrics": {"cpu": stats(80.0, 70.5, 4.25, 79.0, 81.0),
                               "memory": stats(30.0, 29.0, 1.0, 30.0, 31.0)}},
        "node-a": {"state": "fresh", "age": 2.0,
                   "metrics": {"cpu": stats(12.0, 11.0, 0.5, 12.5, 13.0)}},
        "node-c": {"state": "expired", "age": 400.0, "metrics": {}},
    },
}  # fmt: skip


def rows(text: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in text.splitlines()[2:]}


def test_table_has_every_node_with_its_statistics():
    text = top.render(DOC)
    lines = text.splitlines()
    assert "Prometheus" in lines[0] and "window 5m" in lines[0] and "4s ago: ok" in lines[0]
    assert lines[1].split()[:4] == ["NAME", "STATE", "AGE", "CPU%"]
    table = rows(text)
    assert list(table) == ["node-a", "node-b", "node-c"]
    assert table["node-b"] == ["node-b", "stale", "95s", "80.0", "70.5", "4.2", "79.0", "81.0",
                               "30.0", "29.0", "1.0", "30.0", "31.0"]  # fmt: skip
    # No memory data is shown as '-', never as 0.
    assert table["node-a"][8:] == ["-"] * 5
    assert table["node-c"][1:] == ["expired", "7m"] + ["-"] * 10


def test_columns_line_up_with_the_header():
    lines = top.render(DOC).splitlines()[1:]
    assert len({len(line) for line in lines}) == 1


def test_sorting_and_filtering():
    assert list(rows(top.render(DOC, sort="cpu"))) == ["node-b", "node-a", "node-c"]
    assert list(rows(top.render(DOC, sort="age"))) == ["node-c", "node-b", "node-a"]
    text = top.render(DOC, only=["node-b", "nope"])
    assert "node-a" not in text and "node-b" in text
    assert text.splitlines()[-1] == "not known to the watcher: nope"


def test_failed_poll_is_shown():
    doc = dict(DOC, lastPoll={"time": 900.0, "ok": False, "error": "connection refused"})
    assert "FAILED: connection refused" in top.render(doc).splitlines()[0]


def test_plain_load_watcher_envelope_is_read():
    env = wire.Envelope(
        timestamp=1000,
        window=wire.Window("15m", 100, 1000),
        source="Prometheus",
        nodes={
            "n1": [
                wire.Metric("cpu", wire.CPU, wire.AVG, "15m", 40.0),
                wire.Metric("cpu", wire.CPU, wire.STD, "15m", 2.0),
                wire.Metric("mem", wire.MEMORY, wire.AVG, "15m", 55.0),
            ]
        },
    )
    doc = top.from_envelope(env)
    assert doc["nodes"]["n1"]["metrics"]["cpu"]["avg"] == 40.0
    row = rows(top.render(doc))["n1"]
    assert row[1] == "unknown"
    assert row[3:8] == ["-", "40.0", "2.0", "-", "-"]
    assert row[8:10] == ["-", "55.0"]
