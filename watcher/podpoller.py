"""One poll of pod usage: fetch, join pods to workloads, feed the profiles, the per-pod
statistics (watcher/podstats.py) and the workloads' history (watcher/workloadhistory.py), the
scheduler's peak model, store them.

Runs inside the node poller's tick, on the replica holding the poller lock, after the node
frame is stored: node data never waits on pods. The profiles' statistics are written every
poll (a small JSON document the API serves); their rings, the pods' rows and the workloads'
history, which only a poller taking over needs, at most every `PERSIST_EVERY` seconds.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from typing import Any

from shared.workloads import Workload
from watcher.defaults import PEAK_BUCKET_SECONDS
from watcher.owners import PodOwners
from watcher.podstats import PodStats
from watcher.podusage import PodSource
from watcher.profiles import PodSample, ProfileBook
from watcher.workloadhistory import HOURS, WorkloadHistory

log = logging.getLogger(__name__)

PERSIST_EVERY = 60.0


class PodPoller:
    def __init__(
        self,
        source: PodSource,
        owners: PodOwners | None,
        store: Any,
        window: float,
        poll_interval: float,
        max_profiles: int,
        node_window: float | None = None,
        half_life: float | None = None,
        bucket: float = PEAK_BUCKET_SECONDS,
    ) -> None:
        self.source = source
        self.owners = owners
        self.store = store
        self.book = ProfileBook(window, poll_interval, max_profiles=max_profiles)
        # Per pod: the node window's samples and a decaying history (watcher/podstats.py).
        self.stats = PodStats(
            node_window or window, poll_interval, half_life or window, bucket=bucket
        )
        # Per workload: the most a replica used per bucket, kept when the pods are gone.
        self.history = WorkloadHistory(bucket, max_workloads=max_profiles)
        self.rejected: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.pods = 0  # pods with usage in the last poll
        self.pods_seen = 0  # pods with usage, summed over polls
        self.polls = 0
        self.poll_seconds = 0.0
        self.last: dict[str, Any] = {"time": None, "ok": False, "error": "no poll yet"}
        self._persisted = 0.0
        self._logged: set[str] = set()

    def take_over(self) -> None:
        """Reload the stored rings and pod statistics (a poller that just took the lock)."""
        self._take_over_stats()
        doc, rings = self.store.load_workloads()
        if not doc or not rings:
            return
        workloads = {}
        for key, w in (json.loads(doc).get("workloads") or {}).items():
            workloads[key] = Workload(w["namespace"], w["kind"], w["name"], w["current"])
        self.book.load(rings, workloads)
        log.info("pod poller: %d workload profiles reloaded", len(self.book))

    def _take_over_stats(self) -> None:
        _, blob = self.store.load_pods()
        if blob:
            self.stats.load(blob)
            log.info("pod poller: %d pods' statistics reloaded", len(self.stats))
        rows = self.store.load_workload_history()
        if rows:
            self.history.load(rows)
            log.info("pod poller: %d workloads' history reloaded", len(self.history))

    def counters(self) -> dict[str, Any]:
        """This poller's figures for /metrics (watcher.selfmetrics)."""
        return {
            "polls": self.polls,
            "pollSeconds": round(self.poll_seconds, 4),
            "pods": self.pods,
            "podsSeen": self.pods_seen,
            "pollErrors": dict(self.errors),
            "rejected": dict(self.rejected),
        }

    def poll(self) -> None:
        started = time.monotonic()
        try:
            self._poll()
        finally:
            self.polls += 1
            self.poll_seconds += time.monotonic() - started

    def _poll(self) -> None:
        fetch = self.source.fetch()
        now = fetch.time
        if fetch.error is not None:
            self.errors[fetch.error.reason] += 1
            self._log_once(f"error:{fetch.error.reason}", f"pod usage query failed: {fetch.error}")
            self.last = {"time": now, "ok": False, "error": str(fetch.error)}
        else:
            self._logged = {k for k in self._logged if not k.startswith("error:")}
            self.last = {"time": now, "ok": True, "error": None}
            self.pods = len(fetch.usage)
            self.pods_seen += self.pods
            rejected = Counter(fetch.rejected)
            keys: dict[tuple[str, str], str] = {}
            self.book.add(now, self.group(fetch.usage, rejected, keys))
            self.stats.add(now, fetch.usage, keys)
            self.history.add(now, fetch.usage, keys)
            self.rejected.update(rejected)
            rejected = +rejected  # a poll of no pods counts no_owner += 0: nothing to say
            if rejected:
                self._log_once(
                    "rejected:" + ",".join(sorted(rejected)),
                    f"pod samples rejected: {dict(rejected)}",
                )
        self.book.trim(now)
        self.stats.trim(now)
        self.history.trim(now)
        doc = self.book.doc(now)
        doc["lastPoll"] = self.last
        doc["pods"] = self.pods
        doc["rejected"] = dict(self.rejected)
        rings = blob = history = None
        if time.monotonic() - self._persisted >= PERSIST_EVERY:
            rings, blob = self.book.encode(), self.stats.encode()
            history = self.history.encode()
            self._persisted = time.monotonic()
        body = json.dumps(doc, separators=(",", ":")).encode()
        # Profiles span their own window, longer than the node window: stored as long.
        keep = self.book.window + PERSIST_EVERY
        self.store.save_workloads(body, rings, keep)
        pods = self.stats.doc(now)
        pods["lastPoll"] = self.last
        pods["workloadHistory"] = self.history.doc(now)
        # The rows carry a history of about two half-lives: kept that long for a takeover.
        keep_rows = max(keep, 2 * self.stats.half_life)
        self.store.save_pods(json.dumps(pods, separators=(",", ":")).encode(), blob, keep_rows)
        if history is not None:
            # Its day: after that long without a write it holds nothing.
            self.store.save_workload_history(history, HOURS * self.history.bucket + PERSIST_EVERY)

    def group(
        self,
        usage: dict[tuple[str, str], tuple[float, float]],
        rejected: Counter[str],
        keys: dict[tuple[str, str], str] | None = None,
    ) -> dict[Workload, list[PodSample]]:
        """Samples by workload revision; pods without a known controller counted `no_owner`.
        `keys`, when given, receives each owned pod's workload key."""
        if self.owners is None:
            rejected["no_owner"] += len(usage)
            return {}
        self.owners.update(unknown=any(k not in self.owners.owners for k in usage))
        out: dict[Workload, list[PodSample]] = {}
        for (namespace, pod), (cpu_m, memory) in usage.items():
            workload = self.owners.lookup(namespace, pod)
            if workload is None:
                rejected["no_owner"] += 1
                continue
            out.setdefault(workload, []).append(PodSample(pod, cpu_m, memory))
            if keys is not None:
                keys[(namespace, pod)] = workload.key
        return out

    def _log_once(self, cause: str, message: str) -> None:
        if cause not in self._logged:
            self._logged.add(cause)
            log.warning(message)
