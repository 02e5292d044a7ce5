"""metrics-server NodeMetrics -> % of allocatable (or capacity): a pure function."""

from __future__ import annotations

import math

from watcher.providers.metrics_server import usage_percent

NODES = [
    {
        "metadata": {"name": "n1"},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi"},
            "allocatable": {"cpu": "3500m", "memory": "14Gi"},
        },
    },
    {"metadata": {"name": "bad"}, "status": {"allocatable": {"cpu": "x", "memory": "1Gi"}}},
]
METRICS = [
    {"metadata": {"name": "n1"}, "usage": {"cpu": "1750m", "memory": "7Gi"}},
    {"metadata": {"name": "unknown"}, "usage": {"cpu": "1", "memory": "1Gi"}},
    {"metadata": {"name": "bad"}, "usage": {"cpu": "1", "memory": "1Gi"}},
]


def test_percent_of_allocatable_by_default():
    out = usage_percent(METRICS, NODES)
    assert out["cpu"][0] == ("n1", 50.0)
    assert out["memory"][0] == ("n1", 50.0)
    # Nodes without a usable denominator give NaN, which validation rejects (never 0 %).
    assert math.isnan(out["cpu"][1][1]) and math.isnan(out["cpu"][2][1])


def test_percent_of_capacity_for_load_watcher_parity():
    out = usage_percent(METRICS, NODES, use_capacity=True)
    assert out["cpu"][0] == ("n1", 43.75)
    assert out["memory"][0][1] == 7 / 16 * 100


def test_usage_over_allocatable_reads_full():
    # 3.8 of 3.5 allocatable cores (system daemons' share of the reserve in use): 100 %, a full
    # node, not a sample the validation would reject as over 100.
    busy = [{"metadata": {"name": "n1"}, "usage": {"cpu": "3800m", "memory": "1Gi"}}]
    assert usage_percent(busy, NODES)["cpu"][0] == ("n1", 100.0)
    assert usage_percent(busy, NODES, use_capacity=True)["cpu"][0] == ("n1", 95.0)
