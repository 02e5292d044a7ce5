"""Wires the rebalancer's parts and runs its rounds.

cache (watches) --nodes, pods, controllers--> round;  metrics client (thread) --loads--> round
round: classify -> hot streaks -> judge (the profile, on the cache's snapshot) -> limits ->
       Eviction + Events;  leader elector gates the writes;  /metrics, /status, /decisions.

Every replica observes (streaks need history, so a standby that takes over can act without
waiting), only the leader evicts. A new leader first reads back which nodes are resting from the
Events any leader wrote, and every replica reads which workloads are short a replica from their
controllers' status in the cache: a failover evicts nothing twice.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from scheduler.backend.cache import ClusterCache
from scheduler.backend.metrics_client import BearerToken, MetricsClient
from scheduler.backend.profiles_client import ProfilesClient
from scheduler.backend.recent import RecentlyBound
from scheduler.framework import CPU, PodInfo, Snapshot
from scheduler.framework.profile import Profile
from scheduler.kube.leader import LeaderElector
from scheduler.rebalancer import evictions, limits
from scheduler.rebalancer.classify import HOT, UNKNOWN, Classification, HotStreaks, classify
from scheduler.rebalancer.judge import Judge, Move
from scheduler.rebalancer.settings import RebalancerConfig
from scheduler.rebalancer.status import (
    EVICT,
    SKIP,
    WOULD_EVICT,
    Decision,
    DecisionLog,
    StatusServer,
    Telemetry,
)
from scheduler.rebalancer.victims import Estimator, Workload
from shared.lifecycle import Lifecycle, join

log = logging.getLogger(__name__)

DEFAULT_WINDOW_S = 300.0  # the watcher's default window, when its answer names no expiry
STOP_GRACE = 3.0
DRY_RUN, KILL_SWITCH, RATE_LIMIT = "dry-run", "kill-switch", "rate-limit"
NO_HISTORY = "leader-history-unreadable"


@dataclass
class Options:
    listen: str | None = None  # "HOST:PORT" of /metrics, /status, /decisions; None: off
    watcher_interval: float = 5.0
    watcher_timeout: float = 2.0
    watcher_max_backoff: float = 30.0
    provider_lag: float = 15.0
    sync_timeout: float = 60.0
    identity: str = ""


class _Quiet:
    """The cache's listener: the rebalancer places no pod, it only reads."""

    def pod_pending(self, pod: PodInfo) -> None:
        pass

    def pod_bound(self, pod: PodInfo) -> None:
        pass

    def pod_gone(self, uid: str) -> None:
        pass

    def cluster_changed(self) -> None:
        pass


