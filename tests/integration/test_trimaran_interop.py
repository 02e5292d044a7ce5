"""Upstream Trimaran runs on Ballast's watcher unchanged, and on paypal/load-watcher as deployed.

The pinned scheduler-plugins release (`ballast sandbox build --with-trimaran`) reads the
watcher's load-watcher endpoint `/watcher` over the real chain (synthetic exporter, Prometheus,
watcher) and schedules pods on the sandbox. Three 2-CPU nodes at 25 %, 30 % and 80 % CPU; each
pod requests 100m, which TargetLoadPacking predicts as 150m (7.5 % of a node). The benchmarks'
Trimaran rows read paypal/load-watcher v0.2.4 on a Prometheus with its recording rules: the
second test proves that wiring places the first pod where the served loads say.
"""

from __future__ import annotations

import requests

from sandbox.cluster.nodes import NodeSpec
from sandbox.peers.trimaran import missing_metrics_lines, start_trimaran, stop_scheduler
from scheduler.plugins.target_load_packing import tlp_score
from shared import wire
from tests.fixtures.loadwatcher import LoadWatcher, RulesPrometheus
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import create_pods, pod_body, wait_bound

LOADS = {"low": 25.0, "near": 30.0, "hot": 80.0}
CAPACITY_M = 2000
PREDICTED_M = 150  # round(100m * the default multiplier 1.5)
TARGET = 40  # TargetLoadPacking's default targetUtilization
NAME = "trimaran-interop"
READ_BY_TLP = (wire.AVG, wire.LATEST)


def _served_cpu(watcher_url: str, nodes: list[str]) -> dict[str, float] | None:
    """CPU % per node as Trimaran reads /watcher: of AVG and Latest, the one listed last."""
    resp = requests.get(f"{watcher_url}/watcher", timeout=5)
    if resp.status_code != 200:
        return None  # load-watcher answers 500 until its first fetch
    envelope = wire.parse_envelope(resp.json())
    served = {}
    for node in nodes:
        metrics = envelope.nodes.get(node) or []
        cpu = [m.value for m in metrics if m.type == wire.CPU and m.operator in READ_BY_TLP]
        if not cpu:
            return None
        served[node] = cpu[-1]
    return served


def test_trimaran_schedules_from_ballast_watcher(
    sandbox, kube_api, kube_nodes, namespace, exporter, prometheus, make_watcher
):
    names, label = _nodes(namespace, exporter, kube_nodes)
    watcher = make_watcher(prometheus.url)
    _schedules(sandbox, kube_api, namespace, names, label, watcher.url, NAME)


def test_trimaran_schedules_from_load_watcher(
    sandbox, kube_api, kube_nodes, namespace, exporter, tmp_path
):
    names, label = _nodes(namespace, exporter, kube_nodes)
    prom = RulesPrometheus(tmp_path / "prom", [exporter.target]).start()
    upstream = LoadWatcher(tmp_path / "load-watcher", prom.url)
    try:
        nodes = list(names.values())
        wait_for(lambda: set(nodes) <= prom.rule_nodes(), timeout=30, what="the recording rules")
        upstream.start().wait_nodes(nodes)
        _schedules(sandbox, kube_api, namespace, names, label, upstream.url, f"{NAME}-lw")
    finally:
        upstream.stop()
        prom.stop()


def _nodes(namespace, exporter, kube_nodes) -> tuple[dict[str, str], dict[str, str]]:
    names = {role: f"{namespace}-{role}" for role in LOADS}
    for role, cpu in LOADS.items():
        exporter.set(names[role], cpu=cpu, memory=30.0)
    label = {"ballast-test": namespace}
    kube_nodes([NodeSpec(names[r], cpu="2", memory="8Gi", labels=label) for r in LOADS])
    return names, label


def _schedules(sandbox, kube_api, namespace, names, label, watcher_url, name) -> None:
    nodes = list(names.values())

    def settled() -> dict[str, float] | None:
        served = _served_cpu(watcher_url, nodes)
        near = served and all(abs(served[names[r]] - LOADS[r]) < 3 for r in LOADS)
        return served if near else None

    # Trimaran reads the watcher at start and then every 30 s: start it once the data is there.
    wait_for(settled, timeout=45, what=f"{watcher_url} to serve every node's load on /watcher")
    start_trimaran(sandbox, watcher_url, scheduler_name=name, name=name)
    try:
        served = wait_for(settled, timeout=10, what="the served loads")
        scores = {
            n: tlp_score(cpu, CAPACITY_M, PREDICTED_M, 0, TARGET) for n, cpu in served.items()
        }
        best = max(scores, key=scores.get)
        assert sorted(scores.values())[-2] < scores[best], f"no single best node: {scores}"

        create_pods(kube_api, namespace, [pod_body("first", name, node_selector=label)])
        assert wait_bound(kube_api, namespace, 1, timeout=60)["first"] == best, scores

        more = [pod_body(f"p{i}", name, node_selector=label) for i in range(4)]
        create_pods(kube_api, namespace, more)
        placed = wait_bound(kube_api, namespace, 5, timeout=60)
        assert set(placed.values()) <= set(nodes), placed
    finally:
        stop_scheduler(sandbox, name)
    assert (sandbox.log_dir / f"{name}.log").stat().st_size > 0
    assert missing_metrics_lines(sandbox, name) == []
