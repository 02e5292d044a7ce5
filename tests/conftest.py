"""Fixtures live in tests/fixtures/, one module per real part (redis, prometheus, kube).

This file also checks, once the session's fixtures are torn down, that the tests left nothing
behind: no process they started (children of this process, or any process carrying this
session's mark in its environment, which orphans keep) and no `ballast-*` temp folder. The
processes the tests start get a temp folder of their own for the session (TMPDIR), so folders
of other people's processes on the same machine are never counted. A leftover fails the run.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import uuid
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures.ports",
    "tests.fixtures.redis",
    "tests.fixtures.prometheus",
    "tests.fixtures.victoriametrics",
    "tests.fixtures.thanos",
    "tests.fixtures.kube",
    "tests.fixtures.watcher",
    "tests.fixtures.metrics_server",
]

MARK = "PYTEST_BALLAST_SESSION"  # not BALLAST_*: the watcher fixture drops those from its env
LEFTOVER_GRACE = 10.0  # seconds a process stopped at the very end may take to exit


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or MARK in os.environ:
        return  # a nested or worker session: the outer one checks
    tempfile.gettempdir()  # this process keeps /tmp (and pytest's basetemp under it)
    private = Path(tempfile.mkdtemp(prefix="pytest-ballast-tmp-"))
    os.environ[MARK] = uuid.uuid4().hex
    os.environ["TMPDIR"] = str(private)
    config.stash[_PRIVATE] = private
    config.stash[_BEFORE] = _ballast_folders(Path(tempfile.gettempdir()))


_PRIVATE = pytest.StashKey[Path]()
_BEFORE = pytest.StashKey[set[Path]]()


def _ballast_folders(parent: Path) -> set[Path]:
    return set(parent.glob("ballast-*"))


def _environ_has_mark(pid: int, mark: bytes) -> bool:
    try:
        return mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def leftover_processes() -> list[int]:
    """Live processes the tests started: descendants of this one, or marked with the session."""
    me = os.getpid()
    mark = f"{MARK}={os.environ[MARK]}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        if _state(pid) in ("Z", "X"):
            continue  # a zombie is gone, only not reaped yet
        ancestor = _parent(pid)
        while ancestor > 1 and ancestor != me:
            ancestor = _parent(ancestor)
        if ancestor == me or _environ_has_mark(pid, mark):
            found.append(pid)
    return found


def _describe(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return str(pid)
    return f"{pid} {' '.join(a.decode(errors='replace') for a in argv if a)[:160]}"


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    private = session.config.stash.get(_PRIVATE, None)
    if private is None:
        return
    deadline = time.monotonic() + LEFTOVER_GRACE
    while (procs := leftover_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    problems = [f"process left running: {_describe(pid)}" for pid in procs]
    for pid in procs:  # not left for the next run to trip over
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    before = session.config.stash[_BEFORE]
    mine = f"-{os.getpid()}-"
    folders = _ballast_folders(private) | {
        p for p in _ballast_folders(Path(tempfile.gettempdir())) - before if mine in p.name
    }
    problems += [f"temp folder left behind: {path}" for path in sorted(folders)]
    shutil.rmtree(private, ignore_errors=True)
    for path in folders:
        shutil.rmtree(path, ignore_errors=True)
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "the tests left things behind:\n  " + "\n  ".join(problems)
        if reporter is not None:
            reporter.write_sep("=", "leftovers", red=True)
            reporter.write_line(text)
        else:
            print(text)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
