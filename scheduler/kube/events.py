"""Kubernetes Events for scheduling outcomes (`Scheduled`, `FailedScheduling`), and the
PodScheduled=False condition on pods that could not be placed.

Written as events.k8s.io/v1 Events, as kube-scheduler writes them: `reportingController` is the
profile's scheduler name, `reportingInstance` this replica's identity. Posting happens on a
small worker pool behind a bounded queue, so a slow API server never slows scheduling; when the
queue is full the event is dropped and counted.

A PodScheduled=False patch may wait in that queue while the scheduler retries the pod and binds
it; written after the binding it would mark a bound pod unschedulable. So it is dropped when the
pod was scheduled after the patch was queued, and it carries the pod's resourceVersion as seen
by the scheduler, so the API server refuses it (409) once the pod has changed since, the
binding included; then the pod is read again and patched at its current version unless it is
bound by now (v1.34 cancels a pending status patch when the pod's binding is dispatched).
"""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from scheduler.framework import PodInfo
from scheduler.kube import kubeapi
from shared.lifecycle import Lifecycle, join

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = (5.0, 10.0)
NORMAL, WARNING = "Normal", "Warning"
UNSCHEDULABLE, SCHEDULER_ERROR = "Unschedulable", "SchedulerError"  # PodScheduled reasons
MARKED_CAPACITY = 50_000
# With `defer_to`, a write waits while the scheduler is busy, but never longer than this: under
# sustained load events still go out, this much later.
MAX_HOLD_S = 10.0
HOLD_POLL_S = 0.05
# As client-go's event broadcaster: an event the API server could not take (unreachable, 5xx,
# 429) is tried again, up to this many times in all, so a restart of the API server loses none.
SEND_TRIES = 12
RETRY_FIRST_S, RETRY_MAX_S = 0.5, 10.0
# A PodScheduled patch refused for a changed pod is tried at the pod's current version this
# many times in all (each refusal means another write to the pod came first).
CONFLICT_TRIES = 3


def micro_time(ts: float | None = None) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    moment = datetime.now(UTC) if ts is None else datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_body(
    pod: PodInfo,
    reason: str,
    note: str,
    kind: str,
    action: str,
    controller: str,
    instance: str,
) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            # 64 random bits as uuid4().hex[:16] gave, without its os.urandom call per event
            "name": f"{pod.name}.{random.getrandbits(64):016x}",
            "namespace": pod.namespace,
        },
        "eventTime": micro_time(),
        "reportingController": controller,
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "note": note[:1024],
        "type": kind,
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
        },
    }


def pod_scheduled_false(reason: str, message: str, resource_version: str = "") -> dict[str, Any]:
    """A strategic-merge patch of pods/status: condition PodScheduled=False, as kube-scheduler
    writes it for pods it cannot place (kubectl describe and cluster-autoscaler read it). With
    `resource_version`, the API server applies it only to that version of the pod."""
    patch: dict[str, Any] = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ]
        }
    }
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return patch


@dataclass(frozen=True)
class _Write:
    method: str
    path: str
    body: dict[str, Any]
    what: str  # for log lines
    patch_of: tuple[str, str, str] | None = None  # (pod, namespace, uid) of a pods/status patch
    queued: float = field(default_factory=time.monotonic)


