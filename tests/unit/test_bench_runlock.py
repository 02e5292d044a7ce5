"""One benchmark at a time: a second run is refused, naming the first; the load is sampled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.runlock import BenchmarkBusy, LoadSampler, RunLock

HOLD = """
import sys, time
from pathlib import Path
from bench.runlock import RunLock
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
