"""The event recorder's queueing: PodScheduled patches only when the outcome changes."""

from kubernetes import client

from scheduler.framework import PodInfo
from scheduler.kube.events import SCHEDULER_ERROR, EventRecorder, pod_scheduled_false


def pod(uid="u1"):
    return PodInfo(
        name="p",
        namespace="ns",
        uid=uid,
        scheduler_name="ballast",
        priority=0,
        created=0.0,
        node_name="",
        phase="Pending",
        requests={},
        limits={},
        raw={},
    )


def queued(recorder):
    items = []
    while not recorder._queue.empty():
        items.append(recorder._queue.get_nowait())
    return [(w.method, w.what) for w in items]


def test_condition_patch_once_per_outcome():
    rec = EventRecorder(client.ApiClient(), "me")  # not started: nothing is sent
    rec.failed(pod(), "0/3 nodes are available: 3 Insufficient cpu.")
    rec.failed(pod(), "0/3 nodes are available: 3 Insufficient cpu.")
    assert queued(rec) == [
        ("POST", "event FailedScheduling"),
        ("PATCH", "condition ns/p"),
        ("POST", "event FailedScheduling"),
    ]
    rec.failed(pod(), "Binding rejected: boom", SCHEDULER_ERROR)  # a new outcome: patched
    assert [m for m, _ in queued(rec)] == ["POST", "PATCH"]
    rec.scheduled(pod(), "n1")  # bound: a later failure (recreated state) patches again
    rec.failed(pod(), "Binding rejected: boom", SCHEDULER_ERROR)
    assert [m for m, _ in queued(rec)] == ["POST", "POST", "PATCH"]


def test_a_condition_written_with_the_nomination_is_not_queued_again():
    rec = EventRecorder(client.ApiClient(), "me")
    message = "0/3 nodes are available: 3 Insufficient cpu."
    rec.failed(pod(), message, condition=False)  # the evictor's patch carries it
    rec.failed(pod(), message)  # the same outcome again: written already
    rec.failed(pod(), "0/3 nodes are available: 3 Insufficient memory.")
    assert queued(rec) == [
        ("POST", "event FailedScheduling"),
        ("POST", "event FailedScheduling"),
        ("POST", "event FailedScheduling"),
        ("PATCH", "condition ns/p"),
    ]


def test_condition_body_is_kube_schedulers():
    (cond,) = pod_scheduled_false("Unschedulable", "why")["status"]["conditions"]
    assert {k: cond[k] for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "why",
    }
    assert cond["lastTransitionTime"].endswith("Z") and cond["lastProbeTime"] is None
