"""Node names from a real kube-apiserver: `name:port` and Node addresses map, strangers don't."""

from __future__ import annotations

from kubernetes import client

from tests.fixtures.ports import wait_for
from tests.integration.watcher_support import BadSource, inst, vector

IP = "10.77.0.2"


def test_instances_map_to_kubernetes_nodes(sandbox, kube_api, kube_nodes, make_watcher):
    by_name, by_ip = kube_nodes(2)
    client.CoreV1Api(kube_api).patch_node_status(
        by_ip, {"status": {"addresses": [{"type": "InternalIP", "address": IP}]}}
    )
    source = BadSource()
    try:
        series = ((inst(f"{by_name}:9100"), "20"), (inst(f"{IP}:9100"), "30"),
                  (inst("ghost:9100"), "40"))  # fmt: skip
        source.answers = {"cpu_q": vector(*series), "mem_q": vector(*series)}
        watcher = make_watcher(
            source.url,
            cpu_query="cpu_q",
            memory_query="mem_q",
            warm_start=False,
            kubeconfig=str(sandbox.kubeconfig),
        )
        nodes = watcher.wait_nodes([by_name, by_ip], metrics=("memory",))
        assert set(nodes) == {by_name, by_ip}
        assert nodes[by_ip]["metrics"]["memory"]["latest"] == 30.0
        wait_for(
            lambda: watcher.status()["counters"]["rejected"].get("unknown_node", 0) >= 2,
            timeout=10,
            what="the stranger rejected as unknown_node",
        )
    finally:
        source.close()
