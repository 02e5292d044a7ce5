"""Load-aware placement over the real chain: synthetic exporter, Prometheus, watcher, scheduler.

Three 2-CPU nodes at 25 %, 30 % and 80 % CPU; TargetLoadPacking with its default target of 40 %.
Each test pod requests 100m, so TargetLoadPacking predicts 150m, 7.5 % of a node.
"""

from __future__ import annotations

from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    create_pods,
    placement,
    pod_body,
    running,
    wait_bound,
)

LOADS = {"low": 25.0, "near": 30.0, "hot": 80.0}


def _nodes(kube_nodes, exporter, namespace):
    names = {role: f"{namespace}-{role}" for role in LOADS}
    for role, cpu in LOADS.items():
        exporter.set(names[role], cpu=cpu, memory=30.0)
    label = {"ballast-test": namespace}
    kube_nodes([NodeSpec(names[r], cpu="2", memory="8Gi", labels=label) for r in LOADS])
    return names, label


def _wait_loads(runtime, names):
    """Until the scheduler's snapshot has every node near its set load."""

    def ready():
        loads = runtime.metrics.loads()
        for role, name in names.items():
            cpu = loads.get(name) and loads[name].metrics.get("cpu")
            if not cpu or cpu.avg is None or abs(cpu.avg - LOADS[role]) > 3:
                return False
        return True

    wait_for(ready, timeout=45, what="the scheduler to see every node's load")


def test_placement_follows_load_and_a_burst_spreads(
    kube_api, kube_nodes, namespace, exporter, prometheus, make_watcher
):
    names, label = _nodes(kube_nodes, exporter, namespace)
    watcher = make_watcher(prometheus.url)
    doc = {"watcherAddress": watcher.url}
    with running(kube_api, doc, provider_lag=120.0) as runtime:
        _wait_loads(runtime, names)
        create_pods(kube_api, namespace, [pod_body("first", node_selector=label)])
        # 30 % + 7.5 % is closest to the 40 % target from below.
        assert wait_bound(kube_api, namespace, 1)["first"] == names["near"]

        create_pods(kube_api, namespace, [pod_body(f"b{i}", node_selector=label) for i in range(5)])
        placed = wait_bound(kube_api, namespace, 6)
    per_node = {role: sum(1 for n in placed.values() if n == names[role]) for role in LOADS}
    # Without counting recent pods, all six would go to "near": the metrics do not move.
    assert per_node["hot"] == 0, per_node
    assert per_node["low"] >= 2 and per_node["near"] >= 2, per_node
    fallbacks = runtime.telemetry.fallbacks.labels("missing")._value.get()
    assert fallbacks == 0


def test_watcher_down_still_binds_then_load_aware_again(
    kube_api, kube_nodes, namespace, exporter, prometheus, make_watcher
):
    names, label = _nodes(kube_nodes, exporter, namespace)
    watcher = make_watcher(prometheus.url)
    watcher.stop()
    doc = {"watcherAddress": watcher.url}
    with running(kube_api, doc, provider_lag=120.0) as runtime:
        # No load data at all: every node on the allocation fallback, pods still bound.
        on_hot = label | {"kubernetes.io/hostname": names["hot"]}
        create_pods(kube_api, namespace, [pod_body("blind", node_selector=on_hot)])
        create_pods(kube_api, namespace, [pod_body("blind-any", node_selector=label)])
        wait_bound(kube_api, namespace, 2)
        assert runtime.metrics.failures > 0 and runtime.metrics.last_success is None
        assert runtime.telemetry.fallbacks.labels("missing")._value.get() >= 3

        # The pod placed blind would count on its node from now on; take it away.
        client.CoreV1Api(kube_api).delete_namespaced_pod(
            "blind-any", namespace, grace_period_seconds=0, _request_timeout=10
        )
        wait_for(lambda: "blind-any" not in placement(kube_api, namespace), timeout=20)

        watcher.start()
        _wait_loads(runtime, names)
        create_pods(kube_api, namespace, [pod_body("aware", node_selector=label)])
        placed = wait_bound(kube_api, namespace, 2)
    assert placed["aware"] == names["near"], placed
