"""The watcher client: a background thread that keeps the latest node loads for the cycle.

A scheduling cycle reads `loads()` and never waits: the dict it gets was built by this thread.
The thread asks Ballast's `/api/v1/nodes` (with ETag), and switches to the plain `/watcher`
envelope when the address turns out to be an upstream Go load-watcher (404 on /api/v1).

Failure rules: every request has a short timeout; a failed or malformed answer leaves the last
good data in place (a malformed one also bumps `malformed`), and retries back off. The last good
data keeps ageing: each tick re-derives every metric's state from its age, so a watcher that
went away turns fresh data stale and then expired, and the plugins fall back per node.

Times: a sample's time is converted to this process's clock (fetch time minus the age the
watcher reported), so clock skew between watcher and scheduler does not leak into ages. A sample
read again (the watcher's own time of it, `last`, unchanged) keeps the time it was first given:
the age is computed when the watcher builds its answer (a body serves half a second) and the
fetch adds its latency, so the same sample would otherwise come back a few milliseconds newer,
and a consumer counting newer samples (the rebalancer's hot streaks) would count it twice.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from scheduler.framework import MetricStats, NodeLoad
from shared import wire
from shared.lifecycle import Lifecycle, join

log = logging.getLogger(__name__)

FRESH, STALE, EXPIRED = "fresh", "stale", "expired"
STATES = (FRESH, STALE, EXPIRED)
BALLAST, LOAD_WATCHER = "ballast", "load-watcher"
_WIRE_KEYS = {wire.CPU: "cpu", wire.MEMORY: "memory"}
NEWER = 1e-3  # s: a sample time this much past the newest is a new sample, not float rounding


class MalformedAnswer(ValueError):
    """The watcher answered with something that does not follow its API."""


@dataclass
class _Metric:
    """One metric as fetched; states are re-derived from these on every tick."""

    avg: float | None
    std: float | None
    latest: float | None
    p95: float | None
    peak: float | None
    last_sample: float  # local clock
    horizon: float | None
    expiry: float
    state: str  # as reported at fetch time
    sample: float | None = None  # the watcher's own time of its newest sample: which one it is


# ---- parsing (pure) ------------------------------------------------------------------------
def _num(value: Any, where: str, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    try:
        number = wire.number(value, where)
    except wire.WireFormatError as exc:
        raise MalformedAnswer(str(exc)) from exc
    if math.isnan(number):
        raise MalformedAnswer(f"{where}: expected a number, got {value!r}")
    if math.isinf(number):
        raise MalformedAnswer(f"{where}: infinite")
    return number


def parse_ballast(doc: Any, fetched_at: float) -> dict[str, dict[str, _Metric]]:
    """Parse `GET /api/v1/nodes`; `fetched_at` is the local time the answer arrived."""
    if not isinstance(doc, dict):
        raise MalformedAnswer("answer: expected a JSON object")
    nodes = doc.get("nodes")
    if not isinstance(nodes, dict):
        raise MalformedAnswer("nodes: expected an object")
    window = doc.get("window")
    window_s = None
    if isinstance(window, dict):
        window_s = _num(window.get("seconds"), "window.seconds")
    out: dict[str, dict[str, _Metric]] = {}
    for name, node in nodes.items():
        where = f"nodes[{name!r}]"
        if not isinstance(node, dict):
            raise MalformedAnswer(f"{where}: expected an object")
        metrics = node.get("metrics") or {}
        if not isinstance(metrics, dict):
            raise MalformedAnswer(f"{where}.metrics: expected an object")
        parsed: dict[str, _Metric] = {}
        for key, m in metrics.items():
            w = f"{where}.metrics[{key!r}]"
            if not isinstance(m, dict):
                raise MalformedAnswer(f"{w}: expected an object")
            state = m.get("state", FRESH)
            if state not in STATES:
                raise MalformedAnswer(f"{w}.state: expected one of {STATES}, got {state!r}")
            age = _num(m.get("age"), f"{w}.age", optional=False)
            if age < 0:
                raise MalformedAnswer(f"{w}.age: negative")
            expiry = _num(m.get("expiry"), f"{w}.expiry") or window_s or 300.0
            parsed[str(key)] = _Metric(
                avg=_num(m.get("avg"), f"{w}.avg"),
                std=_num(m.get("std"), f"{w}.std"),
                latest=_num(m.get("latest"), f"{w}.latest"),
                p95=_num(m.get("p95"), f"{w}.p95"),
                peak=_num(m.get("peak"), f"{w}.peak"),
                last_sample=fetched_at - age,
                horizon=_num(m.get("horizon"), f"{w}.horizon"),
                expiry=expiry,
                state=state,
                sample=_num(m.get("last"), f"{w}.last"),
            )
        out[str(name)] = parsed
    return out


def keep_sample_times(
    fetched: dict[str, dict[str, _Metric]], before: dict[str, dict[str, _Metric]]
) -> dict[str, dict[str, _Metric]]:
    """`fetched`, each sample read again (the same watcher time) at the local time it was
    first given."""
    for node, metrics in fetched.items():
        for key, m in metrics.items():
            old = before.get(node, {}).get(key)
            if old is not None and m.sample is not None and m.sample == old.sample:
                m.last_sample = old.last_sample
    return fetched


def newest_sample(fetched: dict[str, dict[str, _Metric]]) -> float:
    """The newest sample time of any node's metric (local clock); -inf when there is none."""
    return max(
        (m.last_sample for metrics in fetched.values() for m in metrics.values()), default=-math.inf
    )


