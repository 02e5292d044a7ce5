"""One round of the rebalancer: observe every node, and when leading, plan and carry out.

classify the watcher's loads -> the rests' evidence (a rest ends early on post-move samples
still hot: rest.py) and our replacements bound since (booked where they went: replacements.py)
-> the saturated nodes (CPU samples pinned at capacity, hot at once:
saturation.py) -> hot streaks (CPU, GPU) -> the nodes confirmed hot and not resting -> the
judge's plan on the cache's snapshot -> each move to the actor; a node whose move
failed is planned again in the same round without the pod (or workload) set aside, at most
REPLANS times. Every replica observes (streaks need history); only the leader plans, once it
has read back which nodes a previous leader left resting (the Events), and never when that
history cannot be read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.backend.cache import ClusterCache
from scheduler.backend.gpus_client import GpusClient
from scheduler.backend.metrics_client import MetricsClient
from scheduler.framework import PodInfo, Snapshot
from scheduler.framework.gpus import GpuStats
from scheduler.framework.profile import Profile
from scheduler.rebalancer import evictions, limits, replacements, saturation
from scheduler.rebalancer.actor import ACTED, NOT_LEADING, NOT_RECORDED, NOT_TRIED, Actor, Memory
from scheduler.rebalancer.classify import HOT, UNKNOWN, Classification, classify, classify_gpus
from scheduler.rebalancer.judge import PROVIDER_LAG_S, RECENT_MAX_AGE_S, Judge, Plan
from scheduler.rebalancer.settings import RebalancerSettings
from scheduler.rebalancer.status import Telemetry
from scheduler.rebalancer.victims import Estimator, Workload, workload_ineligible, workload_of

log = logging.getLogger(__name__)

NO_HISTORY = "leader-history-unreadable"
REPLANS = 10  # a node re-planned at most this often in a round (each failure sets a pod aside)


@dataclass(frozen=True)
class Judging:
    """What the judge needs of the scheduler's configuration."""

    profile: Profile  # the judging profile
    profiles: dict[str, Profile]  # each judged scheduler's own
    estimator: Estimator
    percentage: int  # percentageOfNodesToScore
    provider_lag: float = PROVIDER_LAG_S  # the scheduler's --provider-lag (the rebalancer's flag)
    recent_max_age: float = RECENT_MAX_AGE_S  # its --recent-max-age (the rebalancer's flag too)


