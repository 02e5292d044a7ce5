"""The scheduler's own HTTP endpoints: `/metrics` (Prometheus text), `/healthz`, and the
decision records (`/api/v1/decisions`, serve/decisions.py).

Every figure is this replica's own (what it scheduled, bound, fetched, holds in its cache), so
sums over replicas count each pod once; `_nodes` is the cluster as this replica's cache sees it,
the same on every replica (aggregate with max).

Counters the cycle updates directly live in `Telemetry`; numbers other parts already keep
(queue depth, watcher snapshot age, cache and client counters) are read at scrape time by a
collector, so the hot path never formats anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from scheduler.serve import httpserve
from scheduler.serve.decisions import DecisionsAPI
from scheduler.serve.httpserve import BackgroundServer

PREFIX = "ballast_scheduler"
# Results of one scheduling attempt, as kube-scheduler names them.
SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.attempts = Counter(
            f"{PREFIX}_schedule_attempts",
            "Scheduling attempts by result (scheduled, unschedulable, error) and profile.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.latency = Histogram(
            f"{PREFIX}_scheduling_attempt_duration_seconds",
            "Time of one scheduling cycle, from pop to hand-off to the binder.",
            ["result"],
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
            registry=self.registry,
        )
        self.e2e = Histogram(
            f"{PREFIX}_pod_scheduling_duration_seconds",
            "From the pod's creation to its binding.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
            registry=self.registry,
        )
        self.fallbacks = Counter(
            f"{PREFIX}_load_fallbacks",
            "Nodes scored from allocation instead of fresh watcher data, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.rejections = Counter(
            f"{PREFIX}_unschedulable_rejections",
            "Unschedulable attempts by filter plugin that rejected at least one node (counted "
            "while decisions are recorded, the default): LoadThreshold and GpuLoad are load.",
            ["plugin"],
            registry=self.registry,
        )
        self.binds = Counter(
            f"{PREFIX}_binding_results",
            "Binding calls by outcome (bound, already_bound, gone, failed).",
            ["result"],
            registry=self.registry,
        )

    def add_sources(self, **sources: Any) -> None:
        """Register the live objects read at scrape time (queue, metrics_client, cache, ...)."""
        self.registry.register(_Live(sources))


class _Live(Collector):
    def __init__(self, sources: dict[str, Any]) -> None:
        self._s = sources

    def collect(self) -> Iterator[Any]:
        elector = self._s.get("elector")
        leading = elector is None or elector.is_leader()
        queue = self._s.get("queue")
        if queue is not None:
            depth = GaugeMetricFamily(
                f"{PREFIX}_pending_pods",
                "Pods this replica waits to schedule, by room (0 on a standby).",
                labels=["queue"],
            )
            # A standby's queue mirrors the leader's pending pods; counting them on both
            # replicas would double sum(ballast_scheduler_pending_pods).
            for room, count in queue.depth().items():
                depth.add_metric([room], count if leading else 0)
            yield depth
        client = self._s.get("metrics_client")
        if client is not None:
            age = client.snapshot_age()
            yield GaugeMetricFamily(
                f"{PREFIX}_watcher_snapshot_received",
                "1 once the watcher has answered well at least once (then the age below exists).",
                value=age is not None,
            )
            if age is not None:  # no sample at all before the first answer, never a sentinel
                yield GaugeMetricFamily(
                    f"{PREFIX}_watcher_snapshot_age_seconds",
                    "Seconds since the last good answer from the watcher.",
                    value=age,
                )
            # One outcome per fetch, so sum() over results counts each fetch once.
            fetch = CounterMetricFamily(
                f"{PREFIX}_watcher_fetches",
                "Requests to the watcher by outcome (ok, error, malformed, unauthorized).",
                labels=["result"],
            )
            errors = client.failures - client.malformed - client.unauthorized
            fetch.add_metric(["ok"], client.fetches - client.failures)
            fetch.add_metric(["error"], errors)
            fetch.add_metric(["malformed"], client.malformed)
            fetch.add_metric(["unauthorized"], client.unauthorized)
            yield fetch
        cache = self._s.get("cache")
        if cache is not None:
            stats = cache.stats()
            yield GaugeMetricFamily(f"{PREFIX}_nodes", "Nodes in the cache.", value=stats["nodes"])
            yield GaugeMetricFamily(
                f"{PREFIX}_assumed_pods", "Pods assumed, binding.", value=stats["assumed_pods"]
            )
            yield CounterMetricFamily(
                f"{PREFIX}_watch_relists", "Full lists (start, 410 Gone).", value=stats["relists"]
            )
            yield GaugeMetricFamily(
                f"{PREFIX}_gated_pods",
                "Pending pods of ours held back by spec.schedulingGates.",
                value=stats["gated_pods"],
            )
            yield CounterMetricFamily(
                f"{PREFIX}_skipped_objects",
                "Malformed pods and nodes from the API, logged and left out of the cache.",
                value=stats["skipped_objects"],
            )
            yield CounterMetricFamily(
                f"{PREFIX}_preassigned_pods",
                "Pods of ours created with spec.nodeName set (not ours to bind).",
                value=stats["preassigned_pods"],
            )
        recent = self._s.get("recent")
        if recent is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}_recently_bound_pods",
                "Bound pods counted on top of the watcher's data.",
                value=len(recent),
            )
        if elector is not None:
            yield GaugeMetricFamily(f"{PREFIX}_leader", "1 when this replica leads.", value=leading)


class StatusServer(BackgroundServer):
    """`/metrics` and the health paths; `healthy()` decides /healthz; `decisions`, when given,
    serves the decision records."""

    def __init__(
        self,
        host: str,
        port: int,
        telemetry: Telemetry,
        healthy: Callable[[], tuple[bool, str]],
        decisions: DecisionsAPI | None = None,
    ) -> None:
        registry, check, api = telemetry.registry, healthy, decisions

        class Handler(httpserve.Handler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                path = self.path.split("?", 1)[0]
                if self.read_body(httpserve.STATUS_MAX_BODY) is None:
                    return
                if path == "/metrics":
                    self.send_body(200, generate_latest(registry), "text/plain; version=0.0.4")
                elif path in ("/healthz", "/readyz", "/livez"):
                    ok, why = check()
                    self.send_body(200 if ok else 503, (why + "\n").encode(), "text/plain")
                elif api is not None and api.handles(path):
                    code, doc, headers = api.answer(
                        self.path, self.headers.get("Authorization", "")
                    )
                    body = json.dumps(doc).encode()
                    self.send_response(code)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_body(404, b"not found\n", "text/plain")

        super().__init__(host, port, Handler)