class Rebalancer:
    def __init__(
        self,
        cfg: RebalancerConfig,
        api: client.ApiClient,
        profiles: dict[str, Profile],
        options: Options | None = None,
    ) -> None:
        self.cfg = cfg
        self.settings = s = cfg.rebalancer
        self.options = opts = options or Options()
        self.identity = opts.identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.profile = profiles[s.profile]
        sched = cfg.scheduler
        self.cache = ClusterCache(api, (), _Quiet())
        self.metrics = MetricsClient(
            sched.watcher_address,
            interval=opts.watcher_interval,
            timeout=opts.watcher_timeout,
            max_backoff=opts.watcher_max_backoff,
            token=BearerToken(sched.watcher_token, sched.watcher_token_file),
        )
        # What each workload's replicas use: the victims' predictions, as the scheduler's.
        self.profiles_client = ProfilesClient(
            sched.watcher_address,
            timeout=opts.watcher_timeout,
            headers=BearerToken(sched.watcher_token, sched.watcher_token_file).headers,
        )
        self.estimator = Estimator.for_profile(self.profile, self.profiles_client.profiles)
        # Our moves, counted on their targets until the window shows the replacement there.
        self.recent = RecentlyBound(opts.provider_lag, max_age=DEFAULT_WINDOW_S)
        self.writer = evictions.Writer(api, self.identity)
        self.in_flight = limits.InFlight()
        self.bucket = limits.TokenBucket(s.evictions_per_minute, s.max_per_round)
        self.cooldowns = limits.Cooldowns()
        self.streaks = HotStreaks()
        self.judge = Judge(self.profile, s, self.estimator, self._busy)
        self.telemetry = Telemetry()
        self.decisions = DecisionLog()
        le = sched.leader_election
        self.elector: LeaderElector | None = None
        if le.leader_elect:
            self.elector = LeaderElector(
                api,
                le.resource_namespace,
                s.lease_name,
                self.identity,
                le.lease_duration,
                le.renew_deadline,
                le.retry_period,
            )
        self._restored_term: int | None = None
        self.last: dict[str, Any] = {}
        self.server: StatusServer | None = None
        if opts.listen:
            host, _, port = opts.listen.rpartition(":")
            self.server = StatusServer(
                host or "0.0.0.0",
                int(port),
                self.telemetry,
                self.decisions,
                self.status,
                self.health,
            )
        self._life = Lifecycle("rebalancer")
        self._loop = threading.Thread(target=self._run, name="rebalancer", daemon=True)

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._life.start(self._start)

    def _start(self) -> None:
        if self.server is not None:
            self.server.start()
        self.metrics.start()
        self.profiles_client.start()
        if self.elector is not None:
            self.elector.start()
        self.cache.start()
        self._loop.start()
        log.info(
            "rebalancer %s judging with profile %s", self.identity, self.profile.scheduler_name
        )

    def stop(self, grace: float = STOP_GRACE) -> None:
        self._life.stop(lambda: self._stop(grace), grace)

    def _stop(self, grace: float) -> None:
        deadline = time.monotonic() + grace

        def left() -> float:
            return max(0.0, deadline - time.monotonic())

        join(self._loop, left())  # a round in progress finishes its current write
        if self.elector is not None:
            self.elector.stop(release=True, timeout=left())
        self.metrics.stop()
        self.profiles_client.stop()
        self.cache.stop(timeout=left())
        if self.server is not None:
            self.server.stop()

    def _run(self) -> None:
        stopping = self._life.stopping
        while not stopping.is_set() and not self.cache.wait_synced(0.2):
            pass
        while not stopping.is_set():
            try:
                self.round()
            except Exception:  # noqa: BLE001 - one bad round must not end the rebalancer
                log.exception("rebalancing round failed")
            stopping.wait(self.settings.interval)

    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def health(self) -> tuple[bool, str]:
        if not self._loop.is_alive():
            return False, "rebalancing loop not running"
        if not self.cache.wait_synced(0):
            return False, "cache not synced"
        return True, f"ok ({'leader' if self.leading() else 'standby'})"

    def status(self) -> dict[str, Any]:
        s = self.settings
        return {
            "identity": self.identity,
            "leading": self.leading(),
            "dryRun": s.dry_run,
            "enabled": self.enabled(),
            "profile": self.profile.scheduler_name,
            "consecutive": s.consecutive,
            "lastRound": self.last,
        }

    def enabled(self) -> bool:
        s = self.settings
        return s.enabled and not (s.kill_switch_file and os.path.exists(s.kill_switch_file))

    # --- one round ----------------------------------------------------------------------
    def round(self) -> dict[str, Any]:
        """Observe, and when leading, plan and evict; returns the round's summary."""
        s = self.settings
        now = time.time()
        leading = self.leading()
        loads = self.metrics.loads()
        wanted = s.node_selector.items()
        with self.cache.lock:
            names = [n.name for n in self.cache.nodes.values() if wanted <= n.labels.items()]
        view = classify(names, loads, s.rules, s.threshold_mode)
        self.streaks.observe(view)
        self.cooldowns.prune(now)
        hot = view.nodes(HOT)
        confirmed = [
            n
            for n in self.streaks.confirmed(s.consecutive)
            if view.state.get(n) == HOT and not self.cooldowns.active(n, now)
        ]
        t = self.telemetry
        t.hot.set(len(hot))
        t.confirmed.set(len(confirmed))
        t.unknown.set(len(view.nodes(UNKNOWN)))
        t.leader.set(1 if leading else 0)
        t.rounds.labels("leader" if leading else "standby").inc()
        summary: dict[str, Any] = {
            "time": now,
            "leading": leading,
            "hot": {n: self.streaks.count.get(n, 0) for n in hot},
            "confirmed": confirmed,
            "unknown": dict(view.why_unknown),
            "resting": dict(self.cooldowns.until),
            "high": view.high,
            "low": view.low,
            "evicted": [],
            "wouldEvict": [],
        }
        self.last = summary
        if not leading or not confirmed:
            return summary
        if not self._restore_history():
            self._skip("", "", NO_HISTORY)
            return summary
        confirmed = [n for n in confirmed if not self.cooldowns.active(n, now)]
        with self.cache.lock:
            snap = Snapshot(
                nodes=self.cache.nodes,
                loads=loads,
                now=now,
                recent_cpu_m=dict(self.recent.cpu_by_node(loads, now)),
                cluster=self.cache.index,
            )
            plan = self.judge.plan(view, confirmed, snap)
        for skip in plan.skips:
            self._skip(skip.node, skip.pod, skip.reason, skip.detail)
        for move in plan.moves:
            self._act(move, view, now, summary)
        return summary

    def _busy(self, workload: Workload) -> bool:
        return limits.workload_busy(workload, self.cache.index, self.in_flight)

    def _restore_history(self) -> bool:
        """Once per leadership term: the resting nodes a previous leader left."""
        term = self.elector.transitions if self.elector is not None else 0
        if self._restored_term == term:
            return True
        try:
            resting = self.writer.resting_nodes()
        except Exception as exc:  # noqa: BLE001 - unknown history: evict nothing this round
            log.warning("cannot read the rebalancer's past evictions: %s", exc)
            return False
        for node, until in resting.items():
            self.cooldowns.start(node, until, 0.0)
        self._restored_term = term
        return True

    def _act(self, move: Move, view: Classification, now: float, summary: dict) -> None:
        s = self.settings
        pod, t = move.pod, self.telemetry
        held = DRY_RUN if s.dry_run else "" if self.enabled() else KILL_SWITCH
        if held:
            t.would_evict.inc()
            summary["wouldEvict"].append(pod.key)
            self._log(WOULD_EVICT, move.source, pod.key, held, move.note(), move.target)
            return
        if not self.bucket.take():
            self._skip(move.source, pod.key, RATE_LIMIT)
            return
        outcome = self.writer.evict(pod)
        if outcome.result != evictions.EVICTED:
            self._skip(move.source, pod.key, outcome.result, outcome.detail)
            return
        resource = max(move.high, key=lambda r: move.source_usage.get(r, 0.0) - move.high[r])
        t.evictions.labels(f"{resource}-hot").inc()
        cooldown = s.cooldown or view.window.get(move.source) or DEFAULT_WINDOW_S
        cooldown += self.options.provider_lag
        self.cooldowns.start(move.source, now, cooldown)
        self.streaks.reset(move.source)
        self.in_flight.add(move.workload, pod.uid)
        self.recent.record(pod.uid, move.target, self.estimator.use(pod, CPU), now)
        note = f"{move.note()}; node rests {cooldown:.0f}s"
        self.writer.tell(pod, move.source, note, now + cooldown)
        summary["evicted"].append(pod.key)
        self._log(EVICT, move.source, pod.key, f"{resource}-hot", note, move.target)
        log.info("evicted %s: %s", pod.key, note)

    def _skip(self, node: str, pod: str, reason: str, detail: str = "") -> None:
        self.telemetry.skipped.labels(reason).inc()
        self._log(SKIP, node, pod, reason, detail)

    def _log(
        self, action: str, node: str, pod: str, reason: str, detail: str = "", target: str = ""
    ) -> None:
        self.decisions.add(Decision(time.time(), action, node, pod, reason, detail, target))
