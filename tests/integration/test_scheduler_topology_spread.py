"""PodTopologySpread on the real apiserver: a zone spread group lands 2/2/2, and a pod whose
minDomains the cluster cannot meet stays pending with upstream's reason."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sandbox.cluster.nodes import NodeSpec
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    create_pods,
    events_for,
    placement,
    pod_body,
    running,
    wait_bound,
)

ZONE = "topology.kubernetes.io/zone"
PROFILE = {
    "profiles": [
        {
            "schedulerName": "ballast",
            "plugins": {"multiPoint": {"enabled": [{"name": "PodTopologySpread", "weight": 2}]}},
        }
    ]
}


def spread_pod(name: str, label: dict[str, str], **constraint: Any) -> dict[str, Any]:
    body = pod_body(name, node_selector=label)
    body["metadata"]["labels"] = {"app": "spread"}
    body["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
            **constraint,
        }
    ]
    return body


def test_zone_spread_and_unmet_min_domains(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    zones = {f"{namespace}-{z}{i}": f"{namespace}-{z}" for z in "abc" for i in range(2)}
    # The nodeSelector keeps other tests' nodes out of the domains (nodeAffinityPolicy Honor).
    kube_nodes([NodeSpec(n, cpu="4", labels=label | {ZONE: z}) for n, z in zones.items()])
    with running(kube_api, PROFILE):
        create_pods(kube_api, namespace, [spread_pod(f"p{i}", label) for i in range(6)])
        placed = wait_bound(kube_api, namespace, 6)
        assert Counter(zones[n] for n in placed.values()) == {z: 2 for z in set(zones.values())}

        create_pods(kube_api, namespace, [spread_pod("seventh", label, minDomains=4)])
        failed = wait_for(
            lambda: events_for(kube_api, namespace, "seventh", "FailedScheduling"),
            timeout=15,
            what="FailedScheduling for the seventh pod",
        )
        assert placement(kube_api, namespace)["seventh"] == ""
    note = failed[0]["note"]
    # 3 domains < minDomains 4: the global minimum is 0, so every zone's skew is 2 + 1 - 0 > 1.
    assert "6 node(s) didn't match pod topology spread constraints." in note or (
        "6 node(s) didn't match pod topology spread constraints," in note
    ), note
    assert "(missing required label)" not in note, note
