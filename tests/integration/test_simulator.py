"""The closed loop, for real: a pod bound on the apiserver raises its node's load in Prometheus.

The simulator list+watches the sandbox's nodes and pods and feeds a private synthetic exporter
that a private Prometheus scrapes; the memory gauge is an instant value, so Prometheus shows a
placement within a scrape or two.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from sandbox.load.simulator import Simulator, SimulatorConfig
from tests.fixtures.ports import wait_for

GI = 1024**3
MEMORY = "100 * (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)"


@pytest.fixture
def loop(kube_api, make_exporter, make_prometheus):
    config = SimulatorConfig(
        seed=5,
        factor_min=1.0,
        factor_max=1.0,
        ramp_seconds=0.0,
        wobble=0.0,
        background_cpu=(10.0, 10.0),
        background_memory=(20.0, 20.0),
        interval=0.2,
    )
    exporter = make_exporter()
    prometheus = make_prometheus([exporter.target])
    simulator = Simulator(kube_api, exporter, config).start()
    assert simulator.wait_synced(30)
    yield simulator, prometheus
    simulator.stop()


def memory_of(prometheus, node: str) -> float | None:
    for series in prometheus.query(MEMORY):
        if series["metric"].get("instance") == node:
            return float(series["value"][1])
    return None


def pod(name: str, node: str, cpu: str, memory: str) -> client.V1Pod:
    # spec.nodeName set at creation: bound without a scheduler, as a DaemonSet pod would be.
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            node_name=node,
            containers=[
                client.V1Container(
                    name="c",
                    image="pause",
                    resources=client.V1ResourceRequirements(
                        requests={"cpu": cpu, "memory": memory}
                    ),
                )
            ],
        ),
    )


def test_placed_pods_raise_their_nodes_load_in_prometheus(loop, kube_api, kube_nodes, namespace):
    simulator, prometheus = loop
    busy, idle = kube_nodes(2, cpu="4", memory="8Gi")
    wait_for(
        lambda: memory_of(prometheus, busy) == pytest.approx(20.0, abs=0.01),
        30,
        what="background memory of the new nodes in Prometheus",
    )

    core = client.CoreV1Api(kube_api)
    core.create_namespaced_pod(namespace, pod("a", busy, "1", "2Gi"), _request_timeout=10)
    core.create_namespaced_pod(namespace, pod("b", busy, "1", "2Gi"), _request_timeout=10)
    # 2 x 2Gi of 8Gi = 50 points over the 20 % background; 2 x 1 CPU of 4 = 50 points.
    wait_for(
        lambda: memory_of(prometheus, busy) == pytest.approx(70.0, abs=0.01),
        30,
        what="the pods' memory on their node in Prometheus",
    )
    assert simulator.loads()[busy] == pytest.approx((60.0, 70.0))
    assert memory_of(prometheus, idle) == pytest.approx(20.0, abs=0.01)
    assert simulator.pods_per_node()[busy] == 2

    core.delete_namespaced_pod("a", namespace, grace_period_seconds=0, _request_timeout=10)
    wait_for(
        lambda: memory_of(prometheus, busy) == pytest.approx(45.0, abs=0.01),
        30,
        what="the deleted pod's use to leave its node",
    )
    assert simulator.errors == 0
