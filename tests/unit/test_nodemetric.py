"""The NodeMetric stand-in: koordlet's figures from the simulator's load, without an apiserver."""

from __future__ import annotations

import pytest

from sandbox.load.nodemetric import Books, NodeMetricConfig, percentile, spec, tick
from sandbox.load.simulator import NodeCapacity, PodUse, SimulatorConfig, node_loads

GI = 1024**3
FLAT = SimulatorConfig(
    seed=7, factor_min=1.0, factor_max=1.0, ramp_seconds=0.0, wobble=0.0,
    background_cpu=(10.0, 10.0), background_memory=(20.0, 20.0),
)  # fmt: skip
NODES = {"a": NodeCapacity(4000, 16 * GI), "b": NodeCapacity(2000, 8 * GI)}


def pod(name: str, node: str, cpu: int = 1000, memory: int = 2 * GI) -> PodUse:
    return PodUse(f"ns/{name}", node, cpu, memory, 0.0)


def cpu_m(resources: dict) -> int:
    return int(resources["resources"]["cpu"].removesuffix("m"))


def memory(resources: dict) -> int:
    return int(resources["resources"]["memory"])


def test_a_tick_is_the_exporters_load_split_into_system_and_pods():
    pods = [pod("p", "a"), pod("q", "a", cpu=500, memory=GI)]
    sample = tick(NODES, pods, 100.0, FLAT)
    loads = node_loads(NODES, pods, 100.0, FLAT)
    for name, cap in NODES.items():
        assert sample.node[name] == pytest.approx(
            (loads[name][0] * cap.cpu_m / 100, loads[name][1] * cap.memory_bytes / 100)
        )
    assert sample.system["a"] == pytest.approx((400.0, 0.2 * 16 * GI))
    assert sample.pods == {"ns/p": ("a", 1000.0, 2.0 * GI), "ns/q": ("a", 500.0, 1.0 * GI)}
    pods_cpu = sum(cpu for node, cpu, _ in sample.pods.values() if node == "a")
    assert sample.system["a"][0] + pods_cpu == pytest.approx(sample.node["a"][0])


def test_a_clamped_node_shares_what_is_left_among_its_pods():
    pods = [pod(f"p{i}", "b") for i in range(3)]  # 10 % + 150 % of a 2-core node
    sample = tick(NODES, pods, 100.0, FLAT)
    assert sample.node["b"][0] == pytest.approx(2000.0)  # 100 %, as the exporter serves it
    assert sample.system["b"][0] == pytest.approx(200.0)
    shares = [cpu for _, cpu, _ in sample.pods.values()]
    assert shares == pytest.approx([600.0] * 3)  # 1800 m left, pro rata
    assert sample.system["b"][0] + sum(shares) == pytest.approx(sample.node["b"][0])


def test_percentile_is_koordlets_index_rule():
    values = [float(v) for v in range(1, 21)]  # 20 samples
    assert percentile(values, 0.95) == 19.0  # int(20 x 0.95) - 1 = 18
    assert percentile(values, 0.5) == 10.0
    assert percentile([5.0], 0.5) == 5.0  # index -1 becomes 0


def feed(books: Books, seconds: range, pods_at=lambda t: [pod("p", "a")]) -> None:
    for t in seconds:
        books.add(tick(NODES, pods_at(t), float(t), FLAT))


def test_usage_is_the_mean_over_the_aggregate_window_and_expires():
    config = NodeMetricConfig(report_seconds=5, aggregate_seconds=10, durations=(20,))
    books = Books(config)
    # 20 s with a pod on a, then 10 s without it: the window holds only the last 10 s.
    feed(books, range(0, 20))
    feed(books, range(20, 25), pods_at=lambda t: [])
    half = books.status("a", 24.5)  # window (14.5, 24.5]: 5 s with the pod, 5 s without
    assert cpu_m(half["nodeMetric"]["nodeUsage"]) == 400 + 500
    feed(books, range(25, 30), pods_at=lambda t: [])
    status = books.status("a", 29.5)
    assert cpu_m(status["nodeMetric"]["nodeUsage"]) == 400
    assert cpu_m(status["nodeMetric"]["systemUsage"]) == 400
    assert status["updateTime"] == "1970-01-01T00:00:29Z"


