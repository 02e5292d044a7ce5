"""Wires the rebalancer's parts, runs its rounds and plans each one.

cache (watches) --nodes, pods, controllers--> round;  metrics client (thread) --loads--> round
round: classify -> hot streaks -> judge (the profiles, on the cache's snapshot) -> limits ->
       actor (actor.py: Eviction + Events);  leader elector gates the writes;
       /metrics, /status, /decisions.

Every replica observes (streaks need history, so a standby that takes over can act without
waiting), only the leader evicts: the Lease is renewed right before each Eviction call and the
call must end before the renew deadline, with a margin of one retry period; a Lease seen in
another's hands ends the round at once and the process exits (as the scheduler does), so its
restart comes back as a standby with fresh state.

No failed eviction blocks a node: the actor sets a failed move's pod (or workload) aside for
the node's rest period, and the round plans the node again without it and goes on to its next
candidate, within the round's limits; a workload whose budget is at its limit (its status in
the cache says so) is passed over without asking. An intent that cannot be recorded, or a
leadership that cannot be confirmed, ends the round.

A new leader first reads back which nodes are resting from the Events any leader wrote, and
every replica reads which workloads are short a replica from their controllers' status in the
cache: a failover evicts nothing twice.
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
from scheduler.backend.gpus_client import GpusClient
from scheduler.backend.metrics_client import BearerToken, MetricsClient
from scheduler.backend.profiles_client import ProfilesClient
from scheduler.backend.recent import RecentlyBound
from scheduler.framework import PodInfo, Snapshot
from scheduler.framework.clusterindex import DEPLOYMENTS
from scheduler.framework.gpus import GpuStats
from scheduler.framework.profile import Profile
from scheduler.kube.leader import LeaderElector
from scheduler.rebalancer import evictions, gpuhot, limits
from scheduler.rebalancer.actor import (
    ACTED,
    DEFAULT_WINDOW_S,
    NOT_LEADING,
    NOT_RECORDED,
    NOT_TRIED,
    Actor,
    Memory,
)
from scheduler.rebalancer.classify import (
    HOT,
    UNKNOWN,
    Classification,
    HotStreaks,
    classify,
    classify_gpus,
)
from scheduler.rebalancer.judge import Judge, Plan
from scheduler.rebalancer.settings import RebalancerConfig
from scheduler.rebalancer.status import (
    DecisionLog,
    StatusServer,
    Telemetry,
)
from scheduler.rebalancer.victims import Estimator, Workload, workload_ineligible, workload_of
from shared.lifecycle import Lifecycle, join

log = logging.getLogger(__name__)

STOP_GRACE = 3.0
NO_HISTORY = "leader-history-unreadable"
REPLANS = 10  # a node re-planned at most this often in a round (each failure sets a pod aside)


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
        # Deployments too: their opt-out annotation, up the owner chain, without a GET per pod.
        self.cache = ClusterCache(api, (), _Quiet(), more_kinds=(DEPLOYMENTS,))
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
        # What the rounds remember: our moves' effects (the replacements counted on their
        # targets until the window shows them there), rests, streaks, failures set aside.
        self.memory = mem = Memory(
            bucket=limits.TokenBucket(s.evictions_per_minute, s.max_per_round),
            cooldowns=limits.Cooldowns(),
            aside=limits.SetAside(),
            in_flight=limits.InFlight(),
            recent=RecentlyBound(opts.provider_lag, max_age=DEFAULT_WINDOW_S),
            streaks=HotStreaks(),
            gpu_streaks=HotStreaks(),
        )
        self._why_busy: dict[str, str] = {}  # workload key -> the reason busy() said yes
        # GPU-hot nodes (gpuhot.py), only when the judging profile uses GpuLoad: their own
        # streaks, on the GPUs' sample times, and the watcher's GPU windows fetched for them.
        self.gpu_names = gpuhot.gpu_resource_names(self.profile)
        self.gpus_client = GpusClient(
            sched.watcher_address if self.gpu_names is not None else None,
            interval=opts.watcher_interval,
            timeout=opts.watcher_timeout,
            idle=max(1.0, 2 * opts.watcher_interval),
            headers=BearerToken(sched.watcher_token, sched.watcher_token_file).headers,
        )
        # Each judged scheduler's pods by its own profile, with the cycle's sampling at scale.
        self.judge = Judge(
            self.profile,
            s,
            self.estimator,
            self._busy,
            self.gpu_names or (),
            self._set_aside,
            {name: profiles[name] for name in s.schedulers if name in profiles},
            sched.percentage_of_nodes_to_score,
        )
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
                on_lost=self._lost_lease,
            )
        self.lost_lease = threading.Event()
        self._restored_term: int | None = None
        self._life = Lifecycle("rebalancer")
        self.actor = Actor(
            s,
            evictions.Writer(api, self.identity),
            mem,
            self.estimator,
            self.telemetry,
            self.decisions,
            self._confirm,
            self.enabled,
            self._life.stopping,
            opts.provider_lag,
        )
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
        self._loop = threading.Thread(target=self._run, name="rebalancer", daemon=True)

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._life.start(self._start)

    def _start(self) -> None:
        if self.server is not None:
            self.server.start()
        self.metrics.start()
        self.profiles_client.start()
        self.gpus_client.start()
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
        self.gpus_client.stop()
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
        return not self.lost_lease.is_set() and (self.elector is None or self.elector.is_leader())

    def _lost_lease(self) -> None:
        # As the scheduler: stop at once; the CLI exits so that the restart starts clean.
        log.error("%s lost the rebalancer's lease: no eviction from here on", self.identity)
        self.lost_lease.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the lease to be lost; True when it was."""
        return self.lost_lease.wait(timeout)

    def _confirm(self) -> float:
        """Seconds an eviction call may take from now, the Lease confirmed ours that long."""
        if self.elector is None:
            return sum(evictions.REQUEST_TIMEOUT)
        if self.lost_lease.is_set():
            return 0.0
        return self.elector.confirm(margin=self.elector.retry_period)

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
        self.memory.streaks.observe(view)
        gpu_hot, gpu_view = {}, Classification()
        if self.gpu_names is not None:
            gpu_hot, gpu_view = classify_gpus(names, self.gpus_client.gpus(), now, s.gpu)
        self.memory.gpu_streaks.observe(gpu_view)
        self.memory.cooldowns.prune(now)
        hot = view.nodes(HOT)
        confirmed = [
            n
            for n in self.memory.streaks.confirmed(s.consecutive)
            if view.state.get(n) == HOT and not self.memory.cooldowns.active(n, now)
        ]
        # Confirmed on its GPUs and not on its CPU: hot for GPU pods only.
        gpu_only = frozenset(
            n
            for n in self.memory.gpu_streaks.confirmed(s.consecutive)
            if n in gpu_hot and n not in confirmed and not self.memory.cooldowns.active(n, now)
        )
        confirmed += sorted(gpu_only)
        t = self.telemetry
        t.hot.set(len(hot))
        t.confirmed.set(len(confirmed))
        t.unknown.set(len(view.nodes(UNKNOWN)))
        t.leader.set(1 if leading else 0)
        t.rounds.labels("leader" if leading else "standby").inc()
        summary: dict[str, Any] = {
            "time": now,
            "leading": leading,
            "hot": {n: self.memory.streaks.count.get(n, 0) for n in hot},
            "gpuHot": {n: self.memory.gpu_streaks.count.get(n, 0) for n in gpu_hot},
            "confirmed": confirmed,
            "unknown": dict(view.why_unknown),
            "resting": dict(self.memory.cooldowns.until),
            "high": view.high,
            "low": view.low,
            "evicted": [],
            "wouldEvict": [],
        }
        self.last = summary
        if not leading or not confirmed:
            return summary
        if not self._restore_history():
            self.actor.skip("", "", NO_HISTORY)
            return summary
        self.memory.aside.prune(now)
        confirmed = [n for n in confirmed if not self.memory.cooldowns.active(n, now)]
        spent = limits.RoundBudget(s)
        logged: set[tuple[str, str, str]] = set()
        nodes = confirmed
        for _ in range(REPLANS):
            plan = self._plan(view, nodes, loads, now, gpu_hot, gpu_only)
            # A node whose move a budget refused is planned again without that workload.
            nodes = self._carry_out(plan, view, now, summary, spent, logged)
            if not nodes or self.lost_lease.is_set():
                break
        return summary

    def _plan(
        self,
        view: Classification,
        nodes: list[str],
        loads: Any,
        now: float,
        gpu_hot: dict[str, list[GpuStats]] | None = None,
        gpu_only: frozenset[str] = frozenset(),
    ) -> Plan:
        self._why_busy.clear()
        with self.cache.lock:
            snap = Snapshot(
                nodes=self.cache.nodes,
                loads=loads,
                now=now,
                recent_cpu_m=dict(self.memory.recent.cpu_by_node(loads, now)),
                cluster=self.cache.index,
            )
            plan = self.judge.plan(view, nodes, snap, gpu_hot, gpu_only)
            # The judge says "workload-unavailable" for every workload busy() turned away; the
            # skip carries busy()'s own reason (pdb, min-replicas, ...).
            for skip in plan.skips:
                if skip.reason != limits.WORKLOAD_UNAVAILABLE:
                    continue
                node = snap.nodes.get(skip.node)
                pods = node.pods.values() if node is not None else ()
                pod = next((p for p in pods if p.key == skip.pod), None)
                workload = workload_of(pod) if pod is not None else None
                if workload is not None:
                    skip.reason = self._why_busy.get(workload.key, skip.reason)
        return plan

    def _carry_out(
        self,
        plan: Plan,
        view: Classification,
        now: float,
        summary: dict,
        spent: limits.RoundBudget,
        logged: set[tuple[str, str, str]],
    ) -> list[str]:
        """The plan's skips logged (once a round each) and its moves made; the nodes whose
        move failed, to be planned again without the pod set aside."""
        for skip in plan.skips:
            if (skip.node, skip.pod, skip.reason) not in logged:
                logged.add((skip.node, skip.pod, skip.reason))
                self.actor.skip(skip.node, skip.pod, skip.reason, skip.detail)
        again: list[str] = []
        for move in plan.moves:
            if self.lost_lease.is_set():
                return []
            if move.source in again:
                continue  # planned with the failed move's relief: the node is planned again
            refused = spent.refusal(move.source, move.pod.namespace, move.workload)
            if refused:
                self.actor.skip(move.source, move.pod.key, refused)
                continue
            result = self.actor.act(move, view, now, summary)
            if result in ACTED:
                spent.spend(move.source, move.pod.namespace, move.workload)
            elif result in (NOT_LEADING, NOT_RECORDED):
                return []
            elif result not in NOT_TRIED and move.source not in again:
                again.append(move.source)  # set aside: the node's next move, this round
        return again

    def _set_aside(self, pod: PodInfo) -> str:
        """Why the judge must pass this pod over: its eviction failed in this rest period."""
        return limits.SET_ASIDE if self.memory.aside.why(pod.uid, time.time()) else ""

    def _busy(self, workload: Workload) -> bool:
        """Whether the judge must pass the workload over, the reason kept for its skip."""
        index = self.cache.index
        why = ""
        # Refused in this rest period: not asked again (the failure itself was logged once).
        why = limits.SET_ASIDE if self.memory.aside.why(workload.key, time.time()) else ""
        why = why or workload_ineligible(workload, index, self.settings)
        if not why and limits.budget_at_limit(workload, index):
            why = evictions.PDB
        if not why and limits.workload_busy(workload, index, self.memory.in_flight):
            why = limits.WORKLOAD_UNAVAILABLE
        if why:
            self._why_busy[workload.key] = why
        return bool(why)

    def _restore_history(self) -> bool:
        """Once per leadership term: the resting nodes a previous leader left."""
        term = self.elector.transitions if self.elector is not None else 0
        if self._restored_term == term:
            return True
        try:
            resting = self.actor.writer.resting_nodes()
        except Exception as exc:  # noqa: BLE001 - unknown history: evict nothing this round
            log.warning("cannot read the rebalancer's past evictions: %s", exc)
            return False
        for node, until in resting.items():
            self.memory.cooldowns.start(node, until, 0.0)
        self._restored_term = term
        return True
