"""Event writes wait for the scheduler to be idle, for a bounded time; the binder says when."""

import threading
import time

from kubernetes import client

from scheduler.kube import events
from scheduler.kube.binder import FAILED, Binder
from tests.fixtures.ports import free_port
from tests.unit.plugin_helpers import make_pod


def recorder() -> events.EventRecorder:
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{free_port()}"  # never contacted by these tests
    return events.EventRecorder(client.ApiClient(cfg), "test")


def write(queued: float) -> events._Write:
    return events._Write("POST", "/x", {}, "event", queued=queued)


def test_hold_waits_until_not_busy():
    rec = recorder()
    answers = iter([True, True, False])
    calls = []
    rec.defer_to(lambda: calls.append(1) or next(answers))
    rec._hold(write(time.monotonic()))
    assert len(calls) == 3


def test_hold_gives_up_after_max_hold_and_on_stop():
    rec = recorder()
    rec.defer_to(lambda: True)
    started = time.monotonic()
    rec._hold(write(time.monotonic() - events.MAX_HOLD_S - 1))  # waited long enough already
    rec._stopping = True
    rec._hold(write(time.monotonic()))
    assert time.monotonic() - started < 1.0


def test_hold_without_defer_does_not_ask():
    rec = recorder()
    rec._hold(write(time.monotonic()))  # no busy callable: returns at once


def test_binder_idle_clears_while_a_bind_runs_and_sets_after():
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{free_port()}"  # nothing listens: the bind fails fast
    release = threading.Event()
    results = []

    def outcome(pod, node, result, detail):
        release.wait(5)
        results.append(result)

    binder = Binder(client.ApiClient(cfg), 2, outcome)
    assert binder.idle.is_set()
    binder.bind(make_pod("p"), "n1")
    assert not binder.idle.is_set()
    release.set()
    assert binder.idle.wait(10)
    assert results == [FAILED]
    binder.stop(timeout=5)