class Rounds:
    def __init__(
        self,
        settings: RebalancerSettings,
        cache: ClusterCache,
        metrics: MetricsClient,
        gpus_client: GpusClient,
        gpu_names: tuple[str, ...] | None,
        memory: Memory,
        judging: Judging,
        actor: Actor,
        telemetry: Telemetry,
        leading: Callable[[], bool],
        term: Callable[[], int],
        lost: threading.Event,
    ) -> None:
        """`leading`: whether this replica leads now; `term`: the leadership term (history is
        read back once per term); `lost`: set when the Lease went to another."""
        self.settings = settings
        self.cache = cache
        self.metrics = metrics
        self.gpus_client = gpus_client
        self.gpu_names = gpu_names
        self.memory = memory
        self.actor = actor
        self.telemetry = telemetry
        self.leading = leading
        self.term = term
        self.lost = lost
        self.last: dict[str, Any] = {}
        self._restored_term: int | None = None
        self._why_busy: dict[str, str] = {}  # workload key -> the reason busy() said yes
        self.clock: Callable[[], float] = time.time  # Unix time: the watcher's sample times
        # Each judged scheduler's pods by its own profile, with the cycle's sampling at scale.
        self.judge = Judge(
            judging.profile,
            settings,
            judging.estimator,
            self._busy,
            gpu_names or (),
            self._set_aside,
            judging.profiles,
            judging.percentage,
            judging.provider_lag,
            judging.recent_max_age,
        )

    def run(self) -> dict[str, Any]:
        """Observe, and when leading, plan and evict; returns the round's summary."""
        s = self.settings
        now = self.clock()
        leading = self.leading()
        loads = self.metrics.loads()
        wanted = s.node_selector.items()
        rests = self.memory.cooldowns
        rests.prune(now)
        with self.cache.lock:
            names = [n.name for n in self.cache.nodes.values() if wanted <= n.labels.items()]
        view = classify(names, loads, s.rules, s.threshold_mode)
        # A rest ends early when samples newer than its victims' going show the node hot still;
        # until its recorded end the node is judged on those samples (rest.py).
        with self.cache.lock:
            ended = rests.observe(view, now, self.cache.index.pods, s.consecutive, s.saturated)
            # Our replacements bound since: booked on the node they went to (replacements.py).
            self.memory.replacements.observe(self.cache.index, now)
        rests.judged(view)
        # Saturated on its newest samples, or on the one that ended its rest: hot at once.
        saturated = self.memory.saturation.observe(view, s.saturated, s.consecutive)
        saturation.mark(view, {**saturated, **rests.saturated()})
        self.memory.streaks.observe(view)
        for node, why in ended.items():
            self.memory.streaks.proven(node, s.consecutive)
            self.actor.rest_ended(node, why, rests.reason(node))
        for node in view.saturated:
            if view.state.get(node) == HOT:
                self.memory.streaks.proven(node, s.consecutive)
        gpu_hot, gpu_view = {}, Classification()
        if self.gpu_names is not None:
            gpu_hot, gpu_view = classify_gpus(names, self.gpus_client.gpus(), now, s.gpu)
        self.memory.gpu_streaks.observe(gpu_view)
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
            "saturated": dict(view.saturated),
            "gpuHot": {n: self.memory.gpu_streaks.count.get(n, 0) for n in gpu_hot},
            "confirmed": confirmed,
            "unknown": dict(view.why_unknown),
            "resting": dict(self.memory.cooldowns.until),
            "restEnded": rests.ended(),
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
        self.act(view, confirmed, loads, now, gpu_hot, gpu_only, summary)
        return summary

    def act(
        self,
        view: Classification,
        nodes: list[str],
        loads: Any,
        now: float,
        gpu_hot: dict[str, list[GpuStats]],
        gpu_only: frozenset[str],
        summary: dict[str, Any],
    ) -> None:
        """Plan the confirmed nodes and carry the moves out; a node whose move failed is planned
        again without the pod set aside, unless it rests now (a move of its went, or may have
        gone: one with no answer)."""
        spent = limits.RoundBudget(self.settings)
        logged: set[tuple[str, str, str]] = set()
        for _ in range(REPLANS):
            plan = self._plan(view, nodes, loads, now, gpu_hot, gpu_only)
            nodes = self._carry_out(plan, view, now, summary, spent, logged)
            nodes = [n for n in nodes if not self.memory.cooldowns.active(n, now)]
            if not nodes or self.lost.is_set():
                break

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
                recent_cpu_m=self.memory.replacements.cpu_by_node(loads, now),
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
            if self.lost.is_set():
                return []
            if move.source in again:
                continue  # planned with the failed move's relief: the node is planned again
            refused = spent.refusal(move.source, move.pod.namespace, move.workload)
            if refused:
                self.actor.skip(move.source, move.pod.key, refused)
                continue
            with self.cache.lock:
                placed = replacements.siblings(self.cache.index, move.workload)
            result = self.actor.act(move, view, now, summary, placed)
            if result in ACTED:
                spent.spend(move.source, move.pod.namespace, move.workload)
            elif result in (NOT_LEADING, NOT_RECORDED):
                return []
            elif result not in NOT_TRIED and move.source not in again:
                again.append(move.source)  # set aside: the node's next move, this round
        return again

    def _set_aside(self, pod: PodInfo) -> str:
        """Why the judge must pass this pod over: its eviction failed in this rest period."""
        return limits.SET_ASIDE if self.memory.aside.why(pod.uid, self.clock()) else ""

    def _busy(self, workload: Workload) -> bool:
        """Whether the judge must pass the workload over, the reason kept for its skip."""
        index = self.cache.index
        why = ""
        # Refused in this rest period: not asked again (the failure itself was logged once).
        why = limits.SET_ASIDE if self.memory.aside.why(workload.key, self.clock()) else ""
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
        term = self.term()
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
