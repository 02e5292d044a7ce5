"""Which gunicorn worker of a replica runs the replica's poller: the one that holds a file lock.

gunicorn's master forks workers at start and whenever one is replaced, and a fork keeps every
lock exactly as it was held at that instant. When the master itself ran the poller, a worker
forked while a poll was opening a TLS connection to Redis hung for ever on its own first TLS
connection (OpenSSL's lock, held in the child by a thread the child does not have). Workers
never fork, so the poller runs in one of them: each worker tries an exclusive `flock` on the
replica's `poller.lock`; the one that gets it starts the poller, the others try again every
`retry` seconds. The kernel drops the lock when its process ends, even by SIGKILL, so another
worker takes the seat within a second of a worker's death. The poller's lease in Redis belongs
to the replica (every worker has the same holder), so the new poller renews it and reloads the
window from the stored frames.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from shared.lifecycle import Lifecycle

log = logging.getLogger(__name__)
BACKOFF_MAX = 30.0  # seconds; the longest a worker whose poller failed waits to try again


def seated_at(path: Path) -> float | None:
    """When the seat at `path` was last taken, as its holder wrote it; None when nobody holds
    it (any worker may ask: /healthz judges the holder by it). A holder killed outright leaves
    its line behind until the next worker takes the seat, within `retry` seconds."""
    try:
        _, at = path.read_text().split()
        return float(at)
    except (OSError, ValueError):
        return None


class PollerSeat:
    def __init__(self, path: Path, on_seated: Callable[[], None], retry: float = 1.0) -> None:
        self.path = path
        self.on_seated = on_seated
        self.retry = retry
        self.seated = threading.Event()
        self.failures = 0  # pollers that failed to start here, each seat given up
        self._fd: int | None = None
        self._thread: threading.Thread | None = None
        self._life = Lifecycle("poller seat")

    def start(self) -> None:
        """Try for the seat on a thread of its own; `on_seated` runs there once it is taken.
        If it raises, the seat is given up (another worker takes it) and tried again later."""
        self._life.start(self._start)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop trying, waiting at most `timeout` seconds for an `on_seated` in progress; a seat
        already taken stays held until `release` (or the process ends)."""
        self._life.stop(lambda: self._join(timeout), timeout)

    def release(self) -> None:
        """Hand the seat to another worker now, not only when this process has gone."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.ftruncate(fd, 0)  # nobody holds it: /healthz has no holder to judge
            os.close(fd)  # closing the last descriptor of the file drops its flock

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="poller-seat", daemon=True)
        self._thread.start()

    def _join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("poller seat: the poller still starting after %.1fs; leaving it",
                            timeout)  # fmt: skip

    def _run(self) -> None:
        pause = self.retry
        while not self._life.stopping.is_set():
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if self._life.stopping.wait(pause):
                    return
                pause = self.retry
                continue
            self._fd = fd
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {time.time():.3f}\n".encode(), 0)
            log.info("worker %d runs the replica's poller", os.getpid())
            try:
                self.on_seated()
            except Exception as exc:
                # A poller that cannot start (its provider, its store, the cluster's config)
                # must not keep the seat: no worker of the replica would ever poll.
                self.failures += 1
                pause = min(self.retry * 2**self.failures, BACKOFF_MAX)
                # The cause on the line itself; the traceback once, not at every retry.
                log.error("worker %d: the poller failed to start (%s: %s); seat given up, "
                          "trying again in %.0fs", os.getpid(), type(exc).__name__, exc, pause,
                          exc_info=self.failures == 1)  # fmt: skip
                self.release()
                # Another worker, trying every `retry`, takes it first.
                if self._life.stopping.wait(pause):
                    return
                continue
            self.seated.set()
            return
