"""The rebalancer's writes: policy/v1 Evictions, and Events on the evicted pod and the hot node.

An Eviction (`pods/eviction` create) lets the API server enforce PodDisruptionBudgets: a 429
whose Status names a `DisruptionBudget` cause means a budget is at its limit (or not yet
processed), and the pod stays (`pdb`); any other 429 is the API server's own throttling
(`throttled`, with its retryAfterSeconds), worth another try after a pause. A 403 or 422 is an
admission webhook's or policy's refusal (`refused`), a 5xx the server's failure (`failed`), and
a call with no answer in time or a broken connection (`no-answer`) may still have evicted the
pod: `pod_state` then tells whether its uid is gone or terminating. The
eviction carries the pod's uid as a precondition, so a pod recreated under the same name (a
StatefulSet's) is never hit by an eviction meant for its predecessor.

Each eviction is told twice: a `Rebalanced` Event on the pod and a `RebalancerEvicted` Event on
the node (in the default namespace, where node events live), both with the numbers. The node's
event also carries the end of its cooldown as an annotation, so a new leader reads back which
nodes are still resting (`resting_nodes`). Before the Eviction call a `RebalancerEvicting` Event
on the node carries the same annotation (`intend`): a leader that dies between the call and the
Events after it leaves the node's rest on record all the same, and its successor does not take
a second pod off it; when that record cannot be written, the eviction is not made.

A dry run sends the same Eviction with `dryRun=All`: the API server runs its admission (budgets,
webhooks, policies) and evicts nothing, so the dry run's answers are the live run's.
"""

from __future__ import annotations

import json
import logging
import random
import urllib.parse
from dataclasses import dataclass

from kubernetes import client

from scheduler.framework import PodInfo
from scheduler.kube import kubeapi
from scheduler.kube.events import NORMAL, event_body, micro_time

log = logging.getLogger(__name__)

CONTROLLER = "ballast-rebalancer"
POD_REASON = "Rebalanced"
NODE_REASON = "RebalancerEvicted"
INTENT_REASON = "RebalancerEvicting"
NODE_EVENTS_NAMESPACE = "default"
COOLDOWN_ANNOTATION = "ballast.dev/rebalancer-cooldown-until"
REQUEST_TIMEOUT = (5.0, 10.0)

EVICTED, PDB, THROTTLED, GONE, FAILED = "evicted", "pdb", "throttled", "gone", "failed"
REFUSED, NO_ANSWER = "refused", "no-answer"
# What pod_state finds after a call that got no answer.
POD_GONE, POD_TERMINATING, POD_THERE, POD_UNKNOWN = "gone", "terminating", "there", "unknown"
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"  # policy/v1's DisruptionBudgetCause


@dataclass(frozen=True)
class Outcome:
    result: str  # EVICTED, PDB, THROTTLED, GONE, REFUSED, NO_ANSWER or FAILED
    detail: str = ""
    retry_after: float = 0.0  # THROTTLED: the server's retryAfterSeconds, 0 when it named none
    maybe: bool = False  # NO_ANSWER: the pod's state unknown after it, it may have been evicted


def refusal(body: bytes) -> Outcome:
    """A 429's meaning, from its Status: a disruption budget's refusal or throttling."""
    try:
        status = json.loads(body)
        details = status.get("details") or {}
        causes = details.get("causes") or []
        message = str(status.get("message") or "")
    except (ValueError, AttributeError):
        return Outcome(THROTTLED, f"HTTP 429: {body[:200]!r}")
    # A StatusCause's type is its JSON "reason".
    budget = [
        c for c in causes if isinstance(c, dict) and c.get("reason") == DISRUPTION_BUDGET_CAUSE
    ]
    if budget:
        return Outcome(PDB, "; ".join(str(c.get("message") or message) for c in budget))
    try:
        retry_after = float(details.get("retryAfterSeconds") or 0)
    except (TypeError, ValueError):
        retry_after = 0.0
    return Outcome(THROTTLED, message or "HTTP 429", max(0.0, retry_after))


def answer_outcome(answer: kubeapi.Answer) -> Outcome:
    """An Eviction call's answer: evicted, a budget's or the server's 429, gone, an admission
    refusal (403 Forbidden, 422 Invalid: a webhook's or policy's, about the workload), or a
    failure (5xx and anything else)."""
    if answer.ok:
        return Outcome(EVICTED)
    if answer.status == 429:
        return refusal(answer.body)
    if answer.status in (404, 409):  # gone, or the uid precondition failed
        return Outcome(GONE, answer.message())
    if answer.status in (400, 403, 422):
        return Outcome(REFUSED, f"HTTP {answer.status}: {answer.message()}")
    return Outcome(FAILED, f"HTTP {answer.status}: {answer.message()}")


def eviction_body(pod: PodInfo) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
        "deleteOptions": {"preconditions": {"uid": pod.uid}},
    }


def node_event_body(
    node: str, note: str, instance: str, cooldown_until: float, reason: str = NODE_REASON
) -> dict[str, object]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": f"{node}.{random.getrandbits(64):016x}",
            "namespace": NODE_EVENTS_NAMESPACE,
            "annotations": {COOLDOWN_ANNOTATION: f"{cooldown_until:.3f}"},
        },
        "eventTime": micro_time(),
        "reportingController": CONTROLLER,
        "reportingInstance": instance,
        "action": "Evict",
        "reason": reason,
        "note": note[:1024],
        "type": NORMAL,
        "regarding": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


