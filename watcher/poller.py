"""The poller: an APScheduler job that fetches, validates, windows and stores, on one replica.

Exactly one poller is active across replicas sharing Redis: each tick takes or renews a lock
with a TTL; a replica that finds the lock held does nothing, and takes over once it expires.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections import Counter
from typing import Any

from apscheduler.executors.base import BaseExecutor, run_job
from apscheduler.schedulers.background import BackgroundScheduler

from shared.lifecycle import Lifecycle
from watcher import defaults, snapshot
from watcher.config import Config
from watcher.errors import ProviderError, StoreError
from watcher.lacking import Lacking
from watcher.nodenames import NodeNamer
from watcher.nodepeaks import NodePeaks
from watcher.providers.base import Fetch, Provider
from watcher.store import Store
from watcher.validate import validate
from watcher.window import Frame, Window

log = logging.getLogger(__name__)
logging.getLogger("apscheduler").setLevel(logging.WARNING)


class DaemonExecutor(BaseExecutor):
    """Runs each job on a daemon thread of its own. APScheduler's thread pool is joined at
    interpreter exit, so a poll stuck on a provider that never answers would hold a stopping
    process for the provider's whole timeout; a stopped poller's jobs may simply be dropped."""

    def _do_submit_job(self, job: Any, run_times: list[dt.datetime]) -> None:
        def run() -> None:
            try:
                events = run_job(job, job._jobstore_alias, run_times, self._logger.name)
            except BaseException as exc:  # noqa: BLE001 - handed to APScheduler, as its pool does
                self._run_job_error(job.id, exc, exc.__traceback__)
            else:
                self._run_job_success(job.id, events)

        threading.Thread(target=run, name=f"poller-{job.id}", daemon=True).start()


class Poller:
    def __init__(
        self, config: Config, provider: Provider, store: Store, namer: NodeNamer, holder: str
    ) -> None:
        self.config = config
        self.provider = provider
        self.store = store
        self.namer = namer
        self.holder = holder
        self.specs = config.metric_specs()
        self.window = Window(config.window)
        # Each node's max over its last 72 buckets (3 days by default), for the peak model.
        self.peaks = NodePeaks(config.peak_bucket_seconds)
        self.leading = False
        self.seq = 0
        self.last_poll: dict[str, Any] = {"time": None, "ok": False, "error": "no poll yet"}
        self.last_success: float | None = None
        self.last_tick_seconds = 0.0
        self.ticked_at: float | None = None  # every tick's start, standby or not (/healthz)
        self.polls = 0
        self.poll_seconds = 0.0
        self.poll_errors: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.partial_answers: Counter[str] = Counter()  # by metric key
        self.lacking = Lacking()
        self.store_errors = 0
        self._failures = 0
        self._retry_at = 0.0
        self._unsaved: list[Frame] = []  # warm-start frames, stored with the next poll
        self.pods: Any = None  # watcher.podpoller.PodPoller, polled after the node frame
        self.gpus: Any = None  # watcher.gpus.GpuPoller, polled after the pods
        self._logged: set[str] = set()
        self._tick_lock = threading.Lock()
        # Taking the lock and handing it back on stop exclude each other: a poll in flight
        # while the poller stops cannot take the lock again after the release.
        self._lock_lock = threading.Lock()
        self._scheduler: BackgroundScheduler | None = None
        self._life = Lifecycle("poller")

    # -- scheduling ---------------------------------------------------------------------------
    def start(self) -> None:
        self._life.start(self._start)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop polling and hand the lock back; safe before, during or after start, and twice."""
        self._life.stop(self._stop, timeout)

    def _start(self) -> None:
        sched = BackgroundScheduler(daemon=True, executors={"default": DaemonExecutor()})
        sched.add_job(
            self.tick,
            "interval",
            seconds=self.config.poll_interval,
            jitter=self.config.poll_jitter or None,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=max(1, int(self.config.poll_interval)),
            next_run_time=dt.datetime.now(),
            id="poll",
        )
        # Renewal apart from polling, so a slow poll never lets the lock lapse.
        sched.add_job(
            self.renew,
            "interval",
            seconds=max(0.2, self.config.lock_ttl / 3),
            coalesce=True,
            max_instances=1,
            id="renew",
        )
        sched.start()
        self._scheduler = sched

    def _stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        with self._lock_lock:
            if self.leading:
                try:
                    self.store.release(self.holder)
                except StoreError:
                    pass  # the TTL frees it
            self.leading = False

    def _lead(self) -> bool:
        """Take or renew the lock, unless the poller is stopping."""
        with self._lock_lock:
            if self._life.stopping.is_set():
                return False
            return self.store.lead(self.holder, self.config.lock_ttl)

    def renew(self) -> None:
        if not self.leading:
            return
        try:
            self.leading = self._lead()
        except StoreError as exc:
            self.store_errors += 1
            self._log_once("store", f"renewing the poller lock failed: {exc}")
            return
        if self.leading and self._retry_at > time.time():
            # The store took a write, so it is back (restarted, or a Sentinel named a new
            # master): the next tick polls rather than waiting out a pause that doubled while
            # the store was away and could outlast the outage by up to BACKOFF_MAX.
            self._retry_at = 0.0

    # -- one poll -----------------------------------------------------------------------------
    def tick(self) -> None:
        self.ticked_at = time.time()
        with self._tick_lock:
            now = time.time()
            if now < self._retry_at or self._life.stopping.is_set():
                return
            start = time.perf_counter()
            try:
                if not self._lead():
                    if self.leading:
                        log.info("poller lock taken by %s; standing by", self.store.leader())
                    self.leading = False
                    return
                if not self.leading:
                    self._take_over(now)
                    self.leading = True
                self._poll(start)
            except StoreError as exc:
                self.store_errors += 1
                self._failures += 1
                backoff = self.config.poll_interval * 2 ** (self._failures - 1)
                pause = min(backoff, defaults.BACKOFF_MAX)
                self._retry_at = time.time() + pause
                self._log_once("store", f"store unavailable, retrying in {pause:.0f}s: {exc}")
                return
            self._failures = 0
            self._logged.discard("store")
            self.last_tick_seconds = time.perf_counter() - start

    def _take_over(self, now: float) -> None:
        frames = self.store.load_frames(now - self.config.window)
        if frames:
            self.window = Window(self.config.window)
            for frame in frames:
                self.window.add(frame)
                self.peaks.add(frame)
        elif not len(self.window) and self.config.warm_start:
            self._warm_start(now)
        log.info("poller %s active with %d frames in the window", self.holder, len(self.window))
        if self.pods is not None:
            self.pods.take_over()

    def _warm_start(self, now: float) -> None:
        try:
            history = self.provider.history(
                now - self.config.window, now, self.config.poll_interval
            )
        except ProviderError as exc:
            log.warning("warm start skipped: %s", exc)
            return
        for fetch in history:
            frame = self._frame(fetch, count=False)
            if frame is not None:
                self.window.add(frame)
                self.peaks.add(frame)
                self._unsaved.append(frame)

    def _frame(self, fetch: Fetch, count: bool = True) -> Frame | None:
        self.namer.refresh()
        by_metric: dict[str, dict[str, float]] = {}
        for spec in self.specs:
            raw = fetch.series.get(spec.key)
            if raw is None:
                continue
            accepted, rejected = validate(raw, spec.is_percent, self.namer)
            by_metric[spec.key] = accepted
            if count and rejected:
                self.rejected.update(rejected)
                self._log_once(
                    f"rejected:{spec.key}:{','.join(sorted(rejected))}",
                    f"{spec.key}: rejected samples {dict(rejected)}",
                )
        return Frame.build(fetch.time, by_metric) if by_metric else None

    def _poll(self, start: float) -> None:
        fetch = self.provider.fetch()
        for key, error in fetch.errors.items():
            self.poll_errors[error.reason] += 1
            self._log_once(f"provider:{key}:{error.reason}", f"query {key} failed: {error}")
        for key, note in fetch.partial.items():
            self.partial_answers[key] += 1
            self._log_once(f"partial:{key}", f"query {key}: partial answer ({note})")
        frame = self._frame(fetch)
        if frame is not None:
            self.window.add(frame)
            self.peaks.add(frame)
        self.window.trim(time.time())
        self.lacking.update(fetch, frame)
        ok = not fetch.errors
        if frame is not None:
            self.last_success = fetch.time
        if ok:
            self._logged = {k for k in self._logged if not k.startswith("provider:")}
        if not fetch.partial:
            self._logged = {k for k in self._logged if not k.startswith("partial:")}
        self.polls += 1
        duration = time.perf_counter() - start
        self.poll_seconds += duration
        self.last_poll = {
            "time": fetch.time,
            "ok": ok,
            "error": "; ".join(f"{k}: {e}" for k, e in fetch.errors.items()) or None,
            "duration": round(duration, 4),
            # The store's note per metric whose answer lacked data, and how many nodes are
            # missing from such answers (kept at their last window, aging: watcher/lacking.py).
            "partial": dict(fetch.partial) or None,
            "lacking": self.lacking.counts() or None,
        }
        nodes = snapshot.node_stats(
            self.window, self.specs, self.config, self.lacking.nodes, self.peaks
        )
        self.lacking.known(nodes)
        self.seq += 1
        version = f"{self.holder}:{self.seq}"
        doc = snapshot.build(
            version=version,
            built=time.time(),
            config=self.config,
            specs=self.specs,
            source=self.provider.source,
            nodes=nodes,
            last_poll=self.last_poll,
            last_success=self.last_success,
            leader=self.holder,
            counters=self.counters(),
        )
        frames = self._unsaved + ([frame] if frame is not None else [])
        if self._life.stopping.is_set():
            return  # the lock is handed back; whoever polls next writes the window
        self.store.save(frames, doc, version)
        self._unsaved = []
        if self.pods is not None:
            self.pods.poll()
        if self.gpus is not None:
            self.gpus.poll()

    def counters(self) -> dict[str, Any]:
        return {
            "polls": self.polls,
            "pollSeconds": round(self.poll_seconds, 4),
            "pollErrors": dict(self.poll_errors),
            "rejected": dict(self.rejected),
            "partialAnswers": dict(self.partial_answers),
            "storeErrors": self.store_errors,
        }

    def _log_once(self, cause: str, message: str) -> None:
        if cause not in self._logged:
            self._logged.add(cause)
            log.warning(message)
