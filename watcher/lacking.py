"""Nodes a partial answer left out: the store said it lacks data, so their silence is no news.

A distributed store with a storage node down answers with what it still has (VictoriaMetrics
cluster's `isPartial`, Thanos's and Prometheus's `warnings`). The nodes whose series lived on the
missing part drop out of the answer. Reading them as idle would send pods to nodes that may be
hot; they keep their last window instead, and age. How fast: the adaptive horizon trusts a quiet
node's last sample for long, which is right while nothing says data is missing, and wrong once
the store says so. A node left out of a partial answer therefore gets the shortest horizon
(`horizon_min`, two polls by default) until an answer has it again, so it turns stale, and the
scheduler blends it toward its allocation fallback, while the nodes the store still serves stay
fresh.

Only the active poller knows this; a replica taking over during an outage starts without it and
the left-out nodes age by their adaptive horizon until they are back.
"""

from __future__ import annotations

import numpy as np

from watcher.providers.base import Fetch
from watcher.window import Frame


def answered(frame: Frame | None, key: str) -> set[str]:
    """Nodes with a valid value for `key` in this poll's frame."""
    if frame is None or key not in frame.values:
        return set()
    values = frame.values[key]
    if not np.isnan(values).any():
        return set(frame.nodes)
    return {n for n, v in zip(frame.nodes, values, strict=True) if not np.isnan(v)}


class Lacking:
    """Per metric key, the nodes in the window that partial answers left out."""

    def __init__(self) -> None:
        self.nodes: dict[str, set[str]] = {}
        self._stats: dict[str, dict[str, list]] = {}  # the last snapshot's node statistics

    def update(self, fetch: Fetch, frame: Frame | None) -> None:
        """After a poll: a node back in an answer is no longer lacking; a partial answer adds
        the nodes with data that it left out. A complete answer that leaves a node out adds
        nothing: that node ages by its adaptive horizon, as when the whole store is down."""
        for key in set(self.nodes) | set(fetch.partial):
            got = answered(frame, key)
            lacking = self.nodes.get(key, set()) - got
            if key in fetch.partial:
                lacking |= {n for n, m in self._stats.items() if key in m} - got
            if lacking:
                self.nodes[key] = lacking
            else:
                self.nodes.pop(key, None)

    def known(self, stats: dict[str, dict[str, list]]) -> None:
        """Keep the new snapshot's statistics (which nodes have data); a node that left the
        window is lacking no more."""
        self._stats = stats
        for key in list(self.nodes):
            self.nodes[key] = {n for n in self.nodes[key] if key in stats.get(n, ())}
            if not self.nodes[key]:
                del self.nodes[key]

    def counts(self) -> dict[str, int]:
        return {key: len(nodes) for key, nodes in sorted(self.nodes.items())}
