"""The poller seat: one holder of the replica's lock file at a time, handed on when released."""

import logging
import subprocess
import sys
import threading

from tests.fixtures.ports import wait_for
from watcher.seat import PollerSeat, seated_at


def test_one_seat_at_a_time_and_the_next_takes_it_when_released(tmp_path):
    lock = tmp_path / "poller.lock"
    seated = []
    first = PollerSeat(lock, lambda: seated.append("first"), retry=0.05)
    second = PollerSeat(lock, lambda: seated.append("second"), retry=0.05)
    first.start()
    assert first.seated.wait(5)
    second.start()
    # The second keeps trying (a flock per open file: it conflicts within one process too).
    assert not second.seated.wait(0.3)
    assert seated == ["first"]
    first.stop()
    first.release()
    assert second.seated.wait(5)
    assert seated == ["first", "second"]
    second.stop()
    second.release()


def test_stop_before_the_seat_is_free_never_runs_the_poller(tmp_path):
    lock = tmp_path / "poller.lock"
    holder = PollerSeat(lock, lambda: None)
    holder.start()
    assert holder.seated.wait(5)
    called = threading.Event()
    waiting = PollerSeat(lock, called.set, retry=0.05)
    waiting.start()
    waiting.stop()
    holder.stop()
    holder.release()
    assert not called.is_set() and not waiting.seated.is_set()
    waiting.stop()  # twice: nothing more
    waiting.release()  # never seated: nothing to hand on


def test_stop_before_start(tmp_path):
    seat = PollerSeat(tmp_path / "poller.lock", lambda: None)
    seat.stop()
    seat.start()  # after a stop: does nothing
    assert not seat.seated.wait(0.1)


def test_a_poller_that_fails_to_start_gives_the_seat_up(tmp_path, caplog):
    lock = tmp_path / "poller.lock"
    tried = threading.Event()

    def broken() -> None:
        tried.set()
        raise RuntimeError("provider: no URL configured")

    first = PollerSeat(lock, broken, retry=0.05)
    second = PollerSeat(lock, lambda: None, retry=0.05)
    with caplog.at_level(logging.INFO, logger="watcher.seat"):
        first.start()
        assert tried.wait(5)
        second.start()
        assert second.seated.wait(5)  # the seat was handed on, not kept by a dead start
    assert not first.seated.is_set() and first.failures >= 1
    failed = [r for r in caplog.records if "failed to start" in r.getMessage()]
    assert failed and "RuntimeError: provider: no URL configured" in failed[0].getMessage()
    assert seated_at(lock) is not None
    for seat in (first, second):
        seat.stop()
        seat.release()
    assert seated_at(lock) is None  # released: nobody to judge for /healthz


def test_stop_honours_its_timeout_while_the_poller_hangs_starting(tmp_path):
    hang = threading.Event()
    seat = PollerSeat(tmp_path / "poller.lock", hang.wait, retry=0.05)
    seat.start()
    wait_for(lambda: seated_at(seat.path), timeout=5, what="the seat taken")
    stopper = threading.Thread(target=seat.stop, args=(0.2,))
    stopper.start()
    stopper.join(10)  # joined without a timeout, stop would wait for the hung start for ever
    assert not stopper.is_alive()
    hang.set()


HOLDER = """
import sys, threading
from pathlib import Path
from watcher.seat import PollerSeat

def starting():
    print("starting", flush=True)
    if sys.argv[2] == "hang":
        threading.Event().wait()  # killed here, in the middle of starting the poller

seat = PollerSeat(Path(sys.argv[1]), starting, retry=0.05)
seat.start()
seat.seated.wait()
print("seated", flush=True)
threading.Event().wait()
"""


def test_a_worker_killed_while_starting_the_poller_frees_the_seat(tmp_path):
    lock = tmp_path / "poller.lock"

    def holder(mode: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), mode],
                                stdout=subprocess.PIPE, text=True)  # fmt: skip

    first = holder("hang")
    second = None
    try:
        assert first.stdout.readline().strip() == "starting"
        second = holder("ok")
        assert not wait_quietly(lambda: seated_at(lock) and _pid(lock) == second.pid, 0.5)
        first.kill()  # SIGKILL: no clean-up of its own, the kernel drops the flock
        assert second.stdout.readline().strip() == "starting"
        assert second.stdout.readline().strip() == "seated"
        assert _pid(lock) == second.pid
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.wait(10)


def _pid(lock) -> int:
    return int(lock.read_text().split()[0])


def wait_quietly(condition, timeout: float) -> bool:
    try:
        wait_for(condition, timeout=timeout, what="")
    except AssertionError:
        return False
    return True
