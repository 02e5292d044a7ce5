"""The simulator's load model: background plus placed pods' use, seeded and ramped."""

from __future__ import annotations

import pytest

from sandbox.load.simulator import (
    NodeCapacity,
    PodUse,
    SimulatorConfig,
    node_capacity,
    node_loads,
    pod_factor,
    pod_requests,
)

GI = 1024**3
FLAT = SimulatorConfig(
    seed=7, factor_min=1.0, factor_max=1.0, ramp_seconds=10.0, wobble=0.0,
    background_cpu=(10.0, 10.0), background_memory=(20.0, 20.0),
)  # fmt: skip
NODES = {"a": NodeCapacity(4000, 16 * GI), "b": NodeCapacity(2000, 8 * GI)}


def pod(name: str, node: str, cpu: int = 1000, memory: int = 2 * GI, started: float = 0.0):
    return PodUse(f"ns/{name}", node, cpu, memory, started)


def test_background_only_without_pods():
    assert node_loads(NODES, [], 100.0, FLAT) == {"a": (10.0, 20.0), "b": (10.0, 20.0)}


def test_pod_use_adds_its_share_of_the_node_after_the_ramp():
    loads = node_loads(NODES, [pod("p", "a")], now=100.0, config=FLAT)
    assert loads["a"] == pytest.approx((10.0 + 25.0, 20.0 + 12.5))
    assert loads["b"] == (10.0, 20.0)


def test_ramp_up_is_linear_from_first_seen_bound():
    half = node_loads(NODES, [pod("p", "b", started=95.0)], now=100.0, config=FLAT)
    assert half["b"] == pytest.approx((10.0 + 25.0, 20.0 + 12.5))
    zero = node_loads(NODES, [pod("p", "b", started=100.0)], now=100.0, config=FLAT)
    assert zero["b"] == pytest.approx((10.0, 20.0))


def test_pods_without_requests_use_the_default():
    loads = node_loads(NODES, [pod("p", "b", cpu=0, memory=0)], now=100.0, config=FLAT)
    default_mem_pct = 100.0 * FLAT.default_memory_bytes / (8 * GI)
    assert loads["b"] == pytest.approx((10.0 + 5.0, 20.0 + default_mem_pct))


def test_load_is_clamped_and_unknown_nodes_ignored():
    pods = [pod(f"p{i}", "b") for i in range(5)] + [pod("x", "gone")]
    loads = node_loads(NODES, pods, now=100.0, config=FLAT)
    assert loads["b"][0] == 100.0
    assert set(loads) == {"a", "b"}


def test_factor_is_seeded_per_pod_and_within_range():
    config = SimulatorConfig(seed=3, factor_min=0.5, factor_max=1.5)
    first = [pod_factor(3, f"ns/p{i}", config) for i in range(50)]
    again = [pod_factor(3, f"ns/p{i}", config) for i in reversed(range(50))][::-1]
    other = [pod_factor(4, f"ns/p{i}", config) for i in range(50)]
    assert first == again
    assert first != other
    assert all(0.5 <= f <= 1.5 for f in first)
    assert max(first) - min(first) > 0.5  # really random, not a constant


def test_background_per_node_is_seeded_and_overridable():
    config = SimulatorConfig(seed=1, wobble=0.0, background={"a": (70.0, 50.0)})
    loads = node_loads(NODES, [], 0.0, config)
    assert loads["a"] == (70.0, 50.0)
    assert 5.0 <= loads["b"][0] <= 30.0 and 10.0 <= loads["b"][1] <= 30.0
    assert node_loads(NODES, [], 0.0, config) == loads


def test_wobble_moves_cpu_around_the_background():
    config = SimulatorConfig(seed=1, background_cpu=(20.0, 20.0), wobble=0.1, wobble_period=60)
    values = [node_loads(NODES, [], float(t), config)["a"][0] for t in range(0, 60, 5)]
    assert min(values) >= 18.0 - 1e-9 and max(values) <= 22.0 + 1e-9
    assert max(values) - min(values) > 2.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"factor_min": 1.2, "factor_max": 1.0},
        {"ramp_seconds": -1},
        {"interval": 0},
        {"background_cpu": (50.0, 120.0)},
    ],
)
def test_bad_config_is_refused_with_the_field_named(kwargs):
    with pytest.raises(ValueError) as err:
        SimulatorConfig(**kwargs)
    assert next(iter(kwargs)).split("_")[0] in str(err.value)


def test_requests_and_capacity_from_api_objects():
    p = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                {"resources": {"requests": {"cpu": "1"}}},
                {},
            ]
        }
    }
    assert pod_requests(p) == (1250, 64 * 1024**2)
    assert pod_requests({"spec": {"containers": [{"resources": {"requests": {"cpu": "x"}}}]}}) == (
        0,
        0,
    )
    node = {"status": {"allocatable": {"cpu": "4", "memory": "16Gi"}}}
    assert node_capacity(node) == NodeCapacity(4000, 16 * GI)
    assert node_capacity({"status": {}}) == NodeCapacity(0, 0)
