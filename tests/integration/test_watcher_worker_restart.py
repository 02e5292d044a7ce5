"""A gunicorn worker that exits and is replaced leaves the watcher whole.

Found by the chaos suite: each exiting worker unwound through the master's clean-up and removed
the run folder (the request metrics' files, the poller's figures), so from then on the new
worker answered every request with 500.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from tests.fixtures.ports import wait_for


def workers(master: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True, timeout=5)
    return {int(pid) for pid in out.stdout.split()}


def test_a_replaced_worker_keeps_answering(prometheus, make_redis, make_watcher):
    watcher = make_watcher(prometheus.url, make_redis().url, workers=2)
    # /watcher answers 500 until the first poll succeeds (the fixture waits for /healthz only);
    # on a loaded machine that poll can come after the worker below is replaced, which is the
    # one 500 this test once saw.
    wait_for(lambda: watcher.get("/watcher").status_code == 200, what="a first poll")
    first = wait_for(lambda: len(w := workers(watcher.proc.pid)) == 2 and w, what="2 workers")
    os.kill(min(first), signal.SIGTERM)
    wait_for(lambda: len(w := workers(watcher.proc.pid)) == 2 and w != first, what="a new worker")
    # Enough requests that both workers, the new one too, answer several of them.
    for _ in range(20):
        for path in ("/metrics", "/api/v1/status", "/watcher"):
            resp = watcher.get(path)
            assert resp.status_code == 200, (path, resp.text[:300], watcher.log())


def test_the_poller_runs_in_a_worker_and_moves_when_it_dies(prometheus, make_redis, make_watcher):
    """The master forks, so it runs no poller (a fork beside a poll can copy a held lock); the
    worker holding the seat does, and another takes over when that one is killed."""
    watcher = make_watcher(prometheus.url, make_redis().url, workers=2)

    def seated() -> int | None:
        lines = [line for line in watcher.log().splitlines() if "runs the replica's poller" in line]
        return int(lines[-1].split("worker ")[1].split()[0]) if lines else None

    polling = wait_for(seated, what="a worker running the poller")
    assert polling in workers(watcher.proc.pid), (polling, watcher.proc.pid)
    wait_for(lambda: watcher.status().get("lastSuccess"), what="a first poll")
    killed = time.time()
    os.kill(polling, signal.SIGKILL)  # no clean-up of its own: the kernel frees the seat
    took = wait_for(lambda: (pid := seated()) != polling and pid, what="another worker's poller")
    assert took in workers(watcher.proc.pid)
    # The new poller polls at once (the lease is the replica's: no wait for it to lapse).
    wait_for(lambda: watcher.status()["lastSuccess"] > killed + 1, timeout=15,
             what="a poll after the takeover")  # fmt: skip
    assert watcher.get("/watcher").status_code == 200
