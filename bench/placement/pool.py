"""What bench.placement.online's replay and its policies (bench/placement/policies.py) share: a
pool's window as the simulator plays it, and what a scheduler could know of it at one second."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from watcher.rows import HOURS

# Seconds of node samples the watcher holds before the first wave (the stack ran before it):
# the pool's background only, no pod bound yet.
PRE = 30


@dataclass(frozen=True)
class Pool:
    """One pool over one window. Seconds count from the replay's start; arrays over seconds start
    `pre` seconds before it. CPU in millicores."""

    capacity: np.ndarray  # per node, CPU allocatable
    memory: np.ndarray  # per node, memory allocatable (bytes)
    background: np.ndarray  # node x second: what the node uses beyond its pods
    use: np.ndarray  # pod x second: what the pod uses if it has run long enough (no ramp)
    requests: np.ndarray  # pod x 2: CPU m, memory bytes
    arrival: np.ndarray  # per pod, the second its wave was created
    workload: np.ndarray  # per pod, its workload's index
    history: np.ndarray  # workload x trace step of the day before: the most one replica used
    seconds: int  # the measured series' length
    pre: int = PRE
    ramp: float = 5.0  # wall seconds a pod takes to reach its use
    hour: float = 60.0  # wall seconds a trace hour lasts (the replay's compression)


@dataclass(frozen=True)
class Known:
    """What a deployed scheduler could know at `now`: samples before it, pods arrived so far."""

    now: int
    pre: int
    hour: float
    capacity: np.ndarray
    memory: np.ndarray
    nodes: np.ndarray  # node x past second: the node's CPU use (the watcher's samples)
    pods: np.ndarray  # pod x past second: each pod's use, 0 while not bound
    node_of: np.ndarray  # per pod, the node it is bound to, -1 when not (or not arrived)
    bound_at: np.ndarray  # per pod, the second it was bound, nan when not
    requests: np.ndarray  # pod x 2, of arrived pods (0 for the rest)
    workload: np.ndarray  # per pod (arrived ones; -1 for the rest)
    history: np.ndarray  # workload x trace step of the day before the window

    @property
    def hourly(self) -> np.ndarray:
        """workload x trace hour of the day before: the history in the watcher's buckets (one
        maximum an hour, aligned with the window's start)."""
        return self.history.reshape(len(self.history), HOURS, -1).max(axis=2)

    @property
    def hour_of_day(self) -> int:
        """The trace hour now is in: windows start at a day's first step."""
        return int(self.now // self.hour)


# A policy: (what is known, the pod to place) -> (score per node, nodes it allows). The best
# allowed score wins among the nodes the requests fit.
Policy = Callable[[Known, int], tuple[np.ndarray, np.ndarray]]


def ramped(use: np.ndarray, bound: float, pre: int, ramp: float) -> np.ndarray:
    """A pod's use over the pool's seconds when bound at `bound`, as the simulator ramps it."""
    seconds = np.arange(-pre, use.shape[-1] - pre, dtype=float)
    factor = np.clip((seconds - bound) / ramp, 0.0, 1.0) if ramp > 0 else seconds >= bound
    return use * factor
