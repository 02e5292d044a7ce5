"""The poller seat: one holder of the replica's lock file at a time, handed on when released."""

import threading

from watcher.seat import PollerSeat


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
