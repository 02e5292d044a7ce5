"""Workload profiles: what one replica of a workload uses, learned from its running replicas.

Per workload revision (shared.workloads), a fixed-size ring of per-replica samples (CPU
millicores, memory bytes, sample time). Each poll adds at most `per_poll` replicas' samples,
taken in turn over the replicas, so a 500-replica Deployment and a 2-replica one cost the same
and the ring spans `capacity / per_poll` polls of a big workload (all of `window` for a small
one). Samples older than `window` leave the ring: a workload whose pods are gone loses its
profile after `window`. At most two revisions per workload are kept (the newest and the one
before, for the fallback during a rollout) and at most `max_profiles` revisions in all (the least
recently seen go first), so memory is bounded whatever the cluster does.

Statistics per revision: p50, p95 and max of CPU and memory over the ring's samples, the sample
count, the replicas seen in the last poll and distinct pods seen (counted up to `DISTINCT_CAP`).
"""

from __future__ import annotations

import math
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shared.workloads import Workload

CAPACITY = 256
DISTINCT_CAP = 16  # "at least this many replicas" is all a consumer needs to know
_HEAD = struct.Struct("<dIIII")  # newest time, count, replicas, total, distinct


@dataclass
class Ring:
    capacity: int = CAPACITY
    times: np.ndarray = field(init=False)
    cpu: np.ndarray = field(init=False)
    memory: np.ndarray = field(init=False)
    count: int = 0
    head: int = 0  # next slot to write
    total: int = 0  # samples ever added
    replicas: int = 0  # in the last poll that saw the workload
    pods: set[str] = field(default_factory=set)  # distinct pods, up to DISTINCT_CAP
    distinct: int = 0
    last: float = 0.0

    def __post_init__(self) -> None:
        self.times = np.zeros(self.capacity, dtype=np.float64)
        self.cpu = np.zeros(self.capacity, dtype=np.float32)
        self.memory = np.zeros(self.capacity, dtype=np.float32)

    def add(self, at: float, cpu_m: float, memory: float) -> None:
        self.times[self.head] = at
        self.cpu[self.head] = cpu_m
        self.memory[self.head] = memory
        self.head = (self.head + 1) % self.capacity
        self.count = min(self.count + 1, self.capacity)
        self.total += 1
        self.last = max(self.last, at)

    def see(self, pod: str) -> None:
        if self.distinct < DISTINCT_CAP and pod not in self.pods:
            self.pods.add(pod)
            self.distinct = len(self.pods)

    def trim(self, cutoff: float) -> None:
        """Forget samples older than `cutoff` (the ring stays in place; slots are reused)."""
        if not self.count:
            return
        live = self._live()
        keep = live[self.times[live] >= cutoff]
        if len(keep) == self.count:
            return
        self.times[: len(keep)] = self.times[keep]
        self.cpu[: len(keep)] = self.cpu[keep]
        self.memory[: len(keep)] = self.memory[keep]
        self.count = len(keep)
        self.head = self.count % self.capacity

    def _live(self) -> np.ndarray:
        """Indices of the samples held, oldest first."""
        if self.count < self.capacity:
            start = (self.head - self.count) % self.capacity
            return (start + np.arange(self.count)) % self.capacity
        return (self.head + np.arange(self.capacity)) % self.capacity

    def stats(self) -> dict[str, Any]:
        """Everything but the percentiles (`percentiles` computes those for many rings)."""
        live = self._live()
        return {
            "samples": int(self.count),
            "samplesTotal": int(self.total),
            "replicas": self.replicas,
            "distinctPods": self.distinct,
            "first": round(float(self.times[live].min()), 3) if self.count else None,
            "last": round(self.last, 3) if self.count else None,
        }

    def encode(self) -> bytes:
        """The held samples, oldest first: times as float32 seconds before the newest."""
        live = self._live()
        newest = self.last
        head = _HEAD.pack(newest, self.count, self.replicas, self.total, self.distinct)
        ages = (newest - self.times[live]).astype(np.float32)
        return head + ages.tobytes() + self.cpu[live].tobytes() + self.memory[live].tobytes()

    @classmethod
    def decode(cls, blob: bytes, capacity: int = CAPACITY) -> Ring:
        newest, count, replicas, total, distinct = _HEAD.unpack_from(blob)
        ring = cls(capacity)
        n = min(count, capacity)
        off = _HEAD.size
        ages = np.frombuffer(blob, np.float32, count, off)[-n:] if n else np.zeros(0)
        cpu = np.frombuffer(blob, np.float32, count, off + 4 * count)[-n:]
        memory = np.frombuffer(blob, np.float32, count, off + 8 * count)[-n:]
        ring.times[:n] = newest - ages.astype(np.float64)
        ring.cpu[:n] = cpu
        ring.memory[:n] = memory
        ring.count, ring.head = n, n % capacity
        ring.total, ring.distinct, ring.replicas = total, distinct, replicas
        ring.last = newest if n else 0.0
        return ring


