"""The usage kwok's kubelets report (sandbox.peers.metrics_server) is the simulator's load."""

from __future__ import annotations

import math

import pytest

from sandbox.load.simulator import (
    NodeCapacity,
    PodUse,
    SimulatorConfig,
    node_annotations,
    node_loads,
    pod_annotations,
)
from sandbox.peers import metrics_server
from watcher.providers.metrics_server import pod_usage


def _python(expression: str) -> str:
    # The generated arithmetic is CEL and Python at once, but for CEL's double().
    return expression.replace("double(", "float(")


@pytest.mark.parametrize("x", [0.0, 0.5, math.pi, 6.2, 123456.789, 1.8e8 + 0.3])
def test_cos_expression_matches_cos(x):
    assert eval(_python(metrics_server.cos_expression(repr(x)))) == pytest.approx(
        math.cos(x), abs=1e-8
    )


def test_annotations_carry_the_simulators_load():
    config = SimulatorConfig(seed=3, ramp_seconds=0.0, wobble=0.1, wobble_period=60.0)
    cap = NodeCapacity(cpu_m=4000, memory_bytes=16 * 1024**3)
    pods = [PodUse("ns/a", "n1", 500, 256 * 1024**2, 0.0), PodUse("ns/b", "n1", 0, 0, 0.0)]
    now = 1_700_000_123.4
    cpu_pct, mem_pct = node_loads({"n1": cap}, pods, now, config, clamp=False)["n1"]

    node = node_annotations("n1", cap, config)
    b = float(node[metrics_server.BACKGROUND_CPU])
    w = float(node[metrics_server.BACKGROUND_WOBBLE])
    omega = 2 * math.pi / float(node[metrics_server.BACKGROUND_PERIOD])
    phase = float(node[metrics_server.BACKGROUND_PHASE])
    # The rate of kwok's background counter is b (1 + w sin(omega t + phase)).
    cores = b * (1 + w * math.sin(omega * now + phase))
    memory = float(node[metrics_server.BACKGROUND_MEMORY])
    for pod in pods:
        annotations = pod_annotations(pod, config)
        cores += float(annotations[metrics_server.USAGE_CPU])
        memory += float(annotations[metrics_server.USAGE_MEMORY])
    assert 100 * cores * 1000 / cap.cpu_m == pytest.approx(cpu_pct, rel=1e-5)
    assert 100 * memory / cap.memory_bytes == pytest.approx(mem_pct, rel=1e-5)


def test_background_counter_rate_is_the_background():
    # d/dt of the counter expression, by finite difference, with the node's age as t - t0.
    node = {"b": 2.0, "w": 0.1, "p": 60.0, "phi": 1.3}
    omega = 2 * math.pi / node["p"]

    def counter(t: float) -> float:
        angle = repr(omega * t + node["phi"])
        cos = eval(_python(metrics_server.cos_expression(angle)))
        return node["b"] * (t + node["w"] / omega * (1.0 - cos))

    t = 1_700_000_000.0
    rate = (counter(t + 0.5) - counter(t - 0.5)) / 1.0
    assert rate == pytest.approx(2.0 * (1 + 0.1 * math.sin(omega * t + 1.3)), rel=1e-4)


def test_pod_usage_sums_containers_and_skips_bad_pods():
    items = [
        {
            "metadata": {"namespace": "a", "name": "p"},
            "containers": [
                {"name": "x", "usage": {"cpu": "250000000n", "memory": "1Mi"}},
                {"name": "y", "usage": {"cpu": "50m", "memory": "1024Ki"}},
            ],
        },
        {"metadata": {"namespace": "a", "name": "bad"}, "containers": [{"usage": {"cpu": "x"}}]},
    ]
    assert pod_usage(items) == {("a", "p"): (300, 2 * 1024**2)}
