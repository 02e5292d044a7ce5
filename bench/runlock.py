"""One benchmark at a time on a machine, and the load it ran under.

Two benchmarks on 2 cores measure each other: `RunLock` is a lock every benchmark run takes for
its whole length (an flock on a file every checkout on the machine shares, so it holds across
worktrees and users of /tmp), and refuses a second run naming the first (its pid, command and
start). `LoadSampler` records the load average while a run lasts, so a result says what else the
machine was doing even when something that takes no lock ran beside it.
"""

from __future__ import annotations

import fcntl
import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

LOCK_PATH = Path(os.environ.get("BALLAST_BENCH_LOCK", "/tmp/ballast-bench.lock"))
SAMPLE_SECONDS = 15.0


class BenchmarkBusy(RuntimeError):
    """Another benchmark holds the machine."""


class RunLock:
    def __init__(self, path: Path = LOCK_PATH) -> None:
        self.path = path
        self._file: Any = None

    def acquire(self, command: str, wait: float = 0.0) -> None:
        """Take the lock, waiting up to `wait` seconds; BenchmarkBusy names the holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 (held for the run)
        try:
            os.chmod(self.path, 0o666)  # another user's benchmark must be able to take it too
        except OSError:
            pass
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read(handle)
                    handle.close()
                    raise BenchmarkBusy(
                        "another benchmark runs on this machine: "
                        f"pid {holder.get('pid', '?')}, `{holder.get('command', '?')}`, "
                        f"since {holder.get('started', '?')} ({self.path})"
                    ) from None
                time.sleep(1.0)
        handle.seek(0)
        handle.truncate()
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        handle.write(json.dumps({"pid": os.getpid(), "command": command, "started": started}))
        handle.flush()
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def _read(handle: Any) -> dict[str, Any]:
    try:
        handle.seek(0)
        return json.loads(handle.read() or "{}")
    except (OSError, ValueError):
        return {}


class LoadSampler:
    """The 1-minute load average every `every` seconds on a daemon thread, from start() on."""

    def __init__(self, every: float = SAMPLE_SECONDS) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LoadSampler:
        self.samples.append(os.getloadavg()[0])

        def loop() -> None:
            while not self._stop.wait(self.every):
                self.samples.append(os.getloadavg()[0])

        self._thread = threading.Thread(target=loop, name="load-sampler", daemon=True)
        self._thread.start()
        return self

    def summary(self) -> dict[str, float | int]:
        """min, mean and max of the samples so far, and how many."""
        values = [*self.samples, os.getloadavg()[0]]
        return {
            "min": round(min(values), 2),
            "mean": round(statistics.fmean(values), 2),
            "max": round(max(values), 2),
            "samples": len(values),
            "cores": os.cpu_count() or 0,
        }

    def stop(self) -> None:
        self._stop.set()
