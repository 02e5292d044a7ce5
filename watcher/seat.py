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
from collections.abc import Callable
from pathlib import Path

from shared.lifecycle import Lifecycle

log = logging.getLogger(__name__)


class PollerSeat:
    def __init__(self, path: Path, on_seated: Callable[[], None], retry: float = 1.0) -> None:
        self.path = path
        self.on_seated = on_seated
        self.retry = retry
        self.seated = threading.Event()
        self._fd: int | None = None
        self._thread: threading.Thread | None = None
        self._life = Lifecycle("poller seat")

    def start(self) -> None:
        """Try for the seat on a thread of its own; `on_seated` runs there once it is taken."""
        self._life.start(self._start)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop trying; a seat already taken stays held until `release` (or the process ends)."""
        self._life.stop(self._stop, timeout)

    def release(self) -> None:
        """Hand the seat to another worker now, not only when this process has gone."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the last descriptor of the file drops its flock

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="poller-seat", daemon=True)
        self._thread.start()

    def _stop(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        while not self._life.stopping.is_set():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if self._life.stopping.wait(self.retry):
                    break
                continue
            self._fd = fd
            log.info("worker %d runs the replica's poller", os.getpid())
            self.on_seated()
            self.seated.set()
            return
        os.close(fd)
