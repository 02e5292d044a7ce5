"""A benchmark run's guard: the commit it starts from, a clean tree, one run at a time on the
machine, and the load it ran under.

`begin()`, called first thing by a benchmark's main, records the commit and the tree's state
when the run starts (a commit made while it runs must not be taken for its source), refuses a
tree with uncommitted changes unless `--allow-dirty` (which the stamp records), takes the
machine's lock and starts sampling the load; `bench.harness.provenance.stamp` writes `block()` into
every result.

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
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent  # inside the checkout whose commit a run records
RESULTS = "bench/results"  # from the checkout's top: tracked results every run rewrites
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


def _git(*args: str, cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def tree_state(cwd: Path = HERE) -> tuple[str | None, bool | None]:
    """(HEAD's commit, whether tracked files differ from it) of the checkout holding `cwd`;
    None where git cannot tell. Results are tracked files every run rewrites: they do not
    make the tree dirty."""
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ":/",
                  f":(top,exclude){RESULTS}", cwd=cwd)  # fmt: skip
    return _git("rev-parse", "HEAD", cwd=cwd), None if status is None else bool(status)


def command_line() -> list[str]:
    """The command as typed: sys.orig_argv keeps `-m bench.x`, which sys.argv turns into the
    module's file path."""
    return [Path(sys.executable).name, *sys.orig_argv[1:]]


class DirtyTree(RuntimeError):
    """The tree has changes no commit holds, and the run was not allowed to start on it."""


class Run:
    """One benchmark run: where it started from, its lock and its load."""

    def __init__(self, command: str, commit: str | None, dirty: bool | None, allow_dirty: bool):
        self.command = command
        self.commit = commit
        self.dirty = dirty
        self.allow_dirty = allow_dirty
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.lock = RunLock()
        self.load = LoadSampler()

    def block(self) -> dict[str, Any]:
        """What a result's stamp says about the run."""
        return {
            "commit_at_start": self.commit,
            "dirty_at_start": self.dirty,
            "allow_dirty": self.allow_dirty,
            "started": self.started,
            "lock": str(self.lock.path),
            "load_average": self.load.summary(),
        }

    def end(self) -> None:
        self.load.stop()
        self.lock.release()


_CURRENT: Run | None = None


def add_options(parser: Any) -> None:
    """`--allow-dirty`: every benchmark's command line."""
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="run on a tree with uncommitted changes (the result says so)",
    )


def begin(
    allow_dirty: bool = False,
    argv: list[str] | None = None,
    lock_wait: float = 0.0,
    cwd: Path = HERE,
    lock_path: Path = LOCK_PATH,
) -> Run:
    """The run starts: DirtyTree on uncommitted changes unless allowed, BenchmarkBusy while
    another benchmark holds the machine."""
    global _CURRENT
    commit, dirty = tree_state(cwd)
    command = " ".join(argv if argv is not None else command_line())
    if dirty and not allow_dirty:
        raise DirtyTree(
            "the tree has uncommitted changes (git status): a result must come from a commit. "
            "Commit them, or pass --allow-dirty and the result will say it ran dirty"
        )
    run = Run(command, commit, dirty, allow_dirty)
    run.lock = RunLock(lock_path)
    run.lock.acquire(command, wait=lock_wait)
    run.load.start()
    _CURRENT = run
    return run


def start_run(parser: Any, allow_dirty: bool) -> Run:
    """`begin` for a benchmark's main: its refusal is the command's error (exit 2). The lock
    and the sampler end with the process."""
    try:
        return begin(allow_dirty)
    except (DirtyTree, BenchmarkBusy) as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")
        raise  # parser.exit does not return


def current() -> Run | None:
    return _CURRENT


def describe() -> str:
    """One line of what the guard recorded, for a benchmark that prints its figures instead of
    writing a result: they are quoted from the terminal, so the line goes with them."""
    if _CURRENT is None:
        return "run: no guard (not started by a benchmark's main)"
    block = _CURRENT.block()
    load = block["load_average"]
    tree = "dirty, --allow-dirty" if block["dirty_at_start"] else "clean"
    return (
        f"run: commit {block['commit_at_start']} ({tree}), started {block['started']}, "
        f"load average {load['mean']} (max {load['max']}) on {load['cores']} cores"
    )


def finish() -> None:
    global _CURRENT
    if _CURRENT is not None:
        _CURRENT.end()
        _CURRENT = None
