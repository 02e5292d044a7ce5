"""Kubernetes Events for scheduling outcomes: `Scheduled` and `FailedScheduling`.

Written as events.k8s.io/v1 Events, as kube-scheduler writes them: `reportingController` is the
profile's scheduler name, `reportingInstance` this replica's identity. Posting happens on a
small worker pool behind a bounded queue, so a slow API server never slows scheduling; when the
queue is full the event is dropped and counted.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from scheduler import kubeapi
from scheduler.framework import PodInfo

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = (5.0, 10.0)
NORMAL, WARNING = "Normal", "Warning"


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
            "name": f"{pod.name}.{uuid.uuid4().hex[:16]}",
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


class EventRecorder:
    def __init__(
        self, api: client.ApiClient, instance: str, workers: int = 2, capacity: int = 10_000
    ) -> None:
        self._api = api
        self.instance = instance
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=capacity)
        self.posted = 0
        self.dropped = 0
        self.errors = 0
        self._threads = [
            threading.Thread(target=self._run, name=f"events-{i}", daemon=True)
            for i in range(workers)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Post what is queued for up to `timeout` seconds, then leave the rest."""
        deadline = time.monotonic() + timeout
        for _ in self._threads:
            try:
                self._queue.put(None, timeout=max(0.0, deadline - time.monotonic()))
            except queue.Full:
                break
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def scheduled(self, pod: PodInfo, node: str, score: int | None = None) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        if score is not None:  # the winning total, so a reader of events sees why this node
            note += f" (score {score})"
        self._put(pod, "Scheduled", note, NORMAL, "Binding")

    def failed(self, pod: PodInfo, message: str) -> None:
        self._put(pod, "FailedScheduling", message, WARNING, "Scheduling")

    def _put(self, pod: PodInfo, reason: str, note: str, kind: str, action: str) -> None:
        body = event_body(pod, reason, note, kind, action, pod.scheduler_name, self.instance)
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            path = f"/apis/events.k8s.io/v1/namespaces/{body['metadata']['namespace']}/events"
            try:
                answer = kubeapi.request(self._api, "POST", path, body, REQUEST_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - transport errors; events are best effort
                self.errors += 1
                log.debug("event %s not written: %s", body["reason"], exc)
                continue
            if answer.ok:
                self.posted += 1
            else:
                self.errors += 1
                log.debug("event %s refused: %s", body["reason"], answer.message())
