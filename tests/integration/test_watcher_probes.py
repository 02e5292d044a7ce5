"""The watcher's probes in a real replica (two workers, Redis, Prometheus): /readyz means "can
serve" and stays up through a Prometheus outage shorter than the expiry, /healthz fails only
for a wedged poller."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.fixtures.ports import wait_for

NODE = "probe-a"
INTERVAL = 0.5
# Short times so the whole cycle takes seconds: data expires 6 s after the last good poll.
TIMING = {
    "poll_interval": INTERVAL, "provider_timeout": 1.0, "rate_range": "3s", "window": 20.0,
    "expiry": 6.0, "workers": 2, "pod_usage": False,
}  # fmt: skip


def polls(watcher) -> tuple[int, int, dict]:
    """(polls, failed polls, status) from one snapshot."""
    status = watcher.status()
    counters = status["counters"]
    return counters["polls"], sum(counters["pollErrors"].values()), status


def test_ready_through_an_outage_unready_past_expiry_back_at_once(
    make_exporter, make_prometheus, make_redis, make_watcher
):
    exporter = make_exporter()
    exporter.set(NODE, cpu=30.0, memory=40.0)
    prometheus = make_prometheus([exporter.target])
    watcher = make_watcher(prometheus.url, make_redis().url, **TIMING)
    watcher.wait_nodes([NODE])
    wait_for(lambda: watcher.get("/readyz").status_code == 200, timeout=10, what="ready")
    assert "X-Ballast-Stale" not in watcher.get("/watcher").headers

    prometheus.stop()
    _, failed, _ = wait_for(lambda: (p := polls(watcher))[1] >= 1 and p, timeout=15,
                            what="a failed poll")  # fmt: skip
    # Two more polls fail; every answer meanwhile: ready, serving the last data, marked stale.
    while polls(watcher)[1] < failed + 2:
        ready = watcher.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert any(r.startswith("provider:") for r in ready.json()["reasons"])
        resp = watcher.get("/watcher")
        assert resp.status_code == 200 and NODE in resp.json()["data"]["NodeMetricsMap"]
        assert "last poll failed" in resp.headers["X-Ballast-Stale"]
    status = watcher.status()
    assert status["serving"]["ready"] and status["provider"]["ok"] is False
    assert status["dataAge"] > 0 and watcher.get("/healthz").status_code == 200

    # Past the expiry there is nothing valid to serve: unready, saying why.
    # (a 503 Response is falsy: the condition hands back its body)
    body = wait_for(lambda: (r := watcher.get("/readyz")).status_code == 503 and r.json(),
                    timeout=30, what="unready past the expiry")  # fmt: skip
    assert "past its expiry" in body["reasons"][-1]
    assert watcher.get("/healthz").status_code == 200  # a down source is no reason to restart

    prometheus.start()
    prometheus.wait_for_series(f'node_memory_MemTotal_bytes{{instance="{NODE}"}}', 1)
    back, _, _ = polls(watcher)

    def ready_snapshot() -> dict | None:
        status = watcher.status()
        return status if status["serving"]["ready"] else None

    status = wait_for(ready_snapshot, timeout=20, interval=0.05, what="ready again")
    assert status["counters"]["polls"] - back <= 2, status["counters"]
    assert watcher.get("/readyz").status_code == 200


def test_a_wedged_poller_fails_liveness_and_only_it(prometheus, exporter, make_redis, make_watcher):
    exporter.set(NODE + "-w", cpu=20.0, memory=20.0)
    watcher = make_watcher(prometheus.url, make_redis().url, **TIMING)
    watcher.wait_nodes([NODE + "-w"])

    def holder() -> int | None:
        lines = [line for line in watcher.log().splitlines() if "runs the replica's poller" in line]
        return int(lines[-1].split("worker ")[1].split()[0]) if lines else None

    pid = wait_for(holder, what="the worker running the poller")
    assert watcher.get("/healthz").status_code == 200
    os.kill(pid, signal.SIGSTOP)  # wedged: holds the seat, runs nothing
    try:
        body = wait_for(lambda: (r := watcher.get("/healthz")).status_code == 503 and r.json(),
                        timeout=30, what="liveness to fail")  # fmt: skip
        assert "wedged" in body["reason"]
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: watcher.get("/healthz").status_code == 200, timeout=15, what="alive again")


def test_a_poller_that_cannot_start_hands_its_seat_on(
    sandbox, prometheus, exporter, make_redis, make_watcher, tmp_path
):
    """The cluster's config is unreadable when the first worker takes the seat: the failure is
    logged with its cause, the seat given up, and once the config is good a worker polls."""
    exporter.set(NODE + "-s", cpu=20.0, memory=20.0)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("not: [a kubeconfig")
    watcher = make_watcher(prometheus.url, make_redis().url, kubeconfig=str(kubeconfig), **TIMING)
    line = wait_for(lambda: next((x for x in watcher.log_path.read_text().splitlines()
                                  if "the poller failed to start" in x), None),
                    timeout=30, what="the failure logged")  # fmt: skip
    assert "ScannerError" in line or "ParserError" in line, line  # the cause, on the line
    assert watcher.get("/healthz").status_code == 200  # given up: nobody holds the seat wedged
    kubeconfig.write_text(Path(sandbox.kubeconfig).read_text())
    wait_for(lambda: watcher.status().get("lastSuccess"), timeout=30, what="a worker polling")
    assert watcher.proc.poll() is None
