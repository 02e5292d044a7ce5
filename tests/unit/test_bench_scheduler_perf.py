"""bench.scheduler.perf's pure parts."""

from __future__ import annotations

from bench.scheduler import perf as scheduler_perf


def test_each_contender_run_names_its_pods_apart() -> None:
    # kwok may delete a pod of the run before by name, late: a name used again would be lost.
    first, second = scheduler_perf.Tracker(), scheduler_perf.Tracker()
    assert first.prefix != second.prefix
    assert first.prefix.isalnum() and first.prefix.islower()  # fits a pod name (DNS-1123)
