"""The watcher's workload profiles (`GET /api/v1/workloads`), kept fresh by a background thread.

The cycle reads `profiles()` and never waits. Profiles move slowly (an hour's window by
default), so one request every `interval` seconds, with ETag, is plenty. A failed or malformed
answer keeps the last good profiles; a watcher without profiles (404: pod usage off, or an
upstream load-watcher) leaves the estimator on requests, checked again every `idle` seconds.
Profiles not refreshed for `max_age` seconds (the watcher's default profile window) are dropped:
past that the watcher itself would have forgotten them. Each revision's own age limit is the
estimator's (`maxProfileAgeSeconds`), counted on the watcher's clock: `built` plus the time the
document has been held here (`WorkloadProfiles.held`), so no two hosts' clocks are compared.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import replace
from typing import Any

import requests

from scheduler.framework.workloads import (
    NO_PROFILES,
    Percentiles,
    RevisionProfile,
    WorkloadProfile,
    WorkloadProfiles,
)
from shared.workloads import parse_key

log = logging.getLogger(__name__)


def _percentiles(doc: Any) -> Percentiles | None:
    if not isinstance(doc, dict):
        return None
    try:
        values = [float(doc[k]) for k in ("p50", "p95", "max")]
    except (KeyError, TypeError, ValueError):
        return None
    if any(math.isnan(v) or math.isinf(v) or v < 0 for v in values):
        return None
    return Percentiles(*values)


def parse_profiles(doc: Any) -> WorkloadProfiles:
    """The watcher's answer -> profiles; a malformed workload or revision is left out, alone."""
    if not isinstance(doc, dict) or not isinstance(doc.get("workloads"), dict):
        raise ValueError("expected an object with a `workloads` object")
    out: dict[str, WorkloadProfile] = {}
    for key, w in doc["workloads"].items():
        parts = parse_key(key) if isinstance(key, str) else None
        if parts is None or not isinstance(w, dict) or not isinstance(w.get("revisions"), dict):
            continue
        revisions = {}
        for name, r in w["revisions"].items():
            if not isinstance(r, dict):
                continue
            cpu, memory = _percentiles(r.get("cpu")), _percentiles(r.get("memory"))
            samples, distinct = r.get("samples"), r.get("distinctPods")
            if cpu is None or memory is None or not isinstance(samples, int):
                continue
            distinct = distinct if isinstance(distinct, int) else 0
            last = r.get("last") if isinstance(r.get("last"), (int, float)) else 0.0
            revisions[str(name)] = RevisionProfile(samples, distinct, float(last), cpu, memory)
        if revisions:
            out[key] = WorkloadProfile(parts[1], revisions, str(w.get("current") or ""))
    built = doc.get("built")
    return WorkloadProfiles(out, float(built) if isinstance(built, (int, float)) else 0.0)


class ProfilesClient:
    # What is fetched and how it is read; backend/gpus_client.py fetches GPUs the same way.
    PATH = "/api/v1/workloads"
    WHAT = "workload profiles"
    EMPTY: Any = NO_PROFILES

    @staticmethod
    def parse(doc: Any) -> Any:
        return parse_profiles(doc)

    def __init__(
        self,
        address: str | None,
        interval: float = 10.0,
        timeout: float = 2.0,
        idle: float = 60.0,
        headers: Any = None,  # () -> dict of extra headers (the watcher's bearer token)
        max_age: float = 3600.0,
    ) -> None:
        self.address = (address or "").rstrip("/")
        self.interval = interval
        self.timeout = timeout
        self.idle = idle
        self.max_age = max_age
        self.last_success = -float("inf")  # monotonic
        self.headers = headers or dict
        self.fetched = 0
        self.failures = 0
        self._profiles = self.EMPTY
        self._fetched_at = 0.0  # monotonic time of the last document received (200)
        self._etag: str | None = None
        self._session = requests.Session()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def profiles(self) -> WorkloadProfiles:
        now = time.monotonic()
        if now - self.last_success > self.max_age:
            return self.EMPTY
        doc = self._profiles
        if isinstance(doc, WorkloadProfiles) and doc.by_key:
            # Held since its fetch: a document the watcher stopped rebuilding (answered 304
            # since) ages with the time that passes here, not only with what it says of itself.
            return replace(doc, held=now - self._fetched_at)
        return doc

    def start(self) -> None:
        if not self.address or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="profiles-client", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1)
        self._session.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            pause = self.interval if self.refresh() else self.idle
            self._stop.wait(pause)

    def refresh(self) -> bool:
        """One fetch; False when the watcher has no profiles to give (wait longer)."""
        headers = dict(self.headers())
        if self._etag:
            headers["If-None-Match"] = self._etag
        try:
            resp = self._session.get(
                f"{self.address}{self.PATH}", headers=headers, timeout=self.timeout
            )
            if resp.status_code == 304:
                self.last_success = time.monotonic()
                return True
            if resp.status_code == 404:
                self._profiles, self._etag = self.EMPTY, None
                return False
            resp.raise_for_status()
            profiles = self.parse(resp.json())
        except (requests.RequestException, ValueError) as exc:
            self.failures += 1
            if self.failures == 1 or self.failures % 60 == 0:
                log.warning("%s: %s (keeping the last ones)", self.WHAT, exc)
            return True
        self._profiles = profiles
        self._etag = resp.headers.get("ETag")
        self.last_success = self._fetched_at = time.monotonic()
        self.fetched += 1
        self.failures = 0
        return True
