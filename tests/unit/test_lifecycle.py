"""shared.lifecycle: start and stop in any order, from any thread, any number of times; the
collector paused and switched back on; and shared.rundir: folders of dead processes swept, live
ones never touched."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from pathlib import Path

from shared import rundir
from shared.lifecycle import STOPPED, Lifecycle, gc_paused, join


def test_stop_before_start_makes_start_a_no_op():
    life, ran = Lifecycle("t"), []
    assert not life.stop(lambda: ran.append("stop"))
    assert not life.start(lambda: ran.append("start"))
    assert ran == [] and life.state == STOPPED and life.stopping.is_set()


def test_stop_during_start_waits_for_the_start_to_bail_out():
    life, order = Lifecycle("t"), []
    entered = threading.Event()

    def start_body() -> None:
        entered.set()
        # A long start that polls `stopping`, as Runtime.start does while the cache syncs.
        assert life.stopping.wait(timeout=10)
        order.append("start returned")

    starter = threading.Thread(target=life.start, args=(start_body,))
    starter.start()
    assert entered.wait(timeout=10)
    assert life.stop(lambda: order.append("stop body"), timeout=10)
    starter.join(timeout=10)
    assert order == ["start returned", "stop body"]


def test_stop_twice_and_from_many_threads_runs_the_body_once():
    life, ran = Lifecycle("t"), []
    life.start(lambda: None)
    gate = threading.Barrier(8)

    def stopper() -> None:
        gate.wait(timeout=10)
        life.stop(lambda: ran.append(1), timeout=10)

    threads = [threading.Thread(target=stopper) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    life.stop(lambda: ran.append(1))
    assert ran == [1]


def test_start_twice_runs_once_and_a_failed_start_can_still_be_stopped():
    life, ran = Lifecycle("t"), []

    def boom() -> None:
        ran.append("start")
        raise OSError("port taken")

    try:
        life.start(boom)
    except OSError:
        pass
    assert not life.start(lambda: ran.append("again"))
    assert life.stop(lambda: ran.append("stop"))
    assert ran == ["start", "stop"]


def test_join_accepts_a_thread_never_started():
    join(threading.Thread(target=lambda: None), timeout=1)
    join(None, timeout=1)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


def test_gc_paused_restores_the_collector_as_it_found_it():
    assert gc.isenabled()
    try:
        with gc_paused():
            assert not gc.isenabled()
            raise RuntimeError("a failed import")
    except RuntimeError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()
    frozen = gc.get_freeze_count()
    try:
        with gc_paused(freeze=True):
            kept = [[i] for i in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(kept)
    finally:
        gc.unfreeze()  # back in the collector's sight, as the other tests expect


def test_sweep_removes_only_folders_of_dead_processes(tmp_path: Path):
    dead = tmp_path / f"ballast-watcher-{_dead_pid()}-abc123"
    alive = tmp_path / f"ballast-watcher-{os.getppid()}-def456"  # our parent: running
    other_kind = tmp_path / f"ballast-redis-{_dead_pid()}-ghi789"
    unnamed = tmp_path / "ballast-watcher-legacy"
    for path in (dead, alive, other_kind, unnamed):
        path.mkdir()
        (path / "poller.json").write_text("{}")
    mine = Path(rundir.create("watcher", str(tmp_path)))
    assert mine.name.startswith(f"ballast-watcher-{os.getpid()}-")
    assert rundir.owner(mine, "watcher") == os.getpid()
    assert not dead.exists()
    assert alive.exists() and other_kind.exists() and unnamed.exists() and mine.exists()
