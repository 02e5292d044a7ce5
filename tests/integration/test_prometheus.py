"""The real Prometheus computes the utilisation the synthetic exporter was told to report."""

from __future__ import annotations

import time

from tests.fixtures.ports import wait_for

RATE_WINDOW = 5  # seconds; the series must be older than this before rate() is trustworthy


def test_rate_over_synthetic_counters_returns_set_utilisation(exporter, prometheus):
    loads = {"promtest-a": (25.0, 40.0), "promtest-b": (80.0, 70.0), "promtest-c": (3.0, 95.0)}
    for node, (cpu, memory) in loads.items():
        exporter.set(node, cpu=cpu, memory=memory)
    selector = 'instance=~"promtest-.*"'
    prometheus.wait_for_series(f"node_memory_MemTotal_bytes{{{selector}}}", len(loads))
    time.sleep(RATE_WINDOW + 2)  # a full rate window of samples; extrapolation skews it before

    cpu_query = (
        f'100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle",{selector}}}'
        f"[{RATE_WINDOW}s])))"
    )
    mem_query = (
        f"100 * (1 - node_memory_MemAvailable_bytes{{{selector}}}"
        f" / node_memory_MemTotal_bytes{{{selector}}})"
    )
    cpu = {r["metric"]["instance"]: float(r["value"][1]) for r in prometheus.query(cpu_query)}
    mem = {r["metric"]["instance"]: float(r["value"][1]) for r in prometheus.query(mem_query)}
    assert set(cpu) == set(loads) == set(mem)
    for node, (want_cpu, want_mem) in loads.items():
        assert abs(cpu[node] - want_cpu) <= 2, (node, cpu[node], want_cpu)
        assert abs(mem[node] - want_mem) <= 0.5, (node, mem[node], want_mem)


def test_changed_load_shows_up_and_paused_exporter_goes_stale(make_exporter, make_prometheus):
    exp = make_exporter()
    exp.set("flip", cpu=10.0, memory=20.0)
    prom = make_prometheus([exp.target])
    query = (
        '100 * (1 - node_memory_MemAvailable_bytes{instance="flip"} / node_memory_MemTotal_bytes)'
    )
    prom.wait_for_series(query, 1)
    exp.set("flip", memory=60.0)
    wait_for(
        lambda: abs(float(prom.query(query)[0]["value"][1]) - 60.0) < 0.5,
        timeout=15,
        what="memory to read 60 %",
    )
    exp.pause()
    # A failed scrape marks the target's series stale: instant queries stop returning them.
    wait_for(lambda: prom.query(query) == [], timeout=15, what="series to go stale")
    exp.resume()
    prom.wait_for_series(query, 1, timeout=15)
