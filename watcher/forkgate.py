"""Forks wait for the threads that do network I/O, and those threads wait for forks.

gunicorn's master forks its API workers (at start, and again whenever one dies) while the
master's poller runs on other threads. A fork copies only the forking thread, together with
every lock as it was at that instant: a lock held by a poll in flight, such as OpenSSL's while
a TLS connection to Redis loads its certificates, stays held in the child forever, and the
worker hangs on its first TLS connection. So each poller job passes through the gate, and the
gate closes around every fork of the process (`os.register_at_fork`): a fork waits until the
jobs in flight have finished, and a job that comes while the process forks waits for the fork.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator

log = logging.getLogger(__name__)

# Network calls end within their own timeouts, so jobs in flight drain within this; if one does
# not, the fork goes ahead (gunicorn replaces a worker that never checks in) and says so.
DRAIN_TIMEOUT = 30.0


class ForkGate:
    def __init__(self, drain_timeout: float = DRAIN_TIMEOUT) -> None:
        self.drain_timeout = drain_timeout
        self._cond = threading.Condition()
        self._active = 0
        self._forking = False

    @contextlib.contextmanager
    def passage(self) -> Iterator[None]:
        """Hold the gate open for a job's network I/O."""
        with self._cond:
            self._cond.wait_for(lambda: not self._forking)
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def before_fork(self) -> None:
        with self._cond:
            self._forking = True
            if not self._cond.wait_for(lambda: self._active == 0, self.drain_timeout):
                log.warning("forking while %d network job(s) still run after %.0f s",
                            self._active, self.drain_timeout)  # fmt: skip

    def after_fork_in_parent(self) -> None:
        with self._cond:
            self._forking = False
            self._cond.notify_all()

    def after_fork_in_child(self) -> None:
        # The child has none of the parent's threads: no job is in flight there, and its
        # condition may be held by a thread that no longer exists.
        self._cond = threading.Condition()
        self._active = 0
        self._forking = False


GATE = ForkGate()
os.register_at_fork(
    before=GATE.before_fork,
    after_in_parent=GATE.after_fork_in_parent,
    after_in_child=GATE.after_fork_in_child,
)
