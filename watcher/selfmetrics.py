"""The watcher's own Prometheus metrics (/metrics): what this replica did, nothing shared.

Every replica polls only while it holds the lock, so its counters say what its own poller did
and `sum(rate(ballast_watcher_polls_total[5m]))` over all replicas counts each poll once. The
cluster-wide poll status (the active poller's last poll, its counters) is in /api/v1/status and
/readyz. Gauges read from the shared snapshot (`ballast_watcher_nodes`) are the same on every
replica: aggregate them with max(), not sum().

With Redis the poller runs in one of gunicorn's workers (the one holding the replica's poller
seat, watcher/seat.py) and the API in all of them: the polling worker writes its poller's
figures to a small file (`PollerFile`) that every worker reads at scrape time. When the seat
moves to another worker, the counters start again from 0, as after a restart.
Request latency is recorded per process (multiprocess mode under several gunicorn workers).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from watcher.views import SnapshotReader

log = logging.getLogger(__name__)

REQUEST_SECONDS = Histogram(
    "ballast_watcher_request_duration_seconds",
    "Time to answer an API request",
    ["endpoint"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
EXPORT_INTERVAL = 1.0  # how often the polling worker refreshes the file; scrapes are rarer


def poller_figures(poller: Any) -> dict[str, Any]:
    """What one poller did so far, as plain JSON-able data; `pods`, its pod poller's."""
    pods = getattr(poller, "pods", None)
    return {
        **poller.counters(),
        "leading": bool(poller.leading),
        "tickedAt": getattr(poller, "ticked_at", None),  # /healthz: a wedged poller's tell
        "lastDuration": poller.last_poll.get("duration") or 0.0,
        "lastPartial": bool(poller.last_poll.get("partial")),
        "pods": pods.counters() if pods is not None else {},
    }


class PollerFile:
    """The poller's figures, handed to every worker through a file they all can read."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, figures: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(figures))
        os.replace(tmp, self.path)  # readers see the old file or the new one, never half

    def read(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None  # before the poller's first write

    def export(self, poller: Any, stop: threading.Event) -> threading.Thread:
        """Refresh the file from `poller` every EXPORT_INTERVAL until `stop` is set."""

        def loop() -> None:
            while True:
                try:
                    self.write(poller_figures(poller))
                except OSError as exc:
                    log.warning("cannot write the poller's figures to %s: %s", self.path, exc)
                if stop.wait(EXPORT_INTERVAL):
                    return

        thread = threading.Thread(target=loop, name="poller-figures", daemon=True)
        thread.start()
        return thread


class ReplicaCollector:
    """This replica's poller (from `figures`) and its view of the store and the snapshot."""

    def __init__(
        self, reader: SnapshotReader, figures: Callable[[], dict[str, Any] | None]
    ) -> None:
        self.reader = reader
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "ballast_watcher_store_up", "1 when the window store answers this replica"
        )
        up.add_metric([], 0.0 if self.reader.store_error else 1.0)
        yield up
        yield from self._poller(self.figures() or {})
        view = self.reader.get()
        if view is not None:
            nodes = GaugeMetricFamily(
                "ballast_watcher_nodes",
                "Nodes by staleness state in the shared snapshot (same on every replica)",
                labels=["state"],
            )
            for st, count in view.states(time.time()).items():
                nodes.add_metric([st], count)
            yield nodes

    def _poller(self, fig: dict[str, Any]) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "ballast_watcher_leader",
            "1 when this replica's poller holds the lock and polls",
            value=1.0 if fig.get("leading") else 0.0,
        )
        yield GaugeMetricFamily(
            "ballast_watcher_poll_duration_seconds",
            "Duration of this replica's last poll (0 before its first)",
            value=fig.get("lastDuration", 0.0),
        )
        yield CounterMetricFamily(
            "ballast_watcher_polls", "Polls by this replica", value=fig.get("polls", 0)
        )
        yield CounterMetricFamily(
            "ballast_watcher_poll_seconds",
            "Time this replica spent polling",
            value=fig.get("pollSeconds", 0.0),
        )
        yield CounterMetricFamily(
            "ballast_watcher_store_errors",
            "Failed store operations of this replica's poller",
            value=fig.get("storeErrors", 0),
        )
        yield from _by_reason(fig, "ballast_watcher", "provider queries", "samples")
        yield GaugeMetricFamily(
            "ballast_watcher_poll_partial",
            "1 when the store answered this replica's last poll partially (data missing)",
            value=1.0 if fig.get("lastPartial") else 0.0,
        )
        partial = CounterMetricFamily(
            "ballast_watcher_partial_answers",
            "Query answers the store said were partial, by metric, this replica",
            labels=["metric"],
        )
        for key, count in sorted(fig.get("partialAnswers", {}).items()):
            partial.add_metric([key], count)
        yield partial
        pods = fig.get("pods") or {}
        for name, key, text in (
            ("pod_polls", "polls", "Pod usage polls by this replica (workload profiles)"),
            ("pod_poll_seconds", "pollSeconds", "Time this replica spent polling pod usage"),
            ("pods_seen", "podsSeen", "Pods with a usage sample, summed over this replica's polls"),
        ):
            yield CounterMetricFamily(f"ballast_watcher_{name}", text, value=pods.get(key, 0))
        yield GaugeMetricFamily(
            "ballast_watcher_pods",
            "Pods with a usage sample in this replica's last pod poll",
            value=pods.get("pods", 0),
        )
        yield from _by_reason(pods, "ballast_watcher_pod", "pod usage queries", "pod samples")


def _by_reason(fig: dict[str, Any], prefix: str, queries: str, samples: str) -> Iterator[Metric]:
    """`<prefix>_poll_errors` and `<prefix>_rejected_samples`, counters by reason."""
    for name, key, text in (
        (f"{prefix}_poll_errors", "pollErrors", f"Failed {queries} by reason"),
        (f"{prefix}_rejected_samples", "rejected", f"Rejected {samples} by reason"),
    ):
        family = CounterMetricFamily(name, f"{text}, this replica", labels=["reason"])
        for reason, count in sorted(fig.get(key, {}).items()):
            family.add_metric([reason], count)
        yield family


def render(collector: ReplicaCollector) -> bytes:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REQUEST_SECONDS)
    registry.register(collector)
    return generate_latest(registry)
