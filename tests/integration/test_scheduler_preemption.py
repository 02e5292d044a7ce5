"""Preemption on the real apiserver: PriorityClasses through admission, kwok nodes, real deletes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from sandbox.cluster.nodes import delete_nodes
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    T,
    create_pods,
    events_for,
    placement,
    pod_body,
    pods,
    running,
)


@pytest.fixture
def priority_classes(kube_api, namespace) -> Iterator:
    """`make(value, never=False)` -> a PriorityClass name unique to the test, removed after."""
    made: list[str] = []
    api = client.SchedulingV1Api(kube_api)

    def make(value: int, never: bool = False) -> str:
        name = f"{namespace}-{value}{'-never' if never else ''}"
        body = {"metadata": {"name": name}, "value": value}
        if never:
            body["preemptionPolicy"] = "Never"
        api.create_priority_class(body, _request_timeout=T)
        made.append(name)
        return name

    yield make
    for name in made:
        api.delete_priority_class(name, _request_timeout=T)


def on(body: dict, node: str, priority_class: str) -> dict:
    """Placed by name, as if scheduled long ago; priority through admission."""
    body["spec"]["nodeName"] = node
    body["spec"]["priorityClassName"] = priority_class
    return body


def pending(name: str, priority_class: str, cpu: str, label: dict) -> dict:
    body = pod_body(name, cpu=cpu, node_selector=label)
    body["spec"]["priorityClassName"] = priority_class
    return body


def failed_note(api, namespace: str, pod: str) -> str:
    found = wait_for(
        lambda: events_for(api, namespace, pod, "FailedScheduling"),
        timeout=15,
        what=f"FailedScheduling for {pod}",
    )
    return found[-1]["note"]


def wait_node(api, namespace: str, pod: str, timeout: float = 30) -> str:
    return wait_for(
        lambda: placement(api, namespace).get(pod) or None, timeout=timeout, what=f"{pod} bound"
    )


def test_high_priority_pod_evicts_the_minimal_set_on_the_best_node(
    kube_api, kube_nodes, namespace, priority_classes
):
    label = {"ballast-test": namespace}
    a, b = kube_nodes(2, cpu="2", labels=label)
    p1, p2, p3, p4, p10 = (priority_classes(v) for v in (1, 2, 3, 4, 10))
    create_pods(
        kube_api,
        namespace,
        [
            on(pod_body("a1", cpu="1"), a, p1),
            on(pod_body("a2", cpu="1"), a, p2),
            on(pod_body("b1", cpu="1"), b, p3),
            on(pod_body("b2", cpu="1"), b, p4),
        ],
    )
    with running(kube_api):
        create_pods(kube_api, namespace, [pending("hi", p10, "1", label)])
        # On a, a2 is reprieved and a1 alone goes; on b the lowest victim would be priority 3.
        assert wait_node(kube_api, namespace, "hi") == a
        left = placement(kube_api, namespace)
        assert "a1" not in left and {"a2", "b1", "b2"} <= set(left)
        hi_uid = pods(kube_api, namespace)["hi"]["metadata"]["uid"]
        preempted = wait_for(
            lambda: events_for(kube_api, namespace, "a1", "Preempted"), timeout=15, what="event"
        )
        assert preempted[0]["note"] == f"Preempted by pod {hi_uid} on node {a}"
        assert preempted[0]["related"]["name"] == "hi"
        assert "Insufficient cpu" in failed_note(kube_api, namespace, "hi")


def test_equal_priority_never_preempts_and_policy_never_waits(
    kube_api, kube_nodes, namespace, priority_classes
):
    label = {"ballast-test": namespace}
    (node,) = kube_nodes(1, cpu="1", labels=label)
    p5, p9_never = priority_classes(5), priority_classes(9, never=True)
    create_pods(kube_api, namespace, [on(pod_body("held", cpu="1"), node, p5)])
    with running(kube_api):
        create_pods(
            kube_api,
            namespace,
            [pending("same", p5, "1", label), pending("meek", p9_never, "1", label)],
        )
        note = failed_note(kube_api, namespace, "same")
        assert note.endswith(
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        ), note
        note = failed_note(kube_api, namespace, "meek")
        assert note.endswith("preemption: not eligible due to preemptionPolicy=Never."), note
        assert placement(kube_api, namespace) == {"held": node, "same": "", "meek": ""}
        assert not events_for(kube_api, namespace, "held", "Preempted")


@pytest.mark.parametrize("min_available,allowed,victim_node", [(1, 0, "b"), (0, 1, "a")])
def test_pod_disruption_budget_steers_the_choice(
    kube_api, kube_nodes, namespace, priority_classes, min_available, allowed, victim_node
):
    label = {"ballast-test": namespace}
    nodes = dict(zip("ab", kube_nodes(2, cpu="1", labels=label), strict=True))
    p1, p2, p10 = (priority_classes(v) for v in (1, 2, 10))
    guarded = on(pod_body("guarded", cpu="1"), nodes["a"], p1)
    guarded["metadata"]["labels"] = {"app": "db"}
    pdb = {
        "metadata": {"name": "db"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "db"}}},
    }
    policy = client.PolicyV1Api(kube_api)
    policy.create_namespaced_pod_disruption_budget(namespace, pdb, _request_timeout=T)
    create_pods(kube_api, namespace, [guarded, on(pod_body("free", cpu="1"), nodes["b"], p2)])

    def computed():
        status = policy.read_namespaced_pod_disruption_budget("db", namespace).status
        return status if status and status.current_healthy == 1 else None

    # The disruption controller's own figure, as preemption reads it in a real cluster.
    status = wait_for(computed, timeout=30, what="the disruption controller's PDB status")
    assert status.disruptions_allowed == allowed
    with running(kube_api):
        create_pods(kube_api, namespace, [pending("hi", p10, "1", label)])
        # a's priority-1 pod is the cheaper victim unless its budget allows no disruption.
        assert wait_node(kube_api, namespace, "hi") == nodes[victim_node]
        left = placement(kube_api, namespace)
        assert ("guarded" in left) == (victim_node == "b")


def _manual_node(kube_api, name: str, label: dict) -> None:
    """A Ready node kwok does not manage: a pod deleted there stays Terminating (no kubelet)."""
    core = client.CoreV1Api(kube_api)
    core.create_node({"metadata": {"name": name, "labels": label}}, _request_timeout=T)
    capacity = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    status = {
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Test", "message": "test"}],
    }
    core.patch_node_status(name, {"status": status}, _request_timeout=T)


def test_nominated_node_is_not_taken_by_a_lower_priority_pod(
    kube_api, kube_nodes, namespace, priority_classes
):
    label = {"ballast-test": namespace}
    node = f"manual-{namespace}"[:63]
    core = client.CoreV1Api(kube_api)
    _manual_node(kube_api, node, label)
    try:
        p1, p5, p10 = (priority_classes(v) for v in (1, 5, 10))
        create_pods(kube_api, namespace, [on(pod_body("victim", cpu="2"), node, p1)])
        # A long backoff keeps the preemptor waiting after the victim is gone, so the
        # lower-priority pod gets its turn first: only the nomination protects the room.
        with running(kube_api, initial_backoff=4.0, max_backoff=4.0) as runtime:
            create_pods(kube_api, namespace, [pending("hi", p10, "2", label)])

            def terminating() -> dict | None:
                victim = pods(kube_api, namespace)["victim"]
                return victim if victim["metadata"].get("deletionTimestamp") else None

            victim = wait_for(terminating, timeout=15, what="victim terminating")
            conditions = {c["type"]: c for c in victim["status"].get("conditions") or []}
            assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
            hi = pods(kube_api, namespace)["hi"]
            assert hi["status"].get("nominatedNodeName") == node
            assert runtime.cycle.nominations.node_of(hi["metadata"]["uid"]) == node
            # The victim goes (no kubelet here: by force) and a lower-priority pod arrives.
            core.delete_namespaced_pod(
                "victim", namespace, grace_period_seconds=0, _request_timeout=T
            )
            victim_uid = victim["metadata"]["uid"]
            wait_for(
                lambda: runtime.cache.node_of(victim_uid) is None, timeout=15, what="victim gone"
            )
            create_pods(kube_api, namespace, [pending("mid", p5, "2", label)])
            note = failed_note(kube_api, namespace, "mid")
            assert "Insufficient cpu" in note, note
            assert wait_node(kube_api, namespace, "hi") == node
            assert placement(kube_api, namespace)["mid"] == ""
    finally:
        for p in pods(kube_api, namespace):
            core.delete_namespaced_pod(p, namespace, grace_period_seconds=0, _request_timeout=T)
        delete_nodes(kube_api, [node])


def test_the_nomination_and_the_pod_scheduled_condition_are_one_patch(kube_api, namespace):
    """The evictor's first write names the node and sets PodScheduled=False with the cycle's
    message (upstream's handleSchedulingFailure patch), merged into the pod's conditions by
    type; without a message it writes the nomination alone."""
    import threading

    from scheduler.framework.resources import pod_info
    from scheduler.kube.evictor import Evictor

    core = client.CoreV1Api(kube_api)
    create_pods(kube_api, namespace, [pod_body("hi", scheduler="nobody"), pod_body("lo", "x")])
    patch = {"status": {"conditions": [{"type": "Other", "status": "True"}]}}
    core.patch_namespaced_pod_status("hi", namespace, patch, _request_timeout=T)
    found = pods(kube_api, namespace)
    done = threading.Event()
    evictor = Evictor(kube_api, "test", lambda pod, node, ok: done.set())
    try:
        message = "0/3 nodes are available: 3 Insufficient cpu."
        evictor.preempt(pod_info(found["hi"]), "node-a", (), [], message)
        assert done.wait(15)
        hi = pods(kube_api, namespace)["hi"]
        assert hi["status"]["nominatedNodeName"] == "node-a"
        conditions = {c["type"]: c for c in hi["status"]["conditions"]}
        assert conditions["Other"]["status"] == "True"  # merged, not replaced
        assert conditions["PodScheduled"]["status"] == "False"
        assert conditions["PodScheduled"]["reason"] == "Unschedulable"
        assert conditions["PodScheduled"]["message"] == message
        done.clear()
        evictor.preempt(pod_info(found["lo"]), "node-b", (), [])
        assert done.wait(15)
        lo = pods(kube_api, namespace)["lo"]
        assert lo["status"]["nominatedNodeName"] == "node-b"
        assert "PodScheduled" not in {c["type"] for c in lo["status"].get("conditions") or []}
    finally:
        evictor.stop()


def test_victims_are_evicted_side_by_side_each_with_its_writes(kube_api, namespace):
    """Several victims at once: each gets DisruptionTarget, is deleted and gets its Preempted
    event; a victim gone already counts as evicted; the preemption reports success once all
    are done."""
    import threading

    from scheduler.framework.resources import pod_info
    from scheduler.kube.evictor import Evictor

    names = [f"v{i}" for i in range(4)]
    create_pods(kube_api, namespace, [pod_body(n, scheduler="nobody") for n in ["hi", *names]])
    found = pods(kube_api, namespace)
    victims = tuple(pod_info(found[n]) for n in names)
    client.CoreV1Api(kube_api).delete_namespaced_pod(
        "v3", namespace, grace_period_seconds=0, _request_timeout=T
    )  # gone before the evictor gets to it
    outcome: list[bool] = []
    done = threading.Event()
    evictor = Evictor(kube_api, "test", lambda pod, node, ok: (outcome.append(ok), done.set()))
    try:
        evictor.preempt(pod_info(found["hi"]), "node-a", victims, [], "m")
        assert done.wait(15)
        assert outcome == [True]
        left = pods(kube_api, namespace)
        for name in names[:3]:  # no kubelet: deleted pods linger, terminating
            assert left.get(name, {}).get("metadata", {}).get("deletionTimestamp") or (
                name not in left
            )
            notes = events_for(kube_api, namespace, name, "Preempted")
            assert notes and notes[0]["related"]["name"] == "hi"
        assert evictor.stats.victims == 3
    finally:
        evictor.stop()
