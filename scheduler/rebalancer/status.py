"""What the rebalancer shows: Prometheus metrics, the decision log, and the HTTP endpoints.

- `/metrics`: hot nodes, evictions by reason, skipped by reason, dry-run would-evict, rounds.
- `/status`: JSON of the last round (leader or not, hot nodes with their streaks, resting nodes).
- `/decisions`: JSON of the latest decisions, newest last (`?limit=N`), and whether this replica
  leads (a standby decides nothing: the watcher asks again for the leader's).
- `/healthz`: 200 while the loop runs.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from scheduler.serve import httpserve
from scheduler.serve.httpserve import BackgroundServer

PREFIX = "ballast_rebalancer"
LOG_SIZE = 500

EVICT, WOULD_EVICT, SKIP = "evict", "would-evict", "skip"
REST_ENDED = "rest-ended"  # a node judged again before its rest's end: rest.py


class Telemetry:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.hot = Gauge(f"{PREFIX}_hot_nodes", "Nodes above a high threshold now.", registry=r)
        self.confirmed = Gauge(
            f"{PREFIX}_confirmed_hot_nodes",
            "Hot nodes with enough consecutive fresh observations to act on.",
            registry=r,
        )
        self.unknown = Gauge(
            f"{PREFIX}_unknown_nodes",
            "Nodes without fresh data for every configured resource (never acted on).",
            registry=r,
        )
        self.evictions = Counter(
            f"{PREFIX}_evictions",
            "Pods evicted, by the resource that made their node hot.",
            ["reason"],
            registry=r,
        )
        self.skipped = Counter(
            f"{PREFIX}_skipped",
            "Pods (or whole nodes) left in place, by reason.",
            ["reason"],
            registry=r,
        )
        self.would_evict = Counter(
            f"{PREFIX}_dry_run_would_evict",
            "Evictions a dry run (or the kill switch) held back.",
            registry=r,
        )
        self.rounds = Counter(
            f"{PREFIX}_rounds", "Rounds by role (leader, standby).", ["role"], registry=r
        )
        self.leader = Gauge(f"{PREFIX}_leader", "1 while this replica leads.", registry=r)


@dataclass
class Decision:
    time: float
    action: str  # evict, would-evict, skip, rest-ended
    node: str
    pod: str
    reason: str
    detail: str = ""
    target: str = ""


class DecisionLog:
    def __init__(self, size: int = LOG_SIZE) -> None:
        self._items: deque[Decision] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, decision: Decision) -> None:
        with self._lock:
            self._items.append(decision)

    def latest(self, limit: int = LOG_SIZE) -> list[dict[str, Any]]:
        with self._lock:
            items = list(self._items)[-limit:] if limit > 0 else []
        return [asdict(d) for d in items]


class StatusServer(BackgroundServer):
    def __init__(
        self,
        host: str,
        port: int,
        telemetry: Telemetry,
        log: DecisionLog,
        status: Callable[[], dict[str, Any]],
        healthy: Callable[[], tuple[bool, str]],
        token: Callable[[], str] = lambda: "",
    ) -> None:
        """`token()`, when not empty, is the bearer token /status and /decisions ask for (they
        name pods and nodes); /metrics and the health paths stay open."""

        class Handler(httpserve.Handler):
            log_prefix = "rebalancer http"

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                parts = urllib.parse.urlsplit(self.path)
                if self.read_body(httpserve.STATUS_MAX_BODY) is None:
                    return
                guarded = parts.path in ("/status", "/decisions")
                wanted = token() if guarded else ""
                if wanted and not httpserve.authorized(
                    wanted, self.headers.get("Authorization", "")
                ):
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Bearer realm="ballast-rebalancer"')
                    body = b'{"error": "missing or wrong bearer token"}'
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if parts.path == "/metrics":
                    body = generate_latest(telemetry.registry)
                    self.send_body(200, body, "text/plain; version=0.0.4")
                elif parts.path == "/status":
                    self.send_json(200, {"time": time.time(), **status()})
                elif parts.path == "/decisions":
                    query = urllib.parse.parse_qs(parts.query)
                    try:
                        limit = int((query.get("limit") or [LOG_SIZE])[0])
                    except ValueError:
                        self.send_json(400, {"error": "limit: expected an integer"})
                        return
                    leading = status().get("leading")
                    self.send_json(200, {"leading": leading, "decisions": log.latest(limit)})
                elif parts.path in ("/healthz", "/readyz", "/livez"):
                    ok, why = healthy()
                    self.send_body(200 if ok else 503, (why + "\n").encode(), "text/plain")
                else:
                    self.send_body(404, b"not found\n", "text/plain")

        super().__init__(host, port, Handler)
