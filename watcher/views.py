"""What the API answers, computed from a snapshot at the moment of the request.

The snapshot holds window statistics; age and staleness state depend on the request time, so
they are added here. Pure functions of (snapshot, now): the Flask layer only caches and serves.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import threading
import time
from typing import Any

from shared import wire
from watcher.errors import StoreError
from watcher.snapshot import STAT_FIELDS
from watcher.staleness import ORDER, state, worst
from watcher.store import Store

log = logging.getLogger(__name__)
BY_RANK = {rank: name for name, rank in ORDER.items()}
FIRST_LOOK = 0.1  # seconds between a worker's looks for the first snapshot

_AVG, _STD, _LATEST, _LAST, _HORIZON = (
    STAT_FIELDS.index(f) for f in ("avg", "std", "latest", "last", "horizon")
)
_COLUMNS = {wire.AVG: _AVG, wire.STD: _STD, wire.LATEST: _LATEST}


def duration_name(seconds: float) -> str:
    """300 -> "5m", 90 -> "90s": how load-watcher spells a window."""
    s = int(seconds)
    if s % 3600 == 0:
        return f"{s // 3600}h"
    if s % 60 == 0:
        return f"{s // 60}m"
    return f"{s}s"


class View:
    """A parsed snapshot with the request-time computations."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.version: str = doc["version"]
        self.nodes: dict[str, dict[str, list]] = doc["nodes"]
        self.metrics: dict[str, dict[str, str]] = doc["metrics"]
        self.window = float(doc["window"])
        self.expiry = float(doc["expiry"])
        self.duration = duration_name(self.window)
        self._fragments: dict[str, list[tuple[str, str, float, float]]] | None = None
        # Times at which some metric expires: the envelope only changes when one passes.
        self._expiries = sorted(
            row[_LAST] + self.expiry for metrics in self.nodes.values() for row in metrics.values()
        )

    @property
    def last_poll(self) -> dict[str, Any]:
        return self.doc["lastPoll"]

    @property
    def has_data(self) -> bool:
        return self.doc.get("lastSuccess") is not None

    def expired_count(self, now: float) -> int:
        return bisect.bisect_left(self._expiries, now)

    def live(self, now: float) -> bool:
        """Whether any node's metric is still inside its expiry: something valid to serve."""
        return self.expired_count(now) < len(self._expiries)

    # -- load-watcher envelope ----------------------------------------------------------------
    def envelope(
        self, now: float, host: str | None = None, operators: tuple[str, ...] | None = None
    ) -> dict[str, Any] | None:
        """The /watcher answer; None when `host` has no live data.

        By default it is what paypal/load-watcher answers for this source (shared/wire.py):
        from Prometheus each metric's AVG, then each metric's STD, no Latest, so that Trimaran
        reads here what it reads deployed. `operators` (the `?operators=` parameter) asks for
        others, Ballast's Latest among them, in the order given.
        """
        source = self.doc["source"]
        operators = operators or wire.upstream_operators(source)
        unnamed = source in wire.UNNAMED_SOURCES
        end = int(self.doc.get("lastSuccess") or self.doc["built"])
        names = [host] if host is not None else list(self.nodes)
        node_map: dict[str, dict[str, Any]] = {}
        rollup = "" if unnamed else self.duration
        for node in names:
            metrics = self.nodes.get(node)
            if not metrics:
                continue
            # Expired data is absent, never a stale value passed off as live.
            live = [(k, row) for k, row in metrics.items() if now - row[_LAST] <= self.expiry]
            out = []
            for op in operators:
                column = _COLUMNS[op]
                for key, row in live:
                    spec = self.metrics[key]
                    name = "" if unnamed else spec["name"]
                    out.append(_metric(name, spec["type"], op, rollup, row[column]))
            if out:
                node_map[node] = {"metrics": out, "tags": {}, "metadata": {"dataCenter": ""}}
        if host is not None and not node_map:
            return None
        return {
            "timestamp": end,
            "window": {"duration": self.duration, "start": int(end - self.window), "end": end},
            "source": source,
            "data": {"NodeMetricsMap": node_map},
        }

    # -- /api/v1 ------------------------------------------------------------------------------
    def node(self, name: str, now: float) -> dict[str, Any] | None:
        metrics = self.nodes.get(name)
        if not metrics:
            return None
        out = {}
        states = []
        ages = []
        for key, row in metrics.items():
            age = max(0.0, now - row[_LAST])
            st = state(age, row[_HORIZON], self.expiry)
            states.append(st)
            ages.append(age)
            spec = self.metrics[key]
            entry: dict[str, Any] = {"type": spec["type"], "unit": spec["unit"]}
            entry.update(zip(STAT_FIELDS, row, strict=True))
            entry.update(state=st, age=round(age, 3), expiry=self.expiry)
            out[key] = entry
        return {"state": worst(states), "age": round(max(ages), 3), "metrics": out}

    def nodes_doc(self, now: float) -> dict[str, Any]:
        return json.loads(self.nodes_json(now))

    def nodes_json(self, now: float) -> bytes:
        """GET /api/v1/nodes as JSON text, spliced from per-snapshot fragments.

        Only state and age change between requests; the rest of each metric's object is
        serialised once per snapshot, so a request over 5,000 nodes costs string joins only.
        """
        if self._fragments is None:
            self._fragments = {
                json.dumps(node): [
                    (json.dumps(key), self._static_fragment(key, row), row[_LAST], row[_HORIZON])
                    for key, row in metrics.items()
                ]
                for node, metrics in self.nodes.items()
            }
        expiry = self.expiry
        parts = []
        for node, items in self._fragments.items():
            worst_rank, oldest, metric_parts = 0, 0.0, []
            for key, fragment, last, horizon_s in items:
                age = max(0.0, now - last)
                st = state(age, horizon_s, expiry)
                worst_rank = max(worst_rank, ORDER[st])
                oldest = max(oldest, age)
                metric_parts.append(f'{key}:{{{fragment},"state":"{st}","age":{age:.3f}}}')
            parts.append(
                f'{node}:{{"state":"{BY_RANK[worst_rank]}","age":{oldest:.3f},'
                f'"metrics":{{{",".join(metric_parts)}}}}}'
            )
        head = json.dumps(
            {
                "timestamp": round(now, 3),
                "window": {"duration": self.duration, "seconds": self.window},
                "source": self.doc["source"],
                "lastPoll": self.last_poll,
            },
            separators=(",", ":"),
        )
        return (head[:-1] + ',"nodes":{' + ",".join(parts) + "}}").encode()

    def _static_fragment(self, key: str, row: list) -> str:
        spec = self.metrics[key]
        body: dict[str, Any] = {"type": spec["type"], "unit": spec["unit"]}
        body.update(zip(STAT_FIELDS, row, strict=True))
        body["expiry"] = self.expiry
        return json.dumps(body, separators=(",", ":"))[1:-1]

    def states(self, now: float) -> dict[str, int]:
        """How many nodes are in each state (a node's state is its worst metric's)."""
        counts = dict.fromkeys(ORDER, 0)
        for metrics in self.nodes.values():
            worst_rank = max(
                ORDER[state(now - row[_LAST], row[_HORIZON], self.expiry)]
                for row in metrics.values()
            )
            counts[BY_RANK[worst_rank]] += 1
        return counts


