"""The fork gate: a fork waits for network jobs in flight, and jobs wait for a fork."""

import logging
import os
import threading

from watcher.forkgate import GATE, ForkGate


def _fork_and_exit(code_in_child) -> int:  # noqa: ANN001
    pid = os.fork()
    if pid == 0:
        os._exit(code_in_child())
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_fork_waits_for_the_job_in_flight():
    entered, release = threading.Event(), threading.Event()
    finished = []

    def job() -> None:
        with GATE.passage():
            entered.set()
            release.wait(10)
            finished.append(True)

    worker = threading.Thread(target=job)
    worker.start()
    assert entered.wait(10)
    threading.Timer(0.2, release.set).start()
    # Without the gate the fork would copy the job mid-flight, before it finished.
    code = _fork_and_exit(lambda: 0 if finished else 1)
    assert finished, "the fork went ahead while the job was still running"
    assert code == 0
    worker.join(10)


def test_a_job_waits_for_a_fork_and_then_runs():
    gate = ForkGate()
    ran = []

    def job() -> None:
        with gate.passage():
            ran.append(True)

    gate.before_fork()
    worker = threading.Thread(target=job)
    worker.start()
    worker.join(0.2)
    assert worker.is_alive() and not ran
    gate.after_fork_in_parent()
    worker.join(10)
    assert ran


def test_a_job_that_never_ends_does_not_hold_forks_forever(caplog):
    gate = ForkGate(drain_timeout=0.1)
    entered, release = threading.Event(), threading.Event()

    def job() -> None:
        with gate.passage():
            entered.set()
            release.wait(10)

    worker = threading.Thread(target=job)
    worker.start()
    assert entered.wait(10)
    with caplog.at_level(logging.WARNING, logger="watcher.forkgate"):
        gate.before_fork()
    gate.after_fork_in_parent()
    assert "forking while 1 network job(s) still run" in caplog.text
    release.set()
    worker.join(10)


def test_the_child_starts_with_an_open_gate():
    entered, release = threading.Event(), threading.Event()

    def job() -> None:
        with GATE.passage():
            entered.set()
            release.wait(10)

    def in_child() -> int:
        # The parent's job is not in the child: a job of its own passes at once.
        done = threading.Event()

        def own() -> None:
            with GATE.passage():
                done.set()

        threading.Thread(target=own, daemon=True).start()
        return 0 if done.wait(5) else 1

    gate_timeout = GATE.drain_timeout
    GATE.drain_timeout = 0.1  # fork with the parent's job still inside
    worker = threading.Thread(target=job)
    worker.start()
    try:
        assert entered.wait(10)
        assert _fork_and_exit(in_child) == 0
    finally:
        GATE.drain_timeout = gate_timeout
        release.set()
        worker.join(10)
