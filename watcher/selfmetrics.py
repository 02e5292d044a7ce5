"""The watcher's own Prometheus metrics (/metrics).

Request latency is recorded per process (multiprocess mode under several gunicorn workers).
Poll figures come from the shared snapshot, so every worker and replica reports the same ones.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from watcher.views import SnapshotReader

REQUEST_SECONDS = Histogram(
    "ballast_watcher_request_duration_seconds",
    "Time to answer an API request",
    ["endpoint"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)


class SnapshotCollector:
    def __init__(self, reader: SnapshotReader, holder: str, leader_of) -> None:  # noqa: ANN001
        self.reader = reader
        self.holder = holder
        self.leader_of = leader_of  # () -> current lock holder, or None

    def collect(self) -> Iterator[Metric]:
        view = self.reader.get()
        up = GaugeMetricFamily("ballast_watcher_store_up", "1 when the window store answers")
        up.add_metric([], 0.0 if self.reader.store_error else 1.0)
        yield up
        if view is None:
            return
        counters = view.doc.get("counters", {})
        last = view.last_poll
        yield GaugeMetricFamily(
            "ballast_watcher_poll_duration_seconds",
            "Duration of the last poll",
            value=last.get("duration") or 0.0,
        )
        yield GaugeMetricFamily(
            "ballast_watcher_last_poll_ok", "1 when the last poll had no errors",
            value=1.0 if last.get("ok") else 0.0,
        )  # fmt: skip
        yield CounterMetricFamily(
            "ballast_watcher_polls", "Polls by the active poller", value=counters.get("polls", 0)
        )
        yield CounterMetricFamily(
            "ballast_watcher_poll_seconds",
            "Total time spent polling",
            value=counters.get("pollSeconds", 0.0),
        )
        for name, key, text in (
            ("ballast_watcher_poll_errors", "pollErrors", "Failed provider queries by reason"),
            ("ballast_watcher_rejected_samples", "rejected", "Rejected samples by reason"),
        ):
            family = CounterMetricFamily(name, text, labels=["reason"])
            for reason, count in sorted(counters.get(key, {}).items()):
                family.add_metric([reason], count)
            yield family
        nodes = GaugeMetricFamily(
            "ballast_watcher_nodes", "Nodes by staleness state", labels=["state"]
        )
        for st, count in view.states(time.time()).items():
            nodes.add_metric([st], count)
        yield nodes
        try:
            leading = 1.0 if self.leader_of() in (None, self.holder) else 0.0
        except Exception:  # the store is down: nobody can tell
            leading = 0.0
        yield GaugeMetricFamily(
            "ballast_watcher_leader", "1 when this replica runs the active poller", value=leading
        )


def render(collector: SnapshotCollector) -> bytes:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REQUEST_SECONDS)
    registry.register(collector)
    return generate_latest(registry)