def _metric(name: str, mtype: str, op: str, rollup: str, value: float) -> dict[str, Any]:
    return {"name": name, "type": mtype, "operator": op, "rollup": rollup, "value": value}


class SnapshotReader:
    """An API worker's copy of the latest snapshot, refreshed from the store when it changes.

    When the store is unreachable the last copy keeps being served, flagged by `store_error`.
    """

    def __init__(self, store: Store, check_interval: float) -> None:
        self.store = store
        self.check_interval = check_interval
        self.view: View | None = None
        self.store_error: str | None = None
        self._checked = 0.0
        self._lock = threading.Lock()

    def get(self) -> View | None:
        now = time.monotonic()
        if now - self._checked < self.check_interval:
            return self.view
        with self._lock:
            if now - self._checked < self.check_interval:
                return self.view
            self._refresh()
            self._checked = time.monotonic()
        return self.view

    def keep_fresh(self, interval: float) -> threading.Thread:
        """Refresh every `interval` seconds on a daemon thread, requests or not: requests
        spread unevenly over gunicorn's workers, and a worker that had none before the store
        went away would have no snapshot to serve during the outage (503 beside a worker with
        one)."""

        def loop() -> None:
            while True:
                # Until the first snapshot exists (a cluster's first seconds) look more often:
                # a worker without one has nothing to serve if the store then goes away.
                time.sleep(interval if self.view is not None else min(interval, FIRST_LOOK))
                self.get()

        # The first read before the worker serves: a store that goes away in the worker's first
        # second must not find it without a copy.
        self.get()
        thread = threading.Thread(target=loop, name="snapshot-refresh", daemon=True)
        thread.start()
        return thread

    def _refresh(self) -> None:
        try:
            version = self.store.snapshot_version()
            if version is not None and (self.view is None or version != self.view.version):
                blob = self.store.load_snapshot()
                if blob is not None:
                    first = self.view is None
                    self.view = View(json.loads(blob))
                    if first:
                        log.info("worker %d holds a snapshot to serve", os.getpid())
            self.store_error = None
        except StoreError as exc:
            if self.store_error is None:
                log.warning("store unavailable, serving the last snapshot: %s", exc)
            self.store_error = str(exc)
        except (ValueError, KeyError, TypeError) as exc:
            self.store_error = f"unreadable snapshot in the store: {exc}"
