"""`/api/v1/decisions`: the scheduler's decision records over HTTP (docs/explain.md).

Served on the status port next to /metrics. With a token set, the decision paths need
`Authorization: Bearer TOKEN` (the watcher's API does the same); /metrics, the health paths and
/openapi.json stay open. Only the leader schedules, so only it has records: a standby answers 503
with the Lease holder's identity, the replica to ask instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, unquote

from scheduler.backend.decisions import OUTCOMES, DecisionStore
from scheduler.serve.httpserve import authorized

PREFIX = "/api/v1/decisions"
OPENAPI = "/openapi.json"
LIST_DEFAULT = 50
LIST_MAX = 500

Answer = tuple[int, Any, dict[str, str]]


class DecisionsAPI:
    def __init__(
        self,
        store: DecisionStore | None,
        leader: Callable[[], tuple[bool, str]],
        token: str | Callable[[], str] = "",
    ) -> None:
        """`leader()` says (this replica leads, the Lease holder's identity); `token` may be a
        callable, read on every request (a token file re-read when it changes)."""
        self.store = store
        self.leader = leader
        self._token = token if callable(token) else lambda: token

    @staticmethod
    def handles(path: str) -> bool:
        return path == OPENAPI or path == PREFIX or path.startswith(PREFIX + "/")

    def answer(self, target: str, authorization: str) -> Answer:
        """(status, JSON document, extra headers) for a GET of `target` (path and query)."""
        path, _, query = target.partition("?")
        token = self._token()
        if path == OPENAPI:
            return 200, document(bool(token)), {}
        if token and not authorized(token, authorization):
            challenge = {"WWW-Authenticate": 'Bearer realm="ballast-scheduler"'}
            return 401, {"error": "missing or wrong bearer token"}, challenge
        leading, holder = self.leader()
        if not leading:
            doc = {
                "error": "this replica is not the leader; only the leader schedules and records",
                "leader": holder or None,
            }
            return 503, doc, {"X-Ballast-Leader": holder} if holder else {}
        if self.store is None:
            return 503, {"error": "decision recording is off (--decisions 0)"}, {}
        if path.rstrip("/") == PREFIX:
            return self._list(parse_qs(query))
        rest = path[len(PREFIX) + 1 :].strip("/").split("/")
        if len(rest) != 2 or not all(rest):
            return 404, {"error": f"expected {PREFIX}/NAMESPACE/POD"}, {}
        namespace, name = unquote(rest[0]), unquote(rest[1])
        doc = self.store.get(namespace, name)
        if doc is None:
            return 404, {"error": f"no decision recorded for pod {namespace}/{name}"}, {}
        return 200, doc, {}

    def _list(self, query: dict[str, list[str]]) -> Answer:
        def arg(name: str) -> str:
            return (query.get(name) or [""])[-1]

        try:
            limit = int(arg("limit") or LIST_DEFAULT)
        except ValueError:
            return 400, {"error": "limit: expected an integer"}, {}
        if not 1 <= limit <= LIST_MAX:
            return 400, {"error": f"limit: 1..{LIST_MAX}"}, {}
        outcome = arg("outcome")
        if outcome and outcome not in OUTCOMES:
            return 400, {"error": f"outcome: one of {', '.join(OUTCOMES)}"}, {}
        assert self.store is not None
        items = self.store.recent(
            limit,
            profile=arg("profile"),
            node=arg("node"),
            outcome=outcome,
            namespace=arg("namespace"),
        )
        return 200, {"items": items, "limit": limit, "recordedPods": len(self.store)}, {}


def document(guarded: bool) -> dict[str, Any]:
    """The OpenAPI 3.0 description of the decision endpoints."""
    summary = {
        "type": "object",
        "properties": {
            "namespace": {"type": "string"},
            "pod": {"type": "string"},
            "uid": {"type": "string"},
            "attempt": {"type": "integer", "description": "1 for the first seen by this leader"},
            "time": {"type": "number", "description": "Unix seconds"},
            "profile": {"type": "string"},
            "outcome": {"type": "string", "enum": list(OUTCOMES)},
            "node": {"type": "string", "description": "chosen node, or nominated when preempting"},
        },
    }
    error = {
        "description": "error",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"error": {"type": "string"}, "leader": {"type": "string"}},
                }
            }
        },
    }
    common = {"401": error, "503": {**error, "description": "not the leader, or recording off"}}
    filters = [
        {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
        for name in ("profile", "node", "namespace")
    ]
    filters.append(
        {"name": "outcome", "in": "query", "schema": {"type": "string", "enum": list(OUTCOMES)}}
    )
    filters.append(
        {
            "name": "limit",
            "in": "query",
            "schema": {"type": "integer", "minimum": 1, "maximum": LIST_MAX, "default": 50},
        }
    )
    attempt = {
        "allOf": [summary],
        "description": "the summary plus the record: nodes (total, considered, feasible, "
        "scored, percentageOfNodesToScore, enoughFeasible), filters (rejectedNodes, byReason, "
        "byPlugin, preFilter), prediction (cpuM, source), scores (plugins, winner, top: node, "
        "total, plugins {raw, normalized, weighted}, load), message and preemption when "
        "unschedulable, outcomeDetail when the binding failed",
    }
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Ballast scheduler decisions", "version": "1"},
        "paths": {
            PREFIX: {
                "get": {
                    "summary": "The latest attempt of the most recently tried pods, newest first",
                    "parameters": filters,
                    "responses": {
                        "200": {
                            "description": "decisions",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "items": {"type": "array", "items": summary},
                                            "limit": {"type": "integer"},
                                            "recordedPods": {"type": "integer"},
                                        },
                                    }
                                }
                            },
                        },
                        "400": error,
                        **common,
                    },
                }
            },
            PREFIX + "/{namespace}/{pod}": {
                "get": {
                    "summary": "Every recorded attempt of one pod, newest first",
                    "parameters": [
                        {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                        for n in ("namespace", "pod")
                    ],
                    "responses": {
                        "200": {
                            "description": "the pod's attempts",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "namespace": {"type": "string"},
                                            "pod": {"type": "string"},
                                            "attempts": {"type": "array", "items": attempt},
                                        },
                                    }
                                }
                            },
                        },
                        "404": {**error, "description": "no decision recorded for this pod"},
                        **common,
                    },
                }
            },
        },
    }
    if guarded:
        doc["components"] = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
        doc["security"] = [{"bearer": []}]
    return doc
