"""Asynchronous binding through the `pods/binding` subresource, on a thread pool.

The cycle assumes a pod on its node and hands it here; the cycle moves on at once. The pod's
profile's PreBind plugins run first, on the same thread: API writes that must precede the
binding, such as VolumeBinding's selected node on a WaitForFirstConsumer claim. The outcome
goes to a callback: `bound` (the API accepted it), `already_bound` (409: someone bound it first,
the watch will show where), `gone` (404: the pod was deleted) or `failed` (a PreBind plugin
objected, or anything else: the caller forgets the assumption and requeues the pod).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from kubernetes import client

from scheduler.framework import PodInfo
from scheduler.kube import kubeapi

log = logging.getLogger(__name__)

BOUND, ALREADY_BOUND, GONE, FAILED = "bound", "already_bound", "gone", "failed"
TIMEOUT = (5.0, 15.0)

Outcome = Callable[[PodInfo, str, str, str], None]  # pod, node, result, detail

# Upstream's PreBind: API writes the pod's profile needs before the pod is bound to `node`
# (VolumeBinding writes the selected node on WaitForFirstConsumer claims); run on the binder
# thread, "" to go on, or why the binding must not happen, which fails it like a rejected
# Binding (the cycle forgets the assumption and requeues the pod).
PreBind = Callable[[client.ApiClient, PodInfo, str], str]


def _no_pre_bind(api: client.ApiClient, pod: PodInfo, node: str) -> str:
    return ""


def binding_body(pod: PodInfo, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        # The uid makes the API refuse a recreated pod of the same name.
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


class Binder:
    def __init__(
        self,
        api: client.ApiClient,
        parallelism: int,
        outcome: Outcome,
        pre_bind: PreBind = _no_pre_bind,
    ) -> None:
        self._api = api
        self._pre_bind = pre_bind
        self._outcome = outcome
        self._pool = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="bind")
        self._inflight: set[Future[None]] = set()
        self._lock = threading.Lock()
        # Set while no binding is queued or running: the event writers wait for it.
        self.idle = threading.Event()
        self.idle.set()
        self._stopped = False

    def bind(self, pod: PodInfo, node: str) -> None:
        with self._lock:
            if self._stopped:
                # A cycle that outlived the stop's grace: abandoned like the binds still queued
                # at the stop; the pod stays Pending for whoever leads next.
                return
            self.idle.clear()
            future = self._pool.submit(self._bind, pod, node)
            self._inflight.add(future)
        future.add_done_callback(self._finished)

    def _finished(self, future: Future[None]) -> None:
        with self._lock:
            self._inflight.discard(future)
            if not self._inflight:
                self.idle.set()

    def stop(self, timeout: float | None = None) -> int:
        """Let queued and running binds finish for up to `timeout` seconds; returns how many
        were abandoned (their pods stay Pending for the next leader). A second stop returns 0."""
        with self._lock:
            if self._stopped:
                return 0
            self._stopped = True
            inflight = list(self._inflight)
        self._pool.shutdown(wait=False)
        _, left = wait(inflight, timeout=timeout)
        for future in left:
            future.cancel()
        return len(left)

    def _bind(self, pod: PodInfo, node: str) -> None:
        result, detail = BOUND, ""
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        try:
            detail = self._pre_bind(self._api, pod, node)
            if detail:
                result = FAILED
            else:
                answer = kubeapi.request(self._api, "POST", path, binding_body(pod, node), TIMEOUT)
                if not answer.ok:
                    detail = answer.message()
                    result = {409: ALREADY_BOUND, 404: GONE}.get(answer.status, FAILED)
        except Exception as exc:  # noqa: BLE001 - transport errors: requeue and retry
            result, detail = FAILED, f"{type(exc).__name__}: {exc}"
        try:
            self._outcome(pod, node, result, detail)
        except Exception:  # noqa: BLE001 - a broken callback must not kill the pool thread
            log.exception("binding outcome handler failed for %s", pod.key)
