"""A store process's stop: SIGTERM first and a grace to exit, or a kill at once for a process that
never exits on SIGTERM (paypal/load-watcher)."""

from __future__ import annotations

import sys
from pathlib import Path

from sandbox.cluster.storeproc import StoreProcess
from tests.fixtures.loadwatcher import LoadWatcher
from tests.fixtures.ports import wait_for

# Notes a SIGTERM in a file and exits; says "ready" once the handler is in place.
ON_TERM = """
import pathlib, signal, sys, time
def on_term(*_):
    pathlib.Path(sys.argv[1]).write_text("terminated")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
time.sleep(60)
"""


class Sleeper(StoreProcess):
    def __init__(self, workdir: Path, grace: float) -> None:
        super().__init__(workdir, "sleeper")
        self.term_grace = grace
        self.marker = workdir / "terminated"

    def command(self) -> list[str]:
        return [sys.executable, "-c", ON_TERM, str(self.marker)]


def stopped(tmp_path: Path, grace: float) -> Sleeper:
    sleeper = Sleeper(tmp_path, grace).start()
    wait_for(lambda: "ready" in sleeper.log_path.read_text(), timeout=10, what="the handler")
    proc = sleeper.proc
    sleeper.stop()
    assert sleeper.proc is None and proc is not None and proc.poll() is not None
    return sleeper


def test_a_grace_sends_sigterm_first(tmp_path: Path) -> None:
    assert stopped(tmp_path, grace=10.0).marker.read_text() == "terminated"


def test_no_grace_kills_without_a_sigterm(tmp_path: Path) -> None:
    assert not stopped(tmp_path, grace=0.0).marker.exists()


def test_load_watcher_is_killed_at_once() -> None:
    # v0.2.4 never exits on SIGTERM (its main blocks for ever): a grace would be waited out.
    assert LoadWatcher.term_grace == 0.0
