"""One benchmark at a time: a second run is refused, naming the first; the load is sampled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness import runguard
from bench.harness.runguard import BenchmarkBusy, LoadSampler, RunLock

HOLD = """
import sys, time
from pathlib import Path
from bench.harness.runguard import RunLock
lock = RunLock(Path(sys.argv[1]))
lock.acquire("python -m bench.first")
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_second_run_is_refused_while_the_first_holds_the_lock(tmp_path: Path):
    path = tmp_path / "bench.lock"
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert first.stdout.readline().strip() == "held"
        with pytest.raises(BenchmarkBusy, match=rf"pid {first.pid}, `python -m bench.first`"):
            RunLock(path).acquire("python -m bench.second")
    finally:
        first.stdin.close()
        first.wait(timeout=10)
    # The holder gone, the lock is free (the kernel drops an flock with its process).
    second = RunLock(path)
    second.acquire("python -m bench.second")
    second.release()
    again = RunLock(path)
    again.acquire("python -m bench.third")
    again.release()


def test_load_sampler_summarises_what_it_saw():
    sampler = LoadSampler(every=3600).start()
    summary = sampler.summary()
    sampler.stop()
    assert summary["samples"] == 2 and summary["min"] <= summary["mean"] <= summary["max"]
    assert summary["cores"] >= 1


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "bench" / "results").mkdir(parents=True)
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "code.py").write_text("x = 1\n")
    (repo / "bench" / "results" / "r.json").write_text("{}\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"],
                   check=True)  # fmt: skip
    return repo


def test_begin_records_the_commit_and_refuses_a_dirty_tree(tmp_path: Path):
    repo = _repo(tmp_path)
    lock = tmp_path / "bench.lock"
    (repo / "bench" / "results" / "r.json").write_text('{"new": 1}\n')  # a result: still clean
    run = runguard.begin(argv=["python", "-m", "bench.x"], cwd=repo, lock_path=lock)
    try:
        block = run.block()
        assert len(block["commit_at_start"]) == 40 and block["dirty_at_start"] is False
        assert block["allow_dirty"] is False and block["load_average"]["samples"] >= 1
        assert runguard.current() is run
    finally:
        runguard.finish()
    (repo / "code.py").write_text("x = 2\n")
    with pytest.raises(runguard.DirtyTree, match="--allow-dirty"):
        runguard.begin(cwd=repo, lock_path=lock)
    run = runguard.begin(allow_dirty=True, cwd=repo, lock_path=lock)
    try:
        assert run.block()["dirty_at_start"] is True and run.block()["allow_dirty"] is True
    finally:
        runguard.finish()
    assert runguard.current() is None