class Writer:
    def __init__(self, api: client.ApiClient, instance: str) -> None:
        self.api = api
        self.instance = instance

    def evict(
        self, pod: PodInfo, within: float = sum(REQUEST_TIMEOUT), dry_run: bool = False
    ) -> Outcome:
        """One Eviction call, given up after `within` seconds in all (the leader's time left);
        `dry_run`: admission only (`dryRun=All`), nothing evicted."""
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/eviction"
        if dry_run:
            path += "?dryRun=All"
        connect = min(REQUEST_TIMEOUT[0], within / 2)
        timeout = (connect, min(REQUEST_TIMEOUT[1], within - connect))
        try:
            answer = kubeapi.request(self.api, "POST", path, eviction_body(pod), timeout)
        except Exception as exc:  # noqa: BLE001 - the request may or may not have been served
            return Outcome(NO_ANSWER, f"{type(exc).__name__}: {exc}")
        return answer_outcome(answer)

    def pod_state(self, pod: PodInfo) -> str:
        """After an Eviction call with no answer: POD_GONE (deleted, or another pod under its
        name), POD_TERMINATING, POD_THERE, or POD_UNKNOWN when the server cannot tell. A list
        by name, not a get: the rebalancer's role may list pods and nothing more."""
        query = urllib.parse.urlencode({"fieldSelector": f"metadata.name={pod.name}"})
        path = f"/api/v1/namespaces/{pod.namespace}/pods?{query}"
        try:
            answer = kubeapi.request(self.api, "GET", path, None, REQUEST_TIMEOUT)
        except Exception:  # noqa: BLE001 - unknown: the caller keeps the cautious side
            return POD_UNKNOWN
        if not answer.ok:
            return POD_UNKNOWN
        try:
            items = json.loads(answer.body).get("items") or []
        except (ValueError, AttributeError):
            return POD_UNKNOWN
        metas = [item.get("metadata") or {} for item in items if isinstance(item, dict)]
        meta = next((m for m in metas if m.get("uid") == pod.uid), None)
        if meta is None:
            return POD_GONE
        return POD_TERMINATING if meta.get("deletionTimestamp") else POD_THERE

    def intend(self, pod: PodInfo, node: str, note: str, cooldown_until: float) -> str:
        """The node's rest on record before the Eviction call; "" when written, else why not
        (then the eviction is not made: a successor could not know the node rests)."""
        body = node_event_body(
            node, f"evicting {pod.key}: {note}", self.instance, cooldown_until, INTENT_REASON
        )
        path = f"/apis/events.k8s.io/v1/namespaces/{NODE_EVENTS_NAMESPACE}/events"
        try:
            answer = kubeapi.request(self.api, "POST", path, body, REQUEST_TIMEOUT)
        except Exception as exc:  # noqa: BLE001
            log.warning("rest of %s not recorded: %s", node, exc)
            return f"{type(exc).__name__}: {exc}"
        if answer.ok:
            return ""
        log.warning("rest of %s not recorded: %s", node, answer.message())
        return f"HTTP {answer.status}: {answer.message()}"

    def tell(self, pod: PodInfo, node: str, note: str, cooldown_until: float) -> None:
        """The two Events; a failure is logged, never retried (the eviction happened)."""
        writes = [
            (
                f"/apis/events.k8s.io/v1/namespaces/{pod.namespace}/events",
                event_body(pod, POD_REASON, note, NORMAL, "Evict", CONTROLLER, self.instance),
            ),
            (
                f"/apis/events.k8s.io/v1/namespaces/{NODE_EVENTS_NAMESPACE}/events",
                node_event_body(node, note, self.instance, cooldown_until),
            ),
        ]
        for path, body in writes:
            try:
                answer = kubeapi.request(self.api, "POST", path, body, REQUEST_TIMEOUT)
                if not answer.ok:
                    log.warning("event for %s not written: %s", pod.key, answer.message())
            except Exception as exc:  # noqa: BLE001
                log.warning("event for %s not written: %s", pod.key, exc)

    def resting_nodes(self) -> dict[str, float]:
        """node -> cooldown end, from the node Events any leader wrote."""
        until: dict[str, float] = {}
        for reason in (NODE_REASON, INTENT_REASON):
            self._read_rests(reason, until)
        return until

    def _read_rests(self, reason: str, until: dict[str, float]) -> None:
        query = urllib.parse.urlencode({"fieldSelector": f"reason={reason}"})
        path = f"/api/v1/namespaces/{NODE_EVENTS_NAMESPACE}/events?{query}"
        answer = kubeapi.request(self.api, "GET", path, None, REQUEST_TIMEOUT)
        if not answer.ok:
            raise RuntimeError(f"listing {reason} events: {answer.message()}")
        for item in json.loads(answer.body).get("items") or []:
            node = (item.get("involvedObject") or {}).get("name")
            stamp = ((item.get("metadata") or {}).get("annotations") or {}).get(COOLDOWN_ANNOTATION)
            try:
                end = float(stamp)
            except (TypeError, ValueError):
                continue
            if node:
                until[node] = max(until.get(node, 0.0), end)
