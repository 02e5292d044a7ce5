"""The scheduler on the sandbox without load data: binding, constraints, events, retries."""

from __future__ import annotations

import re

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


def test_binds_pods_and_writes_scheduled_events(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    nodes = kube_nodes(3, cpu="2", labels=label)
    with running(kube_api):
        create_pods(kube_api, namespace, [pod_body(f"p{i}", node_selector=label) for i in range(6)])
        placed = wait_bound(kube_api, namespace, 6)
        assert set(placed.values()) <= set(nodes)
        wait_for(
            lambda: all(events_for(kube_api, namespace, f"p{i}", "Scheduled") for i in range(6)),
            timeout=15,
            what="Scheduled events",
        )
    event = events_for(kube_api, namespace, "p0", "Scheduled")[0]
    assert re.fullmatch(
        rf"Successfully assigned {namespace}/p0 to {placed['p0']} \(score \d+\)", event["note"]
    )
    assert event["reportingController"] == "ballast"


def test_other_scheduler_names_are_left_alone(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    kube_nodes(1, cpu="2", labels=label)
    with running(kube_api):
        create_pods(
            kube_api,
            namespace,
            [
                pod_body("theirs", scheduler="someone-else", node_selector=label),
                pod_body("ours", node_selector=label),
            ],
        )
        wait_bound(kube_api, namespace, 1)
        # "ours" was created after "theirs" and is bound, so "theirs" was seen and skipped.
        assert placement(kube_api, namespace)["theirs"] == ""
        assert not events_for(kube_api, namespace, "theirs", "FailedScheduling")


def test_taints_selectors_and_affinity_are_honoured(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    tainted, zoned, plain = (f"{namespace}-{s}" for s in ("tainted", "zoned", "plain"))
    kube_nodes(
        [
            NodeSpec(tainted, cpu="2", labels=label, taints=[taint]),
            NodeSpec(zoned, cpu="2", labels=label | {"zone": "b"}),
            NodeSpec(plain, cpu="2", labels=label),
        ]
    )
    # matchFields takes exactly one value for metadata.name
    not_zoned = {"key": "metadata.name", "operator": "NotIn", "values": [zoned]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [not_zoned]}]
            }
        }
    }
    tolerate = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    not_plain = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "NotIn",
                                "values": [plain, zoned],
                            }
                        ]
                    }
                ]
            }
        }
    }
    with running(kube_api):
        create_pods(
            kube_api,
            namespace,
            [pod_body(f"zone-{i}", node_selector=label | {"zone": "b"}) for i in range(3)]
            + [pod_body(f"fields-{i}", node_selector=label, affinity=affinity) for i in range(4)]
            + [pod_body("tolerant", node_selector=label, affinity=not_plain, tolerations=tolerate)]
            + [pod_body("intolerant", node_selector=label, affinity=not_plain)],
        )
        placed = wait_bound(kube_api, namespace, 8)
        assert all(placed[f"zone-{i}"] == zoned for i in range(3))
        # the tainted node is excluded for pods without a toleration
        assert all(placed[f"fields-{i}"] == plain for i in range(4))
        assert placed["tolerant"] == tainted
        failed = wait_for(
            lambda: events_for(kube_api, namespace, "intolerant", "FailedScheduling"),
            timeout=15,
            what="FailedScheduling for the intolerant pod",
        )
        assert placement(kube_api, namespace)["intolerant"] == ""
    note = failed[0]["note"]
    assert note.startswith("0/"), note
    assert "1 node(s) had untolerated taint(s)" in note, note
    assert "node(s) didn't match Pod's node affinity/selector" in note, note
