"""Preemption's API side: the writes that evict a preemptor's victims.

DefaultPreemption (scheduler/plugins/default_preemption.py) only chooses; this module acts, as
upstream's asynchronous preemption does (SchedulerAsyncPreemption, on by default in v1.34):

- the preemptor gets `status.nominatedNodeName` and its PodScheduled=False condition in one
  patch, as upstream's handleSchedulingFailure writes them; lower-priority pods nominated to the
  same node lose theirs (they would not fit there any more);
- each victim gets the `DisruptionTarget` condition (reason `PreemptionByScheduler`) by a
  pods/status patch, then is deleted (with its uid as a precondition, so a recreated pod of the
  same name is never hit), then a `Preempted` event names the preemptor; the victims side by
  side, as upstream's goroutines, each its three writes in this order;
- a write that fails is retried with exponential backoff; one that still fails gives up the
  preemption: the preemptor goes back to the queue and the next cycle decides again. Nothing in
  the cache is changed by hand: victims leave it when the watch reports their deletion, so a
  failed delete leaves the cache exactly as the API is.

The nominations it leaves behind are kept in scheduler/backend/nominations.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from scheduler.framework import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER, PodInfo
from scheduler.kube import kubeapi
from scheduler.kube.events import NORMAL, UNSCHEDULABLE, event_body, pod_scheduled_false

log = logging.getLogger(__name__)

TIMEOUT = (5.0, 10.0)
ATTEMPTS = 5  # per write
INITIAL_BACKOFF_S = 0.2
MAX_BACKOFF_S = 5.0
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"

# preemptor, node, whether every victim is gone or going
Finished = Callable[[PodInfo, str, bool], None]


def disruption_patch(scheduler_name: str) -> dict[str, Any]:
    """A strategic-merge patch of pods/status adding upstream's DisruptionTarget condition."""
    return {
        "status": {
            "conditions": [
                {
                    "type": DISRUPTION_TARGET,
                    "status": "True",
                    "reason": PREEMPTION_BY_SCHEDULER,
                    "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            ]
        }
    }


def preempted_event(
    victim: PodInfo, preemptor: PodInfo, node: str, instance: str
) -> dict[str, Any]:
    """Upstream's event on the victim: reason Preempted, action Preempting, the preemptor as
    the related object."""
    body = event_body(
        victim,
        "Preempted",
        f"Preempted by pod {preemptor.uid} on node {node}",
        NORMAL,
        "Preempting",
        preemptor.scheduler_name,
        instance,
    )
    body["related"] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": preemptor.name,
        "namespace": preemptor.namespace,
        "uid": preemptor.uid,
    }
    return body


@dataclass
class _Stats:
    preemptions: int = 0
    victims: int = 0
    failures: int = 0
    retries: int = 0


class Evictor:
    """Carries out preemptions on worker threads, off the scheduling cycle."""

    def __init__(
        self,
        api: client.ApiClient,
        instance: str,
        finished: Finished,
        workers: int = 4,
        victim_workers: int = 8,
        attempts: int = ATTEMPTS,
        initial_backoff: float = INITIAL_BACKOFF_S,
        max_backoff: float = MAX_BACKOFF_S,
    ) -> None:
        self._api = api
        self.instance = instance
        self._finished = finished
        self._attempts = attempts
        self._initial = initial_backoff
        self._max = max_backoff
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="preempt")
        # A preemption's victims are evicted side by side, as upstream's goroutines do: its
        # latency is one victim's three writes, not all of theirs in a row.
        self._victim_pool = ThreadPoolExecutor(
            max_workers=victim_workers, thread_name_prefix="preempt-victim"
        )
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._stopping = threading.Event()
        self.stats = _Stats()

    def running(self, uid: str) -> bool:
        """Whether a preemption for this preemptor is still being carried out (upstream's
        PreEnqueue keeps such a pod out of the active queue)."""
        with self._lock:
            return uid in self._running

    def preempt(
        self,
        preemptor: PodInfo,
        node: str,
        victims: tuple[PodInfo, ...],
        unnominate: list[PodInfo],
        message: str = "",
    ) -> None:
        """Nominate `preemptor` to `node` (with `message`, its PodScheduled=False condition in
        the same patch), clear the nominations of `unnominate`, evict `victims`."""
        with self._lock:
            self._running.add(preemptor.uid)
        if not self._submit(self._run, preemptor, node, victims, unnominate, message):
            with self._lock:
                self._running.discard(preemptor.uid)

    def unnominate(self, pod: PodInfo) -> None:
        """Clear the pod's status.nominatedNodeName: preemption found no room for it."""
        self._submit(self._nominate, pod, None)

    def _submit(self, *call: Any) -> bool:
        """Hand `call` to a worker; False once stopped (a cycle that outlived the stop's
        grace: the preemption is left to whoever leads next)."""
        try:
            self._pool.submit(*call)
        except RuntimeError:  # the pool is shut down
            return False
        return True

    def stop(self) -> None:
        self._stopping.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._victim_pool.shutdown(wait=False, cancel_futures=True)

    # --- on a worker thread ---------------------------------------------------------------
    def _run(
        self,
        preemptor: PodInfo,
        node: str,
        victims: tuple[PodInfo, ...],
        unnominate: list[PodInfo],
        message: str,
    ) -> None:
        ok = False
        try:
            self.stats.preemptions += 1
            self._nominate(preemptor, node, message)
            for other in unnominate:
                self._nominate(other, None)
            evictions = [
                self._victim_pool.submit(self._evict, victim, preemptor, node) for victim in victims
            ]
            ok = all([eviction.result() for eviction in evictions])  # each one waited for
        except Exception:  # noqa: BLE001 - a worker must survive anything; the pod is retried
            log.exception("preemption for %s failed", preemptor.key)
        finally:
            with self._lock:
                self._running.discard(preemptor.uid)
            if not ok:
                self.stats.failures += 1
            try:
                self._finished(preemptor, node, ok)
            except Exception:  # noqa: BLE001
                log.exception("preemption outcome handler failed for %s", preemptor.key)

    def _nominate(self, pod: PodInfo, node: str | None, message: str = "") -> None:
        """status.nominatedNodeName, and with `message` the PodScheduled=False condition too,
        in one patch as upstream's handleSchedulingFailure writes them (a write and a watch
        event less per preemption)."""
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        if message:
            body = pod_scheduled_false(UNSCHEDULABLE, message)
            body["status"]["nominatedNodeName"] = node
            kind = STRATEGIC_PATCH  # the condition merges into the list by its type
        else:
            body, kind = {"status": {"nominatedNodeName": node}}, MERGE_PATCH
        # Best effort, as upstream: the nomination in memory is what later cycles use.
        self._write("PATCH", path, body, f"nominatedNodeName of {pod.key}", kind)

    def _evict(self, victim: PodInfo, preemptor: PodInfo, node: str) -> bool:
        base = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}"
        patched = self._write(
            "PATCH",
            base + "/status",
            disruption_patch(preemptor.scheduler_name),
            f"DisruptionTarget on {victim.key}",
            STRATEGIC_PATCH,
        )
        if patched is None:
            return False
        if patched == 404:
            return True  # gone already
        delete = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": victim.uid}}
        deleted = self._write("DELETE", base, delete, f"delete {victim.key}")
        if deleted is None:
            return False
        if deleted in (404, 409):  # gone, or a new pod under the same name
            return True
        with self._lock:  # victims are evicted on several threads at once
            self.stats.victims += 1
        log.info("preempted %s on %s for %s", victim.key, node, preemptor.key)
        path = f"/apis/events.k8s.io/v1/namespaces/{victim.namespace}/events"
        self._write("POST", path, preempted_event(victim, preemptor, node, self.instance), "event")
        return True

    def _write(
        self, method: str, path: str, body: dict[str, Any], what: str, content_type: str = ""
    ) -> int | None:
        """The answer's status (2xx, 404 or 409) after retries; None when it kept failing."""
        delay = self._initial
        for attempt in range(1, self._attempts + 1):
            try:
                answer = kubeapi.request(self._api, method, path, body, TIMEOUT, content_type)
            except Exception as exc:  # noqa: BLE001 - transport errors: retry
                status, detail = 0, f"{type(exc).__name__}: {exc}"
            else:
                status = answer.status
                if 200 <= status < 300 or status in (404, 409):
                    return status  # the answer (the whole pod, on success) is not decoded
                detail = answer.message()
            if attempt == self._attempts or self._stopping.is_set():
                break
            with self._lock:
                self.stats.retries += 1
            log.warning("%s failed (%s); retry %d in %.1fs", what, detail, attempt, delay)
            self._stopping.wait(delay)
            delay = min(delay * 2, self._max)
        log.error("%s failed after %d attempts", what, self._attempts)
        return None
