"""SIGTERM and SIGINT at random moments of start-up and shutdown, for the real `ballast scheduler`
and `ballast watcher` processes, against a Prometheus (and a watcher) that never answers.

Each run waits until the process catches SIGTERM (its SigCgt mask in /proc: before that no
program can handle a signal), then sends the signal after a random delay spanning its start-up,
and sometimes a second one while it stops. The process must exit 0 (or 128+signal when a second
signal cut its stop short, as asked), promptly (a thread left behind would hold the exit), with
no traceback or error in its log, and leave no process behind.

Runs go in parallel batches, so about twenty runs of each take well under a minute. The seed is
in the test's output; BALLAST_SIGNAL_SEED replays one.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from scheduler.config.profiles import build_profiles
from scheduler.runtime import Runtime, RuntimeOptions
from tests.fixtures.ports import free_port, wait_for
from tests.fixtures.watcher import TEST_SETTINGS
from tests.integration import scheduler_support

RUNS = 16  # per component and case
BATCH = 4  # processes at once
START_SPAN = 3.0  # seconds after the handler exists within which the first signal lands
SECOND_SPAN = 1.0  # seconds after the first within which a second one lands
EXIT_WITHIN = 12.0  # the watcher's worker grace is 5 s, the scheduler's stop grace 3 s
BAD_LINES = ("Traceback", " ERROR ", "CRITICAL", "Exception in thread")


@pytest.fixture(scope="module")
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers: a hung Prometheus (or
    watcher) whose every request runs into its timeout."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


@pytest.fixture(scope="module")
def rng() -> random.Random:
    seed = int(os.environ.get("BALLAST_SIGNAL_SEED") or time.time_ns() % 1_000_000)
    print(f"BALLAST_SIGNAL_SEED={seed}")
    return random.Random(seed)


@dataclass
class Run:
    name: str
    argv: list[str]
    log: Path
    signals: list[tuple[float, int]]  # (delay after the previous step, signal)
    group: bool = False  # a SIGINT goes to the whole process group
    proc: subprocess.Popen[bytes] | None = None
    sent_at: float = 0.0

    def start(self) -> None:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )


def catches_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(
        int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt")
    )
    return bool(mask & (1 << (signal.SIGTERM - 1)))


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def drive(runs: list[Run]) -> None:
    """Start the batch, send each its signals on schedule, wait for all to exit."""
    for run in runs:
        run.start()
    for run in runs:
        assert run.proc is not None
        wait_for(lambda run=run: catches_sigterm(run.proc.pid) or run.proc.poll() is not None,
                 timeout=30, interval=0.01, what=f"{run.name} to catch SIGTERM")  # fmt: skip
    # One timeline for the batch: every (moment, run, signal) in order.
    begin = time.monotonic()
    timeline = []
    for run in runs:
        at = 0.0
        for delay, sig in run.signals:
            at += delay
            timeline.append((at, run, sig))
    for at, run, sig in sorted(timeline, key=lambda item: item[0]):
        time.sleep(max(0.0, begin + at - time.monotonic()))
        if run.proc is not None and run.proc.poll() is None:
            if sig == signal.SIGINT and run.group:
                os.killpg(run.proc.pid, sig)  # Ctrl-C in a terminal: every process of the group
            else:
                run.proc.send_signal(sig)
            run.sent_at = run.sent_at or time.monotonic()
    for run in runs:
        assert run.proc is not None
        try:
            run.proc.wait(timeout=EXIT_WITHIN + SECOND_SPAN)
        except subprocess.TimeoutExpired:
            os.killpg(run.proc.pid, signal.SIGKILL)
            run.proc.wait(timeout=5)
            pytest.fail(f"{run.name} still running {EXIT_WITHIN}s after {run.signals}")


def check(run: Run) -> None:
    assert run.proc is not None
    code = run.proc.returncode
    log = run.log.read_text(errors="replace")
    first, *rest = [sig for _, sig in run.signals]
    allowed = {0} | {128 + sig for sig in rest}
    assert code in allowed, f"{run.name}: exit {code} after {run.signals}\n{log[-3000:]}"
    bad = [line for line in log.splitlines() if any(b in line for b in BAD_LINES)]
    assert not bad, f"{run.name} after {run.signals}:\n{log[-3000:]}"
    # Workers and helpers leave with the process (its own session, so its own group).
    wait_for(lambda: not group_alive(run.proc.pid), timeout=10, what=f"{run.name}'s group gone")


def plan(rng: random.Random, name: str, argv: list[str], log: Path) -> Run:
    sig = rng.choice([signal.SIGTERM, signal.SIGINT])
    # Half in the first tenth of a second, where the most happens at once (the start thread
    # begins, the threads of each part start); half anywhere in start-up.
    span = START_SPAN if rng.random() < 0.5 else 0.1
    signals = [(rng.uniform(0, span), sig)]
    if rng.random() < 0.25:  # an impatient operator: a second signal while it stops
        signals.append((rng.uniform(0, SECOND_SPAN), rng.choice([signal.SIGTERM, signal.SIGINT])))
    return Run(name, argv, log, signals, group=rng.random() < 0.5)


def run_all(runs: list[Run]) -> None:
    for i in range(0, len(runs), BATCH):
        batch = runs[i : i + BATCH]
        drive(batch)
        for run in batch:
            check(run)


@pytest.mark.parametrize("store", ["redis", "memory"])
def test_watcher_stops_cleanly_at_any_moment(tmp_path, rng, silent_server, redis_server, store):
    runs = []
    for i in range(RUNS // 2):
        settings = {**TEST_SETTINGS, "prometheus_url": silent_server, "workers": 2}
        if store == "redis":
            settings["redis_url"] = redis_server.url
            settings["key_prefix"] = f"signals:{i}:"
        config = tmp_path / f"w{i}.yaml"
        config.write_text(yaml.safe_dump(settings))
        argv = [sys.executable, "-m", "ballast.cli", "watcher", "--config", str(config),
                "--listen", f"127.0.0.1:{free_port()}"]  # fmt: skip
        runs.append(plan(rng, f"watcher-{store}-{i}", argv, tmp_path / f"w{i}.log"))
    run_all(runs)


def election(lease: str, namespace: str) -> dict:
    timings = {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "500ms"}
    return {"leaderElect": True, **timings, "resourceName": lease, "resourceNamespace": namespace}


def scheduler_argv(tmp_path: Path, i: int, kubeconfig: Path, doc: dict) -> list[str]:
    config = tmp_path / f"s{i}.yaml"
    config.write_text(yaml.safe_dump(doc))
    return [sys.executable, "-m", "ballast.cli", "scheduler", "--config", str(config),
            "--kubeconfig", str(kubeconfig), "--watcher-interval", "0.5",
            "--metrics-listen", f"127.0.0.1:{free_port()}"]  # fmt: skip


def test_scheduler_stops_cleanly_at_any_moment(tmp_path, rng, silent_server, sandbox, namespace):
    """Against the sandbox's API server, electing a leader, with a watcher that never answers."""
    runs = []
    for i in range(RUNS):
        doc = {
            "watcherAddress": silent_server,
            "leaderElection": election(f"signals-{i}", namespace),
        }
        argv = scheduler_argv(tmp_path, i, sandbox.kubeconfig, doc)
        runs.append(plan(rng, f"scheduler-{i}", argv, tmp_path / f"s{i}.log"))
    run_all(runs)


