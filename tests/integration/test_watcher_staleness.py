"""Staleness follows the data: fresh -> stale -> expired when the source stops, and back."""

from __future__ import annotations

import time

from tests.fixtures.ports import wait_for

NODE = "stale-a"
# Short times so the whole cycle takes seconds: fresh for up to 3 s, expired after 8 s.
TIMING = {"rate_range": "3s", "window": 20.0, "expiry": 8.0, "horizon_min": 2.0, "horizon_max": 3.0}


def node_state(watcher) -> str | None:
    resp = watcher.get(f"/api/v1/nodes/{NODE}")
    return resp.json()["state"] if resp.status_code == 200 else None


def watch_states(watcher, until: str, timeout: float) -> list[str]:
    """The distinct states seen, in order, until `until` shows up."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = node_state(watcher)
        if state and (not seen or seen[-1] != state):
            seen.append(state)
        if state == until:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"never reached {until!r}; saw {seen}")


def test_states_follow_exporter_and_prometheus(make_exporter, make_prometheus, make_watcher):
    exporter = make_exporter()
    exporter.set(NODE, cpu=30.0, memory=40.0)
    prometheus = make_prometheus([exporter.target])
    watcher = make_watcher(prometheus.url, **TIMING)
    watcher.wait_nodes([NODE])
    wait_for(lambda: node_state(watcher) == "fresh", timeout=20, what="fresh")

    # The exporter stops answering: Prometheus marks its series stale, the watcher ages them.
    exporter.pause()
    assert watch_states(watcher, "expired", timeout=30) == ["fresh", "stale", "expired"]
    node = watcher.json(f"/api/v1/nodes/{NODE}")
    assert node["metrics"]["memory"]["age"] > TIMING["expiry"]
    assert node["metrics"]["memory"]["latest"] == 40.0  # kept and flagged, never zeroed
    # load-watcher's envelope has no staleness field: expired data is left out instead (CPU's
    # rate() outlives the scrapes by its range, so it expires a little later than memory).
    wait_for(
        lambda: watcher.get(f"/watcher?host={NODE}").status_code == 404,
        timeout=10,
        what="the expired node to leave the envelope",
    )

    exporter.resume()
    wait_for(lambda: node_state(watcher) == "fresh", timeout=30, what="fresh after resume")
    assert watcher.get(f"/watcher?host={NODE}").status_code == 200

    # Prometheus itself goes away: polls fail fast, health says so, readiness names it but
    # holds while there is data to serve (tests/integration/test_watcher_probes.py), data ages.
    prometheus.stop()
    wait_for(lambda: watcher.get("/watcher/health").status_code == 503, timeout=10, what="503")
    ready = watcher.get("/readyz")
    assert ready.status_code == 200
    assert any(r.startswith("provider:") for r in ready.json()["reasons"])
    assert watch_states(watcher, "expired", timeout=30)[-2:] == ["stale", "expired"]
    wait_for(lambda: watcher.get("/readyz").status_code == 503, timeout=10, what="unready")
    status = watcher.status()
    assert status["provider"]["ok"] is False and status["counters"]["pollErrors"]

    prometheus.start()
    wait_for(lambda: node_state(watcher) == "fresh", timeout=40, what="fresh after restart")
    wait_for(lambda: watcher.get("/readyz").status_code == 200, timeout=10, what="ready")
    assert watcher.get("/watcher/health").status_code == 200


def test_a_removed_node_leaves_after_the_window(exporter, prometheus, make_watcher):
    exporter.set("gone-soon", cpu=10.0, memory=10.0)
    exporter.set("stays", cpu=20.0, memory=20.0)
    watcher = make_watcher(prometheus.url, window=4.0, rate_range="3s")
    watcher.wait_nodes(["gone-soon", "stays"])
    exporter.remove("gone-soon")
    wait_for(
        lambda: "gone-soon" not in watcher.json("/api/v1/nodes")["nodes"],
        timeout=20,
        what="the removed node to leave the window",
    )
    assert "stays" in watcher.json("/api/v1/nodes")["nodes"]
    assert watcher.get("/api/v1/nodes/gone-soon").status_code == 404