def duration_seconds(text: str, default: float) -> float:
    """Go-style durations as load-watcher writes them ("15m", "5m", "1h30m", "90s")."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s)", text or "")
    if not parts or "".join(n + u for n, u in parts) != text:
        return default
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0}
    return sum(float(n) * scale[u] for n, u in parts)


def parse_envelope(
    doc: Any, fetched_at: float, now_wall: float, horizon: float
) -> dict[str, dict[str, _Metric]]:
    """Parse an upstream `GET /watcher` envelope. Ages come from its `window.end`."""
    try:
        env = wire.parse_envelope(doc)
    except wire.WireFormatError as exc:
        raise MalformedAnswer(str(exc)) from exc
    expiry = duration_seconds(env.window.duration, 900.0)
    age = max(0.0, now_wall - float(env.window.end or env.timestamp))
    out: dict[str, dict[str, _Metric]] = {}
    for node, metrics in env.nodes.items():
        parsed: dict[str, _Metric] = {}
        for m in metrics:
            key = _WIRE_KEYS.get(m.type, m.name or m.type.lower())
            if not math.isfinite(m.value):
                raise MalformedAnswer(f"data.NodeMetricsMap[{node!r}]: {m.name} not finite")
            entry = parsed.get(key)
            if entry is None:
                entry = parsed[key] = _Metric(
                    None,
                    None,
                    None,
                    None,
                    None,
                    fetched_at - age,
                    horizon,
                    max(expiry, horizon),
                    FRESH,
                )
            if m.operator == wire.AVG:
                entry.avg = m.value
            elif m.operator == wire.STD:
                entry.std = m.value
            elif m.operator == wire.LATEST:
                entry.latest = m.value
        out[node] = parsed
    return out


def current_loads(
    fetched: dict[str, dict[str, _Metric]], source: str, now: float
) -> dict[str, NodeLoad]:
    """Turn fetched metrics into framework.NodeLoad with ages and states as of `now`."""
    loads: dict[str, NodeLoad] = {}
    for node, metrics in fetched.items():
        stats = {}
        for key, m in metrics.items():
            age = max(0.0, now - m.last_sample)
            if age > m.expiry:
                state = EXPIRED
            elif m.horizon is not None:
                state = FRESH if age <= m.horizon else STALE
            else:
                state = m.state
            stats[key] = MetricStats(
                avg=m.avg,
                std=m.std,
                latest=m.latest,
                state=state,
                age=age,
                last_sample=m.last_sample,
                p95=m.p95,
                peak=m.peak,
                horizon=m.horizon,
                expiry=m.expiry,
            )
        loads[node] = NodeLoad(metrics=stats, source=source)
    return loads


def _json(resp: requests.Response) -> Any:
    try:
        return resp.json()
    except ValueError as exc:
        raise MalformedAnswer(f"not JSON: {exc}") from exc


# ---- the background client -----------------------------------------------------------------
_UNREADABLE = (-1, -1, -1)


class BearerToken:
    """A bearer token (the watcher's, or the one this replica's own API asks for): a fixed
    string, or a file re-read whenever it changes (a rotated Kubernetes Secret swaps the file
    under its mount)."""

    def __init__(self, token: str = "", path: str = "", what: str = "watcher token") -> None:
        self._token = token.strip()
        self._path = path
        self._what = what  # named in the warning about an unreadable file
        self._stamp: tuple[int, int, int] | None = None
        self.reads = 0

    def value(self) -> str:
        """The current token ("" for none); an unreadable file keeps the last one."""
        if self._path:
            self._reload()
        return self._token

    def headers(self) -> dict[str, str]:
        token = self.value()
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _reload(self) -> None:
        try:
            st = os.stat(self._path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if stamp == self._stamp:
                return
            token = Path(self._path).read_text().strip()
        except OSError as exc:
            if self._stamp != _UNREADABLE:  # once per change, not once per fetch
                log.warning("%s file %s: %s; keeping the last token", self._what, self._path, exc)
            self._stamp = _UNREADABLE
            return
        self._stamp = stamp
        if token:
            self._token = token
            self.reads += 1


class MetricsClient:
    def __init__(
        self,
        address: str | None,
        interval: float = 5.0,
        timeout: float = 2.0,
        max_backoff: float = 30.0,
        upstream_horizon: float = 120.0,
        token: BearerToken | None = None,
    ) -> None:
        self.address = (address or "").rstrip("/")
        self.token = token or BearerToken()
        self.interval = interval
        self.timeout = timeout
        self.max_backoff = max_backoff
        self.upstream_horizon = upstream_horizon
        self.mode = BALLAST
        self.fetches = 0
        self.failures = 0
        self.malformed = 0
        self.unauthorized = 0  # 401/403: the token is missing, wrong or not accepted
        self.last_success: float | None = None  # local time of the last good answer
        self.last_error: str | None = None
        self._session = requests.Session()
        self._etag: str | None = None
        self._fetched: dict[str, dict[str, _Metric]] = {}
        self._loads: dict[str, NodeLoad] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed_in_row = 0
        self._life = Lifecycle("metrics-client")
        # Called (on this client's thread) once loads with a newer sample than any before are in
        # place: the watcher polled. Its body changes every half second (ages), so a new ETag
        # is not a new sample; a sample read again keeps its time (keep_sample_times).
        self.on_new: Callable[[], None] | None = None
        self._newest = -math.inf  # the newest sample time fetched so far (local clock)

    def loads(self) -> dict[str, NodeLoad]:
        """The newest node loads. Never blocks; an empty dict when nothing was ever fetched."""
        return self._loads

    def snapshot_age(self, now: float | None = None) -> float | None:
        if self.last_success is None:
            return None
        return (time.time() if now is None else now) - self.last_success

    def start(self) -> None:
        self._life.start(self._start)

    def _start(self) -> None:
        if not self.address:
            return  # no watcher configured: every node uses the allocation fallback
        self._thread = threading.Thread(target=self._run, name="metrics-client", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()  # first: a fetch in flight is not followed by another
        self._life.stop(self._halt, self.timeout + 1)

    def _halt(self) -> None:
        join(self._thread, self.timeout + 1)
        self._session.close()

    def refresh(self) -> bool:
        """One fetch; True when the answer was good (or unchanged). Never raises.

        Whatever the outcome, the loads are rebuilt so that states follow the data's age.
        """
        self.fetches += 1
        ok = False
        try:
            self._fetch()
            ok = True
        except MalformedAnswer as exc:
            self.malformed += 1
            self._failed(f"malformed answer: {exc}")
        except (requests.RequestException, ValueError) as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status in (401, 403):
                self.unauthorized += 1
                self._failed(f"HTTP {status}: check watcherToken / watcherTokenFile")
            else:
                self._failed(f"{type(exc).__name__}: {exc}")
        if ok:
            if self._failed_in_row:
                log.info("watcher %s answering again (%s API)", self.address, self.mode)
            self._failed_in_row = 0
            self.last_error = None
            self.last_success = time.time()
        self._loads = current_loads(self._fetched, self.mode, time.time())
        newest = newest_sample(self._fetched)
        if newest > self._newest + NEWER:
            self._newest = newest
            if self.on_new is not None:
                self.on_new()
        return ok

    def _failed(self, why: str) -> None:
        self.failures += 1
        self._failed_in_row += 1
        self.last_error = why
        if self._failed_in_row == 1:
            log.warning("watcher %s: %s; keeping the last good data", self.address, why)

    def _fetch(self) -> None:
        if self.mode == BALLAST:
            headers = self.token.headers()
            if self._etag:
                headers["If-None-Match"] = self._etag
            resp = self._session.get(
                self.address + "/api/v1/nodes", headers=headers, timeout=self.timeout
            )
            if resp.status_code == 304:
                return
            if resp.status_code == 404:
                log.info("watcher %s has no /api/v1: reading /watcher", self.address)
                self.mode = LOAD_WATCHER
                self._fetch()
                return
            resp.raise_for_status()
            fetched_at = time.time()
            self._fetched = keep_sample_times(parse_ballast(_json(resp), fetched_at), self._fetched)
            self._etag = resp.headers.get("ETag")
            return
        resp = self._session.get(
            self.address + "/watcher", headers=self.token.headers(), timeout=self.timeout
        )
        resp.raise_for_status()
        now = time.time()
        self._fetched = parse_envelope(_json(resp), now, now, self.upstream_horizon)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            wait = self.interval
            if self._failed_in_row:
                wait = min(self.interval * 2 ** (self._failed_in_row - 1), self.max_backoff)
            self._stop.wait(wait)
