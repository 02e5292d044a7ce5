"""The last scheduling decisions, in bounded memory, for `ballast explain` and its HTTP API.

A ring of the last `pods` pods (by namespace/name; the oldest pod is forgotten first), each with
its last `attempts` attempts. An attempt is kept as its summary (the fields the list endpoint
filters on) and its detail as compact JSON bytes: a record is written once by the scheduling
loop and read rarely, so bytes cost the least memory and the reader pays the parsing. Entries
are tuples of strings, numbers and bytes, which Python's cyclic collector stops tracking: ten
thousand records add nothing to its passes over the scheduler's heap.

Writers: the scheduling loop (`add`) and the binder's threads (`outcome`, when the API answered
the binding); readers: HTTP threads. One lock guards the ring; every call holds it briefly.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, NamedTuple

import orjson

from scheduler.backend.explanation import expand

# Outcomes of an attempt, as the list endpoint filters them.
BINDING = "binding"  # a node was chosen, the binding is on its way
BOUND = "bound"
BIND_FAILED = "bind-failed"
UNSCHEDULABLE = "unschedulable"
PREEMPTING = "preempting"  # fits nowhere; victims are evicted on the nominated node
ERROR = "error"
EXTENDER = "extender"  # Ballast answered kube-scheduler's filter or prioritize call
OUTCOMES = (BINDING, BOUND, BIND_FAILED, UNSCHEDULABLE, PREEMPTING, ERROR, EXTENDER)

DEFAULT_PODS = 10_000
DEFAULT_ATTEMPTS = 4
DEFAULT_TOP = 5


class Attempt(NamedTuple):
    uid: str
    number: int  # 1 for the pod's first attempt seen by this replica
    time: float  # Unix seconds
    profile: str
    outcome: str
    node: str  # chosen node, or the nominated one when preempting; "" otherwise
    detail: bytes  # the rest of the record, compact JSON (explanation.py)
    outcome_detail: str = ""  # why a binding failed

    def summary(self, key: str) -> dict[str, Any]:
        namespace, _, name = key.partition("/")
        return {
            "namespace": namespace,
            "pod": name,
            "uid": self.uid,
            "attempt": self.number,
            "time": self.time,
            "profile": self.profile,
            "outcome": self.outcome,
            "node": self.node,
        }

    def document(self, key: str) -> dict[str, Any]:
        doc = self.summary(key)
        if self.outcome_detail:
            doc["outcomeDetail"] = self.outcome_detail
        doc.update(expand(orjson.loads(self.detail)))
        return doc


# per pod: (attempts recorded, also those let go; the kept attempts, oldest first)
_Pod = tuple[int, tuple[Attempt, ...]]


class DecisionStore:
    def __init__(
        self, pods: int = DEFAULT_PODS, attempts: int = DEFAULT_ATTEMPTS, top: int = DEFAULT_TOP
    ) -> None:
        if pods < 1 or attempts < 1 or top < 1:
            raise ValueError("decision store: pods, attempts and top must be at least 1")
        self.max_pods = pods
        self.max_attempts = attempts
        self.top = top  # nodes with a full score breakdown per attempt
        self._pods: OrderedDict[str, _Pod] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pods)

    def add(
        self,
        key: str,
        uid: str,
        now: float,
        profile: str,
        outcome: str,
        node: str,
        detail: dict[str, Any],
    ) -> int:
        """Record an attempt of the pod `key` (namespace/name); returns its number."""
        # orjson's bytes keep its 4 KiB working buffer; a copy is the record's own size
        blob = bytes(memoryview(orjson.dumps(detail, option=orjson.OPT_SERIALIZE_NUMPY)))
        with self._lock:
            seen, kept = self._pods.get(key, (0, ()))
            attempt = Attempt(uid, seen + 1, now, profile, outcome, node, blob)
            older = (
                kept[max(0, len(kept) - self.max_attempts + 1) :] if self.max_attempts > 1 else ()
            )
            self._pods[key] = (seen + 1, (*older, attempt))
            if seen:
                self._pods.move_to_end(key)
            elif len(self._pods) > self.max_pods:
                self._pods.popitem(last=False)
            return seen + 1

    def outcome(self, key: str, uid: str, outcome: str, detail: str = "") -> None:
        """The binding's answer for the pod's latest attempt (same uid: not a recreated pod)."""
        with self._lock:
            entry = self._pods.get(key)
            if entry is None:
                return
            seen, kept = entry
            last = kept[-1]
            if last.uid == uid and last.outcome == BINDING:
                last = last._replace(outcome=outcome, outcome_detail=detail)
                self._pods[key] = (seen, (*kept[:-1], last))

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod's attempts, newest first; None for a pod not recorded."""
        key = f"{namespace}/{name}"
        with self._lock:
            entry = self._pods.get(key)
        if entry is None:
            return None
        attempts = entry[1]
        docs = [a.document(key) for a in reversed(attempts)]
        return {"namespace": namespace, "pod": name, "attempts": docs}

    def recent(
        self,
        limit: int,
        profile: str = "",
        node: str = "",
        outcome: str = "",
        namespace: str = "",
    ) -> list[dict[str, Any]]:
        """The newest attempts (each pod's latest) matching every filter given, newest first."""
        with self._lock:
            latest = [(key, entry[1][-1]) for key, entry in self._pods.items()]
        found: list[dict[str, Any]] = []
        for key, attempt in reversed(latest):
            if profile and attempt.profile != profile:
                continue
            if node and attempt.node != node:
                continue
            if outcome and attempt.outcome != outcome:
                continue
            if namespace and not key.startswith(namespace + "/"):
                continue
            found.append(attempt.summary(key))
            if len(found) >= limit:
                break
        return found
