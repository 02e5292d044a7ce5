"""Ballast's watcher warm-started for a trace window, as Koordinator's node agent stand-in is
(sandbox.load.nodemetric's `warm_start`): given what a watcher that had run through the day
before the window would hold of each workload, its history (watcher/workloadhistory.py: per
workload, the most one replica used in each peak bucket).

For every chosen VM's workload (one workload key per contender's pool), one replica's use at each
trace step of the TRACE_HOURS before the window, through the trace player's mapping (the same
per-replica CPU and memory the simulator produces for that VM, each replica with its own noise),
is fed to the watcher's own `WorkloadHistory.add` at the wall time the step would have played
at, in buckets of the replay's peak_bucket_seconds (bench.harness.timescale.PEAK_BUCKET_WALL),
the last step one step before the window's first wave. The result is written with the watcher's
own encode and store (`RedisStore.save_workload_history`) before the watcher starts, which takes
it over at start as it would from a replica that had polled before it: no switch in the watcher
or the scheduler. Its day max at the first wave reads the last 24 buckets, the current one
included, as deployed: 23 to 24 trace hours of it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sandbox.load.trace import STEP_SECONDS
from sandbox.load.trace_player import TracePlayer
from watcher import defaults
from watcher.podpoller import PERSIST_EVERY
from watcher.redis_store import RedisStore
from watcher.rows import HOURS
from watcher.workloadhistory import WorkloadHistory

TRACE_HOURS = 24
# Wall seconds from the seeding (just before the watcher starts) to the first wave: the watcher,
# the NodeMetric writers, load-watcher and every scheduler starting (the whole stack is up in
# 21-39 s, the sandbox included). A stack up sooner waits for it, one later starts late (its
# result says by how much).
LEAD = 30.0


def history(
    player: TracePlayer,
    replicas: Mapping[str, Sequence[str]],
    end: float,
    bucket: float,
    hours: float = TRACE_HOURS,
) -> WorkloadHistory:
    """The history a watcher polling until wall time `end` (the window's start) would hold:
    `replicas` is workload key -> its replicas' pod keys (`namespace/name`, as the player maps
    them to VMs)."""
    first = player.first_step
    steps = np.arange(max(0, first - round(hours * 3600 / STEP_SECONDS)), first)
    wall = end - (first - steps) * player.config.step_seconds
    pods: list[tuple[tuple[str, str], str, np.ndarray, np.ndarray]] = []
    for workload, keys in replicas.items():
        for key in keys:
            found = player.step_use(key, steps)
            if found is not None:
                namespace, _, name = key.partition("/")
                pods.append(((namespace, name), workload, *found))
    out = WorkloadHistory(bucket)
    keys_of = {pod: workload for pod, workload, _, _ in pods}
    for i, at in enumerate(wall.tolist()):
        out.add(at, {pod: (float(cpu[i]), float(mem[i])) for pod, _, cpu, mem in pods}, keys_of)
    return out


def seed(redis_url: str, found: WorkloadHistory, prefix: str = defaults.KEY_PREFIX) -> None:
    """Write `found` where the watcher takes its workloads' history over at start."""
    store = RedisStore(redis_url, prefix, defaults.WINDOW)
    try:
        store.save_workload_history(found.encode(), HOURS * found.bucket + PERSIST_EVERY)
    finally:
        store.close()


@dataclass
class WarmStart:
    """The hook a trace window's stack calls with its Redis before starting the watcher."""

    player: TracePlayer
    replicas: Mapping[str, Sequence[str]]
    bucket: float
    prefix: str = defaults.KEY_PREFIX
    lead: float = LEAD
    end: float | None = None  # wall time the seeded buckets end at: the first wave's
    workloads: int = 0

    def __call__(self, redis_url: str) -> None:
        self.end = time.time() + self.lead
        found = history(self.player, self.replicas, self.end, self.bucket)
        seed(redis_url, found, self.prefix)
        self.workloads = len(found)

    def record(self, started: float) -> dict[str, Any]:
        """For the window's result: what the watcher was given, and how late the first wave
        came after the seeded buckets' end (wall seconds; 0 when the stack was up in time)."""
        late = max(0.0, started - self.end) if self.end is not None else None
        return {
            "trace_hours": TRACE_HOURS,
            "workloads": self.workloads,
            "bucket_wall_seconds": self.bucket,
            "late_seconds": None if late is None else round(late, 1),
        }
