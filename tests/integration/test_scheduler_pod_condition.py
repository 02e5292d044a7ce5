"""PodScheduled=False on pods that fit nowhere, as kube-scheduler sets it; True once bound."""

from __future__ import annotations

import json

from kubernetes import client

from scheduler.framework import resources
from scheduler.kube import kubeapi
from scheduler.kube.binder import binding_body
from scheduler.kube.events import EventRecorder
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    T,
    create_pods,
    events_for,
    pod_body,
    running,
    wait_bound,
)

MERGE = "application/merge-patch+json"


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
        # The event and the patch leave on the event workers, the event possibly later (held
        # while binds are pending): wait for it rather than read it once.
        (event,) = wait_for(
            lambda: events_for(kube_api, namespace, "big", "FailedScheduling")[:1],
            timeout=30,
            what="the FailedScheduling event behind the condition",
        )
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


def test_a_condition_patch_written_after_the_binding_is_refused(kube_api, kube_nodes, namespace):
    """The race behind issue 19's held-back pop from backoff: a PodScheduled=False patch that
    reaches the API server after the binding carries the pod's older resourceVersion, so it is
    refused and the pod stays PodScheduled=True."""
    (node,) = kube_nodes(1, cpu="1")
    create_pods(kube_api, namespace, [pod_body("late", scheduler="nobody")])  # ours to bind
    path = f"/api/v1/namespaces/{namespace}/pods/late"
    seen = resources.pod_info(json.loads(kubeapi.request(kube_api, "GET", path).body))
    recorder = EventRecorder(kube_api, "test")  # not started: the test sends by hand
    recorder.failed(seen, "0/1 nodes are available: 1 Insufficient cpu.")
    (patch,) = [w for w in drained(recorder) if w.method == "PATCH"]

    bound = kubeapi.request(kube_api, "POST", f"{path}/binding", binding_body(seen, node))
    assert bound.ok, bound.message()
    assert recorder._send(patch).status == 409
    assert condition(kube_api, namespace, "late")["status"] == "True"


def test_a_condition_patch_for_a_pod_changed_meanwhile_is_written(kube_api, namespace):
    create_pods(kube_api, namespace, [pod_body("changed", scheduler="nobody")])
    path = f"/api/v1/namespaces/{namespace}/pods/changed"
    seen = resources.pod_info(json.loads(kubeapi.request(kube_api, "GET", path).body))
    relabel = {"metadata": {"labels": {"touched": "yes"}}}
    kubeapi.request(kube_api, "PATCH", path, relabel, content_type=MERGE)
    recorder = EventRecorder(kube_api, "test")
    recorder.failed(seen, "0/1 nodes are available: 1 Insufficient cpu.")
    (patch,) = [w for w in drained(recorder) if w.method == "PATCH"]
    assert recorder._send(patch).ok  # refused at the old version, then patched at the new
    cond = condition(kube_api, namespace, "changed")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")


def drained(recorder: EventRecorder) -> list:
    writes = []
    while not recorder._queue.empty():
        writes.append(recorder._queue.get_nowait())
    return writes