def percentiles(rings: list[Ring], what: str, digits: int) -> list[dict[str, float] | None]:
    """p50, p95 (linear, as numpy's default) and max of `what` ("cpu" or "memory") for many
    rings at once: one sort of a rings x capacity matrix, empty slots sorted last."""
    if not rings:
        return []
    capacity = rings[0].capacity
    values = np.full((len(rings), capacity), np.inf, dtype=np.float64)
    counts = np.zeros(len(rings), dtype=np.int64)
    for i, ring in enumerate(rings):
        if ring.count:
            live = ring._live()
            values[i, : ring.count] = getattr(ring, what)[live]
            counts[i] = ring.count
    values.sort(axis=1)
    values[counts == 0] = 0.0  # no samples: no figures (None below), and no inf - inf
    rows = np.arange(len(rings))
    last = np.maximum(counts - 1, 0)
    out = {"max": values[rows, last]}
    for name, q in (("p50", 0.5), ("p95", 0.95)):
        pos = last * q
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, last)
        low, high = values[rows, lo], values[rows, hi]
        out[name] = low + (high - low) * (pos - lo)
    return [
        {k: round(float(out[k][i]), digits) for k in ("p50", "p95", "max")} if counts[i] else None
        for i in range(len(rings))
    ]


@dataclass(frozen=True)
class PodSample:
    pod: str  # name, in the workload's namespace
    cpu_m: float
    memory: float


