"""The snapshot: window statistics of every node plus poll status, built once per poll.

The poller stores it; every API worker (and every replica) reads the same JSON document and only
adds what depends on the moment of the request (age, staleness state).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from watcher.config import Config, MetricSpec
from watcher.nodepeaks import NodePeaks
from watcher.staleness import horizon
from watcher.stats import summarize
from watcher.window import Window

# order of the per-metric list in the snapshot's `nodes` entries
# `peak`: the most the node used over the last 72 hours (watcher/nodepeaks.py), at least `max`
STAT_FIELDS = (
    "avg", "std", "min", "max", "p95", "latest", "count", "first", "last", "horizon", "peak"
)  # fmt: skip
_COUNT = STAT_FIELDS.index("count")


def node_stats(
    window: Window,
    specs: list[MetricSpec],
    config: Config,
    lacking: dict[str, set[str]] | None = None,
    peaks: NodePeaks | None = None,
) -> dict[str, Any]:
    """{node: {metric key: [avg, std, min, max, p95, latest, count, first, last, horizon,
    peak]}}. Nodes in `lacking` (per key: left out of a partial answer, watcher/lacking.py) get
    the shortest horizon; `peak` is the window's max when `peaks` knows nothing longer."""
    nodes = window.nodes()
    out: dict[str, dict[str, list]] = {n: {} for n in nodes}
    if not nodes:
        return {}
    low, high = config.horizon_bounds
    index = {n: i for i, n in enumerate(nodes)} if lacking else {}
    for spec in specs:
        times, values = window.matrix(spec.key, nodes)
        s = summarize(times, values)
        s["horizon"] = horizon(s["volatility"], config.tolerance, low, high)
        cut = [index[n] for n in (lacking or {}).get(spec.key, ()) if n in index]
        s["horizon"][cut] = np.minimum(s["horizon"][cut], low)
        longer = (
            peaks.peaks(spec.key, nodes, float(np.nanmax(times))) if peaks and len(times) else None
        )
        s["peak"] = s["max"] if longer is None else np.fmax(s["max"], longer)
        # One N x 10 matrix to Python lists in one call (a tuple per node from zip(*columns)
        # and a list from each cost twice as long at 20,000 nodes); count back to an int.
        rows = np.column_stack([np.round(s[f], 3) for f in STAT_FIELDS]).tolist()
        for node, row, count in zip(nodes, rows, s["count"].tolist(), strict=True):
            if count:
                row[_COUNT] = count
                out[node][spec.key] = row
    return {n: m for n, m in out.items() if m}


def build(
    *,
    version: str,
    built: float,
    config: Config,
    specs: list[MetricSpec],
    source: str,
    nodes: dict[str, Any],
    last_poll: dict[str, Any],
    last_success: float | None,
    leader: str,
    counters: dict[str, Any],
) -> bytes:
    doc = {
        "version": version,
        "built": built,
        "source": source,
        "window": config.window,
        "expiry": config.expiry_seconds,
        "metrics": {s.key: {"name": s.name, "type": s.type, "unit": s.unit} for s in specs},
        "lastPoll": last_poll,
        "lastSuccess": last_success,
        "leader": leader,
        "counters": counters,
        "nodes": nodes,
    }
    # orjson: 0.08 s for 20,000 nodes where json took 0.8 s, inside every poll. It writes a NaN
    # as null where json refused it; node_stats keeps only metrics with samples, so none occur.
    return orjson.dumps(doc)
