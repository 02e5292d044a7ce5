"""Pods the apiserver accepts but nobody sane writes: they are refused with a reason or placed,
and the good pods behind them keep scheduling (issue 12, scheduler input fuzz on the real API)."""

from __future__ import annotations

from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    create_pods,
    events_for,
    placement,
    pod_body,
    running,
)


def test_odd_pods_do_not_stop_the_good_ones(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    kube_nodes(2, cpu="4", labels=label)
    huge = pod_body("huge", cpu="100000000", memory="999Ei", node_selector=label)
    many = pod_body("many-tolerations", node_selector=label)
    many["spec"]["tolerations"] = [
        {"key": f"k{i}", "operator": "Exists", "effect": "NoSchedule"} for i in range(10_000)
    ]
    deep = pod_body("deep-affinity", node_selector=label)
    term = {"matchExpressions": [{"key": f"k{i}", "operator": "DoesNotExist"} for i in range(200)]}
    deep["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term] * 20}}
    }  # fmt: skip
    good = [pod_body(f"good{i}", node_selector=label) for i in range(4)]
    with running(kube_api) as runtime:
        create_pods(kube_api, namespace, [huge, many, deep, *good])
        wait_for(
            lambda: all(placement(kube_api, namespace)[p["metadata"]["name"]] for p in good),
            timeout=30,
            what="the good pods bound",
        )
        placed = wait_for(
            lambda: (lambda p: p if p["many-tolerations"] and p["deep-affinity"] else None)(
                placement(kube_api, namespace)
            ),
            timeout=30,
            what="the odd but valid pods bound",
        )
        assert placed["huge"] == ""
        note = wait_for(
            lambda: events_for(kube_api, namespace, "huge", "FailedScheduling"),
            timeout=15,
            what="FailedScheduling for the huge pod",
        )[-1]["note"]
        assert "Insufficient cpu" in note and "Insufficient memory" in note
        assert runtime.cache.stats()["skipped_objects"] == 0
