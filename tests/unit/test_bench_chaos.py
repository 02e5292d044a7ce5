"""bench.chaos's monitor: a watcher slow to answer is a sample without a poller, never the end
of the sampling thread (and of every figure after it)."""

from __future__ import annotations

from bench.chaos.run import Monitor


class SlowWatcher:
    """A watcher whose status answer times out, as the test fixture reports it."""

    def get(self, path: str, timeout: float) -> None:
        raise AssertionError(f"GET {path}: read timed out")


class Stack:
    schedulers: list = []
    watchers = [SlowWatcher()]
    status_5xx = 0

    def store_version(self) -> None:
        return None


def test_chaos_monitor_counts_a_slow_watcher_as_no_poller_and_goes_on() -> None:
    sample = Monitor(Stack()).sample()  # type: ignore[arg-type]
    assert sample["pollers"] == [] and sample["store_version"] is None