def test_pods_metric_lists_running_pods_only_with_their_mean_use():
    books = Books(NodeMetricConfig(report_seconds=5, aggregate_seconds=10, durations=(10,)))
    feed(books, range(0, 10), pods_at=lambda t: [pod("gone", "a"), pod("z", "a"), pod("m", "a")])
    feed(books, range(10, 15), pods_at=lambda t: [pod("z", "a"), pod("m", "a"), pod("b1", "b")])
    listed = books.status("a", 14.5)["podsMetric"]
    assert [(p["namespace"], p["name"]) for p in listed] == [("ns", "m"), ("ns", "z")]
    assert cpu_m(listed[0]["podUsage"]) == 1000
    assert memory(listed[0]["podUsage"]) == 2 * GI
    assert [p["name"] for p in books.status("b", 14.5)["podsMetric"]] == ["b1"]


def test_aggregates_wait_for_half_the_duration_then_give_koordlets_statistics():
    config = NodeMetricConfig(report_seconds=5, aggregate_seconds=10, durations=(40,))
    books = Books(config)
    feed(books, range(0, 19), pods_at=lambda t: [pod("p", "a")] if t % 2 else [])
    assert "aggregatedNodeUsages" not in books.status("a", 18.5)["nodeMetric"]  # 18 s < 20 s
    feed(books, range(19, 21), pods_at=lambda t: [pod("p", "a")] if t % 2 else [])
    (aggregated,) = books.status("a", 20.5)["nodeMetric"]["aggregatedNodeUsages"]
    assert aggregated["duration"] == "40s"
    usage = aggregated["usage"]
    assert set(usage) == {"avg", "p50", "p90", "p95", "p99"}
    # 21 samples: 10 with the pod (1400 m), 11 without (400 m)
    assert cpu_m(usage["avg"]) == round((10 * 1400 + 11 * 400) / 21)
    assert cpu_m(usage["p50"]) == 400  # sorted[int(21 x 0.5) - 1] = sorted[9]
    assert cpu_m(usage["p95"]) == 1400


def test_a_node_without_samples_in_the_window_has_no_status():
    books = Books(NodeMetricConfig(report_seconds=5, aggregate_seconds=10, durations=(10,)))
    feed(books, range(0, 5))
    assert books.status("a", 30.0) is None
    assert books.status("elsewhere", 4.0) is None
    assert books.nodes() == ["a", "b"]


def test_spec_says_the_report_interval_and_durations():
    config = NodeMetricConfig(report_seconds=15, aggregate_seconds=60, durations=(300, 600))
    assert spec(config) == {
        "metricCollectPolicy": {
            "aggregateDurationSeconds": 60,
            "reportIntervalSeconds": 15,
            "nodeAggregatePolicy": {"durations": ["300s", "600s"]},
        }
    }


@pytest.mark.parametrize(
    "kwargs", [{"report_seconds": 0}, {"aggregate_seconds": -1}, {"durations": (300, 0)}]
)
def test_bad_config_is_refused(kwargs):
    with pytest.raises(ValueError, match="must be > 0"):
        NodeMetricConfig(**kwargs)


def test_a_warm_start_reports_history_from_the_first_sample():
    """koordlet runs long before a benchmark: with warm_start its windows are full at once, so
    Koordinator on its default 5-minute aggregates needs no cold start in a short scenario."""
    config = NodeMetricConfig(warm_start=True)  # koordlet's 60 s, 300 s, 5-minute aggregates
    books = Books(config)
    feed(books, range(0, 1))
    status = books.status("a", 0.5)["nodeMetric"]
    (aggregated,) = status["aggregatedNodeUsages"]
    assert aggregated["duration"] == "300s"
    assert cpu_m(aggregated["usage"]["p95"]) == cpu_m(status["nodeUsage"]) == 1400
    cold = Books(NodeMetricConfig())
    feed(cold, range(0, 1))
    assert "aggregatedNodeUsages" not in cold.status("a", 0.5)["nodeMetric"]
