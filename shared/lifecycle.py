"""Start and stop of a component that owns threads, safe in any order, from any thread, any
number of times.

A SIGTERM may come while a component is still starting on another thread, or before it started
at all. Each component wraps its own start and stop bodies in a `Lifecycle`, so that:

- stop before start: nothing to stop, and a later start does nothing;
- stop during start: `stopping` is set (a long start polls it and bails out), the stop waits for
  the start to return, then stops what it started;
- stop after stop: nothing more (a second caller waits for the first to finish).

The stop body therefore never sees a half-started component, and no thread is joined before it
started.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

NEW, STARTING, RUNNING, STOPPING, STOPPED = "new", "starting", "running", "stopping", "stopped"


class Lifecycle:
    def __init__(self, name: str) -> None:
        self.name = name
        self.state = NEW
        # Set as soon as a stop is asked for, before the stop body runs.
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._started = threading.Event()  # the start body returned (or never will run)
        self._stopped = threading.Event()

    def start(self, body: Callable[[], object]) -> bool:
        """Run `body` unless started or stopped already; True when it ran."""
        with self._lock:
            if self.state != NEW:
                return False
            self.state = STARTING
        try:
            body()
        finally:
            with self._lock:
                if self.state == STARTING:
                    self.state = RUNNING
            self._started.set()
        return True

    def stop(self, body: Callable[[], object], timeout: float | None = None) -> bool:
        """Run `body` once, after any start in progress returned (waiting up to `timeout` for
        it); True when it ran. A stop before any start only keeps later starts from running."""
        with self._lock:
            state = self.state
            self.stopping.set()
            if state == NEW:
                self.state = STOPPED
                self._started.set()
                self._stopped.set()
                return False
            if state in (STARTING, RUNNING):
                self.state = STOPPING
        if state in (STOPPING, STOPPED):
            self._stopped.wait(timeout)
            return False
        if not self._started.wait(timeout):
            # A start stuck past the caller's budget: stop what it has started so far; the
            # stop bodies only touch threads that started (see `join`).
            log.warning("%s: still starting after %.1fs; stopping anyway", self.name, timeout)
        try:
            body()
        finally:
            with self._lock:
                self.state = STOPPED
            self._stopped.set()
        return True

    @property
    def running(self) -> bool:
        return self.state == RUNNING


def join(thread: threading.Thread | None, timeout: float | None) -> None:
    """`thread.join(timeout)` that accepts a thread never started (Thread.join raises)."""
    if thread is not None and thread.ident is not None and thread is not threading.current_thread():
        thread.join(timeout)


class SignalLatch:
    """Catches SIGTERM and SIGINT from a command's first line, before its components install
    their own handlers: without it such a signal kills the process (SIGTERM) or raises
    KeyboardInterrupt with a traceback somewhere in the imports (SIGINT)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.received: int | None = None
        self.event = threading.Event()
        for sig in self.SIGNALS:
            signal.signal(sig, self._caught)

    def _caught(self, signum: int, _frame: object) -> None:
        self.received = signum
        self.event.set()

    def replay(self) -> None:
        """Send the signal caught so far again, to whatever handler is installed now."""
        if self.received is not None:
            os.kill(os.getpid(), self.received)


def ignore_stop_signals() -> None:
    """For the last steps of an exit, once the stop is done: Python resets its signal handlers
    to the default while the interpreter finalizes, so a SIGTERM or SIGINT landing then would
    kill the process (exit -15/-2) after a clean stop. Ignored signals stay ignored."""
    for sig in SignalLatch.SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


@contextlib.contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """Python's cyclic collector off meanwhile, for work that makes many objects and no garbage
    cycles: a start-up's imports, a list decoded into a cache. With `freeze`, all that exists at
    the end is moved out of the collector's sight (gc.freeze) before it is switched back on:
    for what lives as long as the process, which the collector's passes would otherwise walk
    again and again, starting with the one that the pause's allocations make due at once.
    Another thread's pause may overlap; the first to leave switches it back on, which only
    costs time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        if was:
            gc.enable()