def test_scheduler_stops_cleanly_while_its_first_list_hangs(tmp_path, rng, silent_server):
    """An API server that accepts connections and never answers: start-up never ends."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": silent_server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    doc = {"watcherAddress": silent_server, "leaderElection": {"leaderElect": False}}
    runs = []
    for i in range(RUNS // 2):
        argv = scheduler_argv(tmp_path, i, kubeconfig, doc)
        runs.append(plan(rng, f"scheduler-hung-{i}", argv, tmp_path / f"s{i}.log"))
    run_all(runs)


def test_runtime_stop_before_during_and_after_start_leaves_no_thread(
    rng, silent_server, sandbox, kube_api, namespace
):
    """In process, the same at finer grain: stop() before start(), at a random moment of it
    (from another thread), after it, and twice; every thread the runtime started ends."""
    before = set(threading.enumerate())
    for i in range(12):
        cfg = scheduler_support.config(
            {
                "watcherAddress": silent_server,
                "leaderElection": election(f"in-process-{i}", namespace),
            }
        )
        options = RuntimeOptions(metrics_listen="127.0.0.1:0", watcher_timeout=0.5)
        runtime = Runtime(cfg, kube_api, build_profiles(cfg), options)
        if i % 4 == 0:
            runtime.stop()  # before: the start below must do nothing
        starter = threading.Thread(target=runtime.start)
        starter.start()
        time.sleep(rng.uniform(0, 0.5))  # the moment of the stop is the test's input
        runtime.stop()
        runtime.stop()
        starter.join(timeout=10)
        assert not starter.is_alive()
        if i % 4 == 0:
            assert not runtime.cache.node_reflector.synced.is_set()  # never started
    wait_for(
        lambda: not [t for t in threading.enumerate() if t not in before],
        timeout=15,
        what="every runtime thread to end",
    )