class ProfileBook:
    """Every workload revision's ring; fed once per poll by the pod poller."""

    def __init__(
        self,
        window: float,
        poll_interval: float,
        capacity: int = CAPACITY,
        max_profiles: int = 100_000,
    ) -> None:
        self.window = window
        self.capacity = capacity
        # Enough replicas per poll that the ring spans the window for small workloads, and at
        # least a handful so a new Deployment's profile fills within a few polls.
        self.per_poll = max(4, math.ceil(capacity * poll_interval / max(window, 1.0)))
        self.max_profiles = max_profiles
        self.rings: dict[tuple[str, str], Ring] = {}  # (workload key, revision) -> ring
        self.workloads: dict[str, Workload] = {}  # key -> the newest revision's Workload
        self.revisions: dict[str, list[str]] = {}  # key -> revisions, newest last (at most 2)
        self.seq = 0

    def __len__(self) -> int:
        return len(self.rings)

    def add(self, at: float, by_workload: dict[Workload, list[PodSample]]) -> None:
        self.seq += 1
        for workload, samples in by_workload.items():
            ring = self._ring(workload)
            ring.replicas = len(samples)
            ordered = sorted(samples, key=lambda s: s.pod)
            take = min(len(ordered), self.per_poll)
            start = (self.seq * take) % len(ordered)
            for i in range(take):
                sample = ordered[(start + i) % len(ordered)]
                ring.add(at, sample.cpu_m, sample.memory)
            for sample in ordered[:DISTINCT_CAP]:
                ring.see(sample.pod)
        self._evict()

    def _ring(self, workload: Workload) -> Ring:
        key, slot = workload.key, (workload.key, workload.revision)
        ring = self.rings.get(slot)
        revisions = self.revisions.setdefault(key, [])
        if ring is None:
            ring = self.rings[slot] = Ring(self.capacity)
            revisions.append(workload.revision)
            while len(revisions) > 2:
                self.rings.pop((key, revisions.pop(0)), None)
            self.workloads[key] = workload
        elif revisions[-1] != workload.revision and self.rings[(key, revisions[-1])].last < (
            ring.last
        ):
            # An older revision sampled after the newest one stopped (a rollback): it becomes
            # the newest. Not while both are sampled (a rollout): the poll that lists the old
            # one first would make it the newest, and the estimator's fallback (older only)
            # reads this order.
            revisions.remove(workload.revision)
            revisions.append(workload.revision)
            self.workloads[key] = workload
        return ring

    def _evict(self) -> None:
        if len(self.rings) <= self.max_profiles:
            return
        by_age = sorted(self.rings, key=lambda slot: self.rings[slot].last)
        for slot in by_age[: len(self.rings) - self.max_profiles]:
            self._drop(slot)

    def _drop(self, slot: tuple[str, str]) -> None:
        key, revision = slot
        self.rings.pop(slot, None)
        revisions = self.revisions.get(key, [])
        if revision in revisions:
            revisions.remove(revision)
        if not revisions:
            self.revisions.pop(key, None)
            self.workloads.pop(key, None)

    def trim(self, now: float) -> None:
        cutoff = now - self.window
        for slot in list(self.rings):
            ring = self.rings[slot]
            ring.trim(cutoff)
            if not ring.count:
                self._drop(slot)

    def doc(self, now: float | None = None) -> dict[str, Any]:
        """The profiles as /api/v1/workloads serves them (CPU in millicores, memory in bytes)."""
        slots = list(self.rings)
        rings = [self.rings[slot] for slot in slots]
        stats = {}
        for slot, ring, cpu, memory in zip(
            slots, rings, percentiles(rings, "cpu", 1), percentiles(rings, "memory", 0), strict=True
        ):
            stats[slot] = {**ring.stats(), "cpu": cpu, "memory": memory}
        workloads = {}
        for key, revisions in self.revisions.items():
            w = self.workloads[key]
            workloads[key] = {
                "namespace": w.namespace,
                "kind": w.kind,
                "name": w.name,
                "current": revisions[-1],
                "revisions": {r: stats[(key, r)] for r in reversed(revisions)},
            }
        return {
            "built": round(time.time() if now is None else now, 3),
            "window": self.window,
            "perPoll": self.per_poll,
            "capacity": self.capacity,
            "workloads": workloads,
        }

    def encode(self) -> dict[str, bytes]:
        """Hash field `key|revision` -> ring, for the store (a taking-over poller reloads it)."""
        return {f"{key}|{rev}": self.rings[(key, rev)].encode() for key, rev in self.rings}

    def load(self, fields: dict[str, bytes], workloads: dict[str, Workload]) -> None:
        """Rings from the store; `workloads`: key -> Workload (from the stored doc)."""
        for name, blob in fields.items():
            key, _, revision = name.rpartition("|")
            w = workloads.get(key)
            if w is None:
                continue
            try:
                ring = Ring.decode(blob, self.capacity)
            except (struct.error, ValueError):
                continue  # a blob from another version: the ring refills
            self.rings[(key, revision)] = ring
            self.revisions.setdefault(key, []).append(revision)
            self.workloads[key] = Workload(w.namespace, w.kind, w.name, revision)
        for key, revisions in self.revisions.items():
            revisions.sort(key=lambda r, key=key: self.rings[(key, r)].last)
            for revision in revisions[:-2]:
                self.rings.pop((key, revision), None)
            del revisions[:-2]
            w = self.workloads[key]
            self.workloads[key] = Workload(w.namespace, w.kind, w.name, revisions[-1])
