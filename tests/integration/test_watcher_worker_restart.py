"""A gunicorn worker that exits and is replaced leaves the watcher whole.

Found by the chaos suite: each exiting worker unwound through the master's clean-up and removed
the run folder (the request metrics' files, the poller's figures), so from then on the new
worker answered every request with 500.
"""

from __future__ import annotations

import os
import signal
import subprocess

from tests.fixtures.ports import wait_for


def workers(master: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True, timeout=5)
    return {int(pid) for pid in out.stdout.split()}


def test_a_replaced_worker_keeps_answering(prometheus, make_redis, make_watcher):
    watcher = make_watcher(prometheus.url, make_redis().url, workers=2)
    first = wait_for(lambda: len(w := workers(watcher.proc.pid)) == 2 and w, what="2 workers")
    os.kill(min(first), signal.SIGTERM)
    wait_for(lambda: len(w := workers(watcher.proc.pid)) == 2 and w != first, what="a new worker")
    # Enough requests that both workers, the new one too, answer several of them.
    for _ in range(20):
        for path in ("/metrics", "/api/v1/status", "/watcher"):
            assert watcher.get(path).status_code == 200, path
