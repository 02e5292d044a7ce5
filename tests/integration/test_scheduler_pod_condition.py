"""PodScheduled=False on pods that fit nowhere, as kube-scheduler sets it; True once bound."""

from __future__ import annotations

import json

from kubernetes import client

from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    T,
    create_pods,
    events_for,
    pod_body,
    running,
    wait_bound,
)


def condition(api: client.ApiClient, namespace: str, name: str) -> dict | None:
    resp = client.CoreV1Api(api).read_namespaced_pod_status(
        name, namespace, _preload_content=False, _request_timeout=T
    )
    conditions = json.loads(resp.data).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


def test_unschedulable_pod_gets_the_condition_then_loses_it_when_bound(
    kube_api, kube_nodes, namespace
):
    label = {"ballast-test": namespace}
    kube_nodes(2, cpu="1", labels=label)
    with running(kube_api) as runtime:
        create_pods(kube_api, namespace, [pod_body("big", cpu="3", node_selector=label)])
        cond = wait_for(
            lambda: condition(kube_api, namespace, "big"),
            timeout=15,
            what="PodScheduled on the pod that fits nowhere",
        )
        assert cond["status"] == "False"
        assert cond["reason"] == "Unschedulable"
        (event,) = events_for(kube_api, namespace, "big", "FailedScheduling")[:1]
        assert cond["message"] == event["note"]
        assert cond["message"].startswith("0/") and "Insufficient cpu" in cond["message"]
        assert runtime.events.conditions >= 1

        # A bigger node arrives: the pod binds and the API server marks it scheduled.
        kube_nodes(1, cpu="4", labels=label)
        wait_bound(kube_api, namespace, 1)
        wait_for(
            lambda: (condition(kube_api, namespace, "big") or {}).get("status") == "True",
            timeout=15,
            what="PodScheduled=True after the binding",
        )

        # Retries with the same outcome were not patched again: at most one patch per text.
        # The texts can change while other tests' nodes come and go, and the events behind
        # them are held while binds are pending, so wait for every text's event to be written.
        def notes() -> set[str]:
            return {e["note"] for e in events_for(kube_api, namespace, "big", "FailedScheduling")}

        wait_for(
            lambda: 1 <= runtime.events.conditions <= len(notes()),
            timeout=30,
            what="a FailedScheduling event for each condition text",
        )
