"""load-watcher's windows in trace time: the ranges of its queries, scaled (RangeProxy)."""

from __future__ import annotations

import pytest

from sandbox.peers.loadwatcher.serve import _scaled, scale_ranges


def test_its_windows_become_trace_time():
    # v0.2.4's queries for its 15, 10 and 5-minute windows, at the trace's 60x.
    assert scale_ranges("avg_over_time(instance:node_cpu:ratio[15m])", 60) == (
        "avg_over_time(instance:node_cpu:ratio[15000ms])"
    )
    assert scale_ranges('stddev_over_time(x{instance="a"}[10m])', 60) == (
        'stddev_over_time(x{instance="a"}[10000ms])'
    )
    assert scale_ranges("rate(a[1h]) + rate(b[90s])", 150) == "rate(a[24000ms]) + rate(b[600ms])"
    assert scale_ranges("up", 60) == "up"
    assert scale_ranges("x[1s]", 10_000) == "x[1ms]"  # never an empty range
    with pytest.raises(ValueError):
        scale_ranges("x[1m]", 0)


def test_only_the_query_field_of_a_form_changes():
    form = "query=avg_over_time%28x%5B5m%5D%29&time=1700000000.5"
    assert _scaled(form, 60) == "query=avg_over_time%28x%5B5000ms%5D%29&time=1700000000.5"
    assert _scaled("", 60) == ""