class EventRecorder:
    """Events and PodScheduled conditions, written by worker threads off the scheduling path."""

    def __init__(
        self, api: client.ApiClient, instance: str, workers: int = 2, capacity: int = 10_000
    ) -> None:
        self._api = api
        self.instance = instance
        self._queue: queue.Queue[_Write | None] = queue.Queue(maxsize=capacity)
        self.posted = 0
        self.dropped = 0
        self.errors = 0
        self.conditions = 0  # PodScheduled=False patches accepted
        self.superseded = 0  # PodScheduled=False patches left out: the pod was bound meanwhile
        # uid -> the condition last queued: a pod retried with the same outcome is not patched
        # again (the API write would change nothing but lastTransitionTime).
        self._marked: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._marked_lock = threading.Lock()
        # uid -> when the pod was scheduled (monotonic), for the patches queued before that
        self._scheduled_at: OrderedDict[str, float] = OrderedDict()
        self._busy: Callable[[], bool] | None = None
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._run, name=f"events-{i}", daemon=True)
            for i in range(workers)
        ]
        self._life = Lifecycle("event-recorder")

    def start(self) -> None:
        self._life.start(self._start)

    def _start(self) -> None:
        for thread in self._threads:
            thread.start()

    def defer_to(self, busy: Callable[[], bool]) -> None:
        """Write only while `busy()` is false (no pod waits to be scheduled or bound), or once
        a write has waited MAX_HOLD_S. Each write costs the API server about what a binding
        costs; during a backlog, bindings go first and the events follow."""
        self._busy = busy

    def stop(self, timeout: float = 5.0) -> None:
        """Post what is queued for up to `timeout` seconds, then leave the rest."""
        self._stopping = True
        deadline = time.monotonic() + timeout
        self._life.stop(lambda: self._halt(deadline), timeout)

    def _halt(self, deadline: float) -> None:
        for _ in self._threads:
            try:
                self._queue.put(None, timeout=max(0.0, deadline - time.monotonic()))
            except queue.Full:
                break
        for thread in self._threads:
            join(thread, max(0.0, deadline - time.monotonic()))

    def scheduled(self, pod: PodInfo, node: str, score: int | None = None) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        if score is not None:  # the winning total, so a reader of events sees why this node
            note += f" (score {score})"
        with self._marked_lock:
            self._marked.pop(pod.uid, None)
            self._scheduled_at[pod.uid] = time.monotonic()
            self._scheduled_at.move_to_end(pod.uid)
            while len(self._scheduled_at) > MARKED_CAPACITY:
                self._scheduled_at.popitem(last=False)
        self._put(pod, "Scheduled", note, NORMAL, "Binding")

    def failed(
        self, pod: PodInfo, message: str, reason: str = UNSCHEDULABLE, condition: bool = True
    ) -> None:
        """FailedScheduling, and the pod's PodScheduled=False condition with `reason`
        (Unschedulable: fits nowhere; SchedulerError: anything else). `condition` False: the
        condition is written elsewhere (a preemptor's goes with its nomination, one patch as
        upstream's), so only the event is, and the condition counts as written."""
        self._put(pod, "FailedScheduling", message, WARNING, "Scheduling")
        with self._marked_lock:
            if self._marked.get(pod.uid) == (reason, message):
                return
            self._marked[pod.uid] = (reason, message)
            self._marked.move_to_end(pod.uid)
            while len(self._marked) > MARKED_CAPACITY:
                self._marked.popitem(last=False)
        if not condition:
            return
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        version = (pod.raw.get("metadata") or {}).get("resourceVersion", "")
        body = pod_scheduled_false(reason, message, version)
        target = (pod.name, pod.namespace, pod.uid)
        self._offer(_Write("PATCH", path, body, f"condition {pod.key}", target))

    def _put(self, pod: PodInfo, reason: str, note: str, kind: str, action: str) -> None:
        body = event_body(pod, reason, note, kind, action, pod.scheduler_name, self.instance)
        path = f"/apis/events.k8s.io/v1/namespaces/{pod.namespace}/events"
        self._offer(_Write("POST", path, body, f"event {reason}"))

    def _offer(self, write: _Write) -> None:
        try:
            self._queue.put_nowait(write)
        except queue.Full:
            self.dropped += 1

    def _send(self, write: _Write) -> kubeapi.Answer:
        if write.patch_of is None:
            return kubeapi.request(self._api, write.method, write.path, write.body, REQUEST_TIMEOUT)
        # A strategic merge, as the typed client sends a dict patch; raw like the rest, so the
        # recorder needs none of the client's generated API classes (their import is a third
        # of the scheduler's start-up CPU).
        name, namespace, uid = write.patch_of
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        body = write.body
        for _ in range(CONFLICT_TRIES):
            answer = kubeapi.request(
                self._api,
                "PATCH",
                f"{path}/status",
                body,
                REQUEST_TIMEOUT,
                content_type="application/strategic-merge-patch+json",
            )
            if answer.status != 409:
                return answer
            # The pod changed since the scheduler saw it: still pending, patch what it is now.
            current = kubeapi.request(self._api, "GET", path, None, REQUEST_TIMEOUT)
            if not current.ok:
                return current
            pod = json.loads(current.body)
            meta = pod.get("metadata") or {}
            if meta.get("uid") != uid or (pod.get("spec") or {}).get("nodeName"):
                return answer  # bound (or recreated): the condition is not ours to write
            body = {**body, "metadata": {"resourceVersion": meta.get("resourceVersion", "")}}
        return answer

    def _superseded(self, write: _Write) -> bool:
        """A PodScheduled=False patch queued before its pod was scheduled."""
        if write.patch_of is None:
            return False
        with self._marked_lock:
            scheduled = self._scheduled_at.get(write.patch_of[2])
        return scheduled is not None and scheduled >= write.queued

    def _run(self) -> None:
        while True:
            write = self._queue.get()
            if write is None:
                return
            self._hold(write)
            if self._superseded(write):
                self.superseded += 1
                continue
            try:
                answer = self._deliver(write)
            except Exception as exc:  # noqa: BLE001 - transport errors; best effort
                self.errors += 1
                log.debug("%s not written: %s", write.what, exc)
                continue
            if answer.ok:
                if write.method == "PATCH":
                    self.conditions += 1
                else:
                    self.posted += 1
            elif answer.status == 409:  # bound since the scheduler saw it
                self.superseded += 1
            elif answer.status != 404:  # a pod deleted meanwhile needs no condition
                self.errors += 1
                log.debug("%s refused: %s", write.what, answer.message())

    def _deliver(self, write: _Write) -> kubeapi.Answer:
        """`_send`, tried again with backoff while the API server is down or overloaded; the
        last failure is raised or returned once SEND_TRIES are spent or the recorder stops."""
        attempt, delay = 1, RETRY_FIRST_S
        while True:
            last_try = attempt >= SEND_TRIES or self._stopping
            try:
                answer = self._send(write)
            except Exception:  # noqa: BLE001 - transport errors: the caller counts the last
                if last_try:
                    raise
            else:
                if last_try or (answer.status < 500 and answer.status != 429):
                    return answer
            time.sleep(delay * random.uniform(0.8, 1.2))
            attempt, delay = attempt + 1, min(delay * 2, RETRY_MAX_S)

    def _hold(self, write: _Write) -> None:
        busy = self._busy
        if busy is None:
            return
        deadline = write.queued + MAX_HOLD_S
        # Short sleeps: a stop must not sit behind a busy scheduler.
        while not self._stopping and busy():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, HOLD_POLL_S))
