"""Pods bound recently, counted on their node until the watcher's window average holds them.

Metrics lag: a pod bound a second ago uses CPU that no sample shows yet, so a burst of pods
would all see the same idle node. Each bound pod's predicted CPU is added to its node in full
until the node's newest CPU sample is later than the bind time plus the provider's lag (the time
a sample takes to reach the watcher). From then on the plugins' figure, the window's average,
holds the pod only in proportion to the part of the window that has it: a pod first seen 30 s
ago shows in a 300 s average at a tenth of its use. So the pod keeps counting for the rest,
w = 1 - (last_sample - bind - lag) / window, falling linearly to 0 once the whole window has it,
and `average + recent` is the node's use now. Counting it only until the first sample (as
Trimaran does) undercounts every pod bound in the last window: with predictions as accurate as a
workload profile makes them, later waves then pile onto nodes whose average still trails.
`max_age` drops an entry whatever the watcher says (a node without data).

Unlike upstream Trimaran (scheduler-plugins#583), a node whose entries have all expired is
removed too, so the map never grows with dead nodes.

Cost: per node, the entries not yet seen sum to a constant and the decaying ones to A - B * t
(A = sum of c * (1 + (bind + lag) / window), B = sum of c / window), kept incrementally; each
entry moves from one to the other and out once, in bind order. Pruning runs when a new metrics
snapshot arrives or at most once per `prune_interval` and touches the nodes with entries, not
every entry, so a scheduling cycle pays a dict lookup.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework import CPU, NodeLoad

DEFAULT_WINDOW_S = 300.0  # the watcher's window when its data gives no expiry


@dataclass(eq=False)
class _Bound:
    uid: str
    node: str
    cpu_m: int
    bound_at: float  # Unix seconds
    window: float = 0.0  # set once seen: the window it decays over


@dataclass
class _Node:
    unseen: deque  # entries, bind order
    seen: deque  # entries, bind order
    count: int = 0  # live entries
    full: float = 0.0  # sum of the unseen entries
    a: float = 0.0  # decaying entries: sum of c * (1 + (bind + lag) / window)
    b: float = 0.0  # decaying entries: sum of c / window


class RecentlyBound:
    def __init__(
        self,
        provider_lag: float = 15.0,
        max_age: float = 300.0,
        prune_interval: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.provider_lag = provider_lag
        self.max_age = max_age
        self._prune_interval = prune_interval
        self._clock = clock
        self._by_uid: dict[str, _Bound] = {}
        self._nodes: dict[str, _Node] = {}
        self._sums: dict[str, int] = {}
        self._lock = threading.Lock()
        self._pruned_for: object = None
        self._pruned_at = 0.0

    def record(self, uid: str, node: str, cpu_m: int, bound_at: float | None = None) -> None:
        with self._lock:
            self._drop(uid)
            entry = _Bound(uid, node, cpu_m, self._clock() if bound_at is None else bound_at)
            self._by_uid[uid] = entry
            state = self._nodes.get(node)
            if state is None:
                state = self._nodes[node] = _Node(deque(), deque())
            state.unseen.append(entry)
            state.count += 1
            state.full += cpu_m
            self._sums[node] = self._sums.get(node, 0) + cpu_m

    def forget(self, uid: str) -> None:
        """The pod went away (deleted, or its bind failed)."""
        with self._lock:
            self._drop(uid)

    def cpu_by_node(self, loads: dict[str, NodeLoad], now: float | None = None) -> dict[str, int]:
        """Predicted CPU millicores per node not yet in `loads`' averages. Do not mutate it."""
        now = self._clock() if now is None else now
        with self._lock:
            fresh = loads is not self._pruned_for
            if fresh or now - self._pruned_at >= self._prune_interval:
                # The same snapshot again: only entries without data can change (by age).
                self._prune(loads, now, None if fresh else loads)
                self._pruned_for = loads
                self._pruned_at = now
            return dict(self._sums)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_uid)

    def nodes(self) -> set[str]:
        with self._lock:
            return set(self._nodes)

    def _prune(
        self, loads: dict[str, NodeLoad], now: float, skip: dict[str, NodeLoad] | None = None
    ) -> None:
        lag = self.provider_lag
        names = list(self._nodes) if skip is None else [n for n in self._nodes if n not in skip]
        for name in names:
            state = self._nodes[name]
            load = loads.get(name)
            stats = load.metrics.get(CPU) if load is not None else None
            last = stats.last_sample if stats is not None else None
            window = (stats.expiry if stats is not None else None) or DEFAULT_WINDOW_S
            # unseen -> decaying, once a sample after bind + lag is in the window
            while state.unseen:
                entry = state.unseen[0]
                if not self._live(entry):
                    state.unseen.popleft()
                elif now - entry.bound_at > self.max_age:
                    self._drop(entry.uid)
                elif last is not None and last > entry.bound_at + lag:
                    state.unseen.popleft()
                    state.full -= entry.cpu_m
                    entry.window = window
                    state.a += entry.cpu_m * (1 + (entry.bound_at + lag) / window)
                    state.b += entry.cpu_m / window
                    state.seen.append(entry)
                else:
                    break
            # decaying -> gone, once the whole window has it (or it is too old)
            while state.seen:
                entry = state.seen[0]
                if not self._live(entry):
                    state.seen.popleft()
                elif now - entry.bound_at > self.max_age or (
                    last is not None and last - entry.bound_at - lag >= entry.window
                ):
                    self._drop(entry.uid)
                else:
                    break
            if name not in self._nodes:
                continue
            decaying = state.a - state.b * last if state.seen and last is not None else 0.0
            self._sums[name] = int(round(state.full + max(0.0, decaying)))

    def _live(self, entry: _Bound) -> bool:
        return self._by_uid.get(entry.uid) is entry

    def _drop(self, uid: str) -> None:
        entry = self._by_uid.pop(uid, None)
        if entry is None:
            return
        state = self._nodes.get(entry.node)
        if state is None:
            return
        if entry.window:  # decaying: the node's sum follows at the next prune
            state.a -= entry.cpu_m * (1 + (entry.bound_at + self.provider_lag) / entry.window)
            state.b -= entry.cpu_m / entry.window
        else:
            state.full -= entry.cpu_m
            self._sums[entry.node] = self._sums.get(entry.node, 0) - entry.cpu_m
        state.count -= 1
        if state.count <= 0:
            del self._nodes[entry.node]
            self._sums.pop(entry.node, None)
