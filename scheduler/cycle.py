"""One scheduling cycle, start to finish: the file to read to know what happens to a pod.

pop -> snapshot -> filter -> score -> pick -> assume -> bind (async) -> events

- pop: the queue hands over the most important pending pod (priority, then age).
- snapshot: the cache's nodes (under its lock, not copied), the metrics client's newest loads
  (never waits on the network), the predicted CPU of pods bound too recently to show and the
  workload profiles every prediction starts from (plugins/helpers/estimator.py).
- filter: the profile's filter plugins; on big clusters only until enough feasible nodes are
  found (percentageOfNodesToScore, kube-scheduler's adaptive rule), starting where the last
  cycle stopped so every node gets its turn.
- score: the profile's score plugins, weighted and summed.
- pick: the best total; ties broken at random so equal nodes share a burst.
- assume: the pod counts on the node in the cache at once (its requests, and its predicted
  CPU on top of the node's measured load), so the next cycle sees it.
- bind: handed to the binder's thread pool; the cycle goes on with the next pod.
- events: `Scheduled` when the API accepted the binding, `FailedScheduling` otherwise.
- post-filter: when no node fits, the profile's PostFilter plugins (DefaultPreemption) may
  nominate a node and name victims; the evictor deletes them off the cycle, and the pod waits
  for their deletion. Nominated pods of equal or higher priority count on their node for every
  later cycle, and a pod's own nominated node is tried first, as upstream does.
- record: with a decision store, each attempt's reasoning (counts, the top nodes' scores plugin
  by plugin, their load view, the winner's margin, preemption) for `ballast explain`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from scheduler.backend import decisions as outcomes
from scheduler.backend import explanation
from scheduler.backend.cache import take_snapshot
from scheduler.backend.decisions import DecisionStore
from scheduler.backend.nominations import Nominations
from scheduler.framework import (
    CycleState,
    NodeInfo,
    PodInfo,
    PostFilterResult,
    Snapshot,
    Status,
    resources,
)
from scheduler.framework.gpus import NO_GPUS, GpuLoads
from scheduler.framework.podusage import NO_POD_USAGE, PodUsage
from scheduler.framework.profile import FILTER_TALLY, Profile, ScoreParts
from scheduler.framework.sampling import nodes_to_find
from scheduler.framework.status import failure_message
from scheduler.framework.workloads import NO_PROFILES, WorkloadProfiles
from scheduler.kube import binder as binding
from scheduler.kube.events import SCHEDULER_ERROR
from scheduler.kube.evictor import Evictor, Finished
from scheduler.plugins.helpers import estimator
from scheduler.serve.status import ERROR, SCHEDULED, UNSCHEDULABLE, Telemetry

log = logging.getLogger(__name__)


def filter_pass(
    profile: Profile,
    pod: PodInfo,
    nodes: list[NodeInfo],
    snap: Snapshot,
    state: CycleState,
    start: int,
    percentage: int,
) -> tuple[list[NodeInfo], dict[str, Any], int]:
    """The filters over `nodes` from `start` on (wrapping round), until percentageOfNodesToScore's
    share of them is feasible: (feasible nodes, reasons, how many nodes were looked at).

    Each pass takes as many nodes as are still wanted, so no node beyond the last feasible one
    wanted is filtered, and the next cycle starts right after it: upstream's sequential rule
    (its next start moves by the feasible nodes found plus the rejected ones seen). A cluster
    where most nodes fit is filtered in one pass, not in fixed chunks."""
    total = len(nodes)
    wanted = nodes_to_find(total, percentage)
    feasible: list[NodeInfo] = []
    reasons: dict[str, Any] = {}
    seen = 0
    while seen < total and len(feasible) < wanted:
        size = min(wanted - len(feasible), total - seen)
        first = (start + seen) % total
        # the node list rotated to `first`, without copying the whole list
        chunk = nodes[first : first + size]
        if len(chunk) < size:
            chunk += nodes[: size - len(chunk)]
        seen += size
        ok, why = profile.filter(pod, chunk, snap, state)
        feasible.extend(ok)
        reasons.update(why)
    return feasible, reasons, seen


def pick_best(totals: np.ndarray, rng: random.Random) -> int:
    """The index of the node with the best total of a score pass; among equals (in node
    order), one chosen uniformly at random."""
    ties = np.flatnonzero(totals == totals.max())
    return int(ties[0]) if len(ties) == 1 else int(ties[rng.randrange(len(ties))])


def prediction_doc(guess: estimator.Estimate) -> dict[str, Any]:
    """The explain record's `prediction`: the figures and which estimate gave them."""
    return {
        "cpuM": guess.cpu_m,
        "memoryBytes": guess.memory,
        "source": guess.source,
        "workload": guess.workload or None,
    }


class Cycle:
    def __init__(
        self,
        profiles: dict[str, Profile],
        cache: Any,
        queue: Any,
        loads: Callable[[], dict[str, Any]],
        recent: Any,
        binder_factory: Callable[[binding.Outcome], binding.Binder],
        events: Any,
        telemetry: Telemetry,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        evictor_factory: Callable[[Finished], Evictor] | None = None,
        decisions: DecisionStore | None = None,
    ) -> None:
        self.profiles = profiles
        self.cache = cache
        self.queue = queue
        self.loads = loads
        self.recent = recent
        self.events = events
        self.telemetry = telemetry
        self.percentage = percentage_of_nodes_to_score
        self.rng = rng or random.Random()
        self.binder = binder_factory(self.binding_done)
        self._next_start = 0
        self._won: dict[str, int] = {}  # pod uid -> its node's winning score, until bound
        self.nominations = Nominations()
        self.evictor = evictor_factory(self.preemption_done) if evictor_factory else None
        if self.evictor is not None:
            queue.hold_while(self.evictor.running)  # woken by preemption_done
        self.decisions = decisions  # None: nothing recorded, nothing spent on it
        self._considered = 0  # nodes the last filter pass looked at
        # The watcher's workload profiles (backend/profiles_client.py); none until wired.
        self.workloads: Callable[[], WorkloadProfiles] = lambda: NO_PROFILES
        # The watcher's GPU windows (backend/gpus_client.py); none until wired.
        self.gpus: Callable[[], GpuLoads] = lambda: NO_GPUS
        # The watcher's per-pod statistics (backend/pods_client.py); none until wired.
        self.pod_usage: Callable[[], PodUsage] = lambda: NO_POD_USAGE

    def schedule_one(self, pod: PodInfo) -> str:
        """Schedule one popped pod; returns the attempt's result."""
        started = time.perf_counter()
        profile = self.profiles.get(pod.scheduler_name)
        if profile is None:  # the cache only queues our names; a profile removed at reload
            self.queue.remove(pod.uid)
            return ERROR
        try:
            result = self._attempt(pod, profile)
        except Exception as exc:  # noqa: BLE001 - one bad pod must not stop the scheduler
            log.exception("scheduling %s failed", pod.key)
            self.queue.requeue_backoff(pod)
            self.events.failed(
                pod, f"scheduler error: {type(exc).__name__}: {exc}", SCHEDULER_ERROR
            )
            result = ERROR
        self.telemetry.attempts.labels(result, profile.scheduler_name).inc()
        self.telemetry.latency.labels(result).observe(time.perf_counter() - started)
        return result

    def _attempt(self, pod: PodInfo, profile: Profile) -> str:
        if self.evictor is not None and self.evictor.running(pod.uid):
            # Its victims are being deleted: wait, silently, as upstream's PreEnqueue does.
            self.queue.unschedulable(pod)
            return UNSCHEDULABLE
        loads = self.loads()
        now = time.time()
        record = self.decisions
        with self.cache.lock:
            nodes = self.cache.node_list()
            snap = take_snapshot(self.cache, loads, self.recent, now)
            snap.workloads = self.workloads()
            snap.gpus = self.gpus()
            snap.pod_usage = self.pod_usage()
            state = CycleState()
            if record is not None:
                state[FILTER_TALLY] = {}
            feasible = self._nominated_fit(profile, pod, snap, state)
            self._considered = len(feasible)
            reasons: dict[str, Any] = {}
            if not feasible:
                feasible, reasons = self._filter(profile, pod, nodes, snap, state)
                if self.nominations:
                    feasible = self._leave_nominated_room(profile, pod, feasible, reasons, snap)
            if not feasible:
                message = failure_message(len(nodes), reasons, state)
                post = self._post_filter(profile, pod, snap, state, reasons, message)
                if post.message:
                    message = f"{message} {post.message}"
                if record is not None:
                    counts = self._node_counts(len(nodes), 0, 0)
                    guess = self.estimate(pod)
                    detail = explanation.unschedulable(
                        pod, counts, reasons, state, message, post, guess.cpu_m
                    )
                    detail["prediction"] = prediction_doc(guess)
                    outcome = outcomes.PREEMPTING if post.nominated_node else outcomes.UNSCHEDULABLE
                    node = post.nominated_node
                    record.add(pod.key, pod.uid, now, profile.scheduler_name, outcome, node, detail)
                for plugin in state.get(FILTER_TALLY) or {}:
                    self.telemetry.rejections.labels(plugin).inc()
                self.queue.unschedulable(pod)
                # A nominated pod's condition goes with its nomination (the evictor's patch).
                self.events.failed(pod, message, condition=not post.nominated_node)
                log.info("%s unschedulable: %s", pod.key, message)
                return UNSCHEDULABLE
            parts = None
            if len(feasible) == 1:
                chosen = feasible[0].name
            else:
                parts = ScoreParts() if record is not None else None
                names, totals = profile.totals(pod, feasible, snap, state, parts)
                best = pick_best(totals, self.rng)
                chosen = names[best]
                self._won[pod.uid] = int(totals[best])
            self._count_fallbacks(state)
            guess = self.estimate(pod)
            predicted_m = guess.cpu_m
            if record is not None:  # before the pod counts on its node: the view it was judged by
                counts = self._node_counts(len(nodes), len(feasible), len(feasible) if parts else 0)
                detail = explanation.placed(
                    pod, counts, reasons, state, snap, parts, chosen, predicted_m, record.top
                )
                detail["prediction"] = prediction_doc(guess)
                record.add(
                    pod.key, pod.uid, now, profile.scheduler_name, outcomes.BINDING, chosen, detail
                )
            if not self.cache.assume(pod, chosen):
                if record is not None:
                    record.outcome(
                        pod.key, pod.uid, outcomes.ERROR, "the cache refused to assume it"
                    )
                self.queue.requeue_backoff(pod)
                return ERROR
            # Counted now, not when the bind returns: the next pod of a burst must see it.
            self.recent.record(pod.uid, chosen, predicted_m, now)
        self.queue.done(pod.uid)
        self.nominations.clear(pod.uid)
        self.binder.bind(pod, chosen)
        return SCHEDULED

    # --- the decision record ---------------------------------------------------------------
    def _node_counts(self, total: int, feasible: int, scored: int) -> list[int]:
        wanted = nodes_to_find(total, self.percentage)
        considered = self._considered or total
        return explanation.node_counts(total, considered, feasible, scored, self.percentage, wanted)

    # --- nominations and preemption -------------------------------------------------------
    def nominated_node(self, pod: PodInfo) -> str:
        """From this scheduler's preemption, or from the pod's status (set by a previous
        leader)."""
        status = pod.raw.get("status") or {}
        return self.nominations.node_of(pod.uid) or status.get("nominatedNodeName") or ""

    def nominated_on(self, pod: PodInfo, node: str) -> list[PodInfo]:
        """Pods nominated to `node` that count against `pod`: equal or higher priority, still
        waiting in the queue (a bound or deleted one has left it)."""
        return [
            other
            for other in self.nominations.on_node(node)
            if other.uid != pod.uid and other.priority >= pod.priority and other.uid in self.queue
        ]

    def _nominated_fit(
        self, profile: Profile, pod: PodInfo, snap: Snapshot, state: CycleState
    ) -> list[NodeInfo]:
        """The pod's nominated node alone when it fits there now (upstream tries it first)."""
        node = snap.nodes.get(self.nominated_node(pod))
        if node is None:
            return []
        feasible, _ = profile.filter(pod, [node], snap, state)
        others = self.nominated_on(pod, node.name)
        if feasible and others and not profile.fits(pod, node, snap, others).ok:
            return []
        return feasible

    def _leave_nominated_room(
        self,
        profile: Profile,
        pod: PodInfo,
        feasible: list[NodeInfo],
        reasons: dict[str, Any],
        snap: Snapshot,
    ) -> list[NodeInfo]:
        kept = []
        for node in feasible:
            others = self.nominated_on(pod, node.name)
            status = profile.fits(pod, node, snap, others) if others else Status.success()
            if status.ok:
                kept.append(node)
            else:
                reasons[node.name] = list(status.reasons)
        return kept

    def _post_filter(
        self,
        profile: Profile,
        pod: PodInfo,
        snap: Snapshot,
        state: CycleState,
        reasons: dict[str, Any],
        message: str,
    ) -> PostFilterResult:
        """The PostFilter plugins; a nomination goes to the evictor with `message`, the
        pod's PodScheduled=False condition."""
        result = PostFilterResult()
        if self.evictor is None or pod.scheduler_name != profile.scheduler_name:
            return result  # never preempt for a pod that is not ours
        handle = _Handle(self, profile)
        for plugin in profile.post_filters:
            result = plugin.post_filter(state, pod, snap, reasons, handle)
            if result.nominated_node:
                break
        if result.nominated_node:
            node = result.nominated_node
            self.nominations.set(pod, node)
            # Lower-priority pods nominated there would not fit any more (upstream clears them).
            lower = [p for p in self.nominations.on_node(node) if p.priority < pod.priority]
            for other in lower:
                self.nominations.clear(other.uid)
            log.info(
                "%s nominated to %s, preempting %s",
                pod.key,
                node,
                ", ".join(v.key for v in result.victims),
            )
            told = f"{message} {result.message}" if result.message else message  # as _attempt's
            self.evictor.preempt(pod, node, result.victims, lower, told)
        elif result.clear and self.nominated_node(pod):
            self.nominations.clear(pod.uid)
            self.evictor.unnominate(pod)
        return result

    def preemption_done(self, pod: PodInfo, node: str, ok: bool) -> None:
        """On an evictor thread. The victims' deletions wake parked pods through the watch; this
        wakes the preemptor too in case it was parked after them, or when a write failed."""
        if not ok:
            log.warning("preemption on %s for %s incomplete; the pod is retried", node, pod.key)
        self.queue.cluster_changed()

    def _filter(
        self,
        profile: Profile,
        pod: PodInfo,
        nodes: list[NodeInfo],
        snap: Snapshot,
        state: CycleState,
    ) -> tuple[list[NodeInfo], dict[str, Any]]:
        total = len(nodes)
        self._considered = total
        if nodes_to_find(total, self.percentage) >= total:
            return profile.filter(pod, nodes, snap, state)
        start = self._next_start % total
        feasible, reasons, seen = filter_pass(
            profile, pod, nodes, snap, state, start, self.percentage
        )
        self._next_start = (start + seen) % total
        self._considered = seen
        return feasible, reasons

    def _count_fallbacks(self, state: CycleState) -> None:
        for reason, count in state.fallbacks.items():
            if count:
                self.telemetry.fallbacks.labels(reason).inc(count)

    def estimate(self, pod: PodInfo) -> estimator.Estimate:
        """The pod's predicted use: its workload's profile, else the TargetLoadPacking rule
        with the profile's args if any (upstream's defaults otherwise)."""
        profile = self.profiles.get(pod.scheduler_name)
        for plugin, _ in profile.scores if profile else ():
            args = getattr(plugin, "args", None)
            if hasattr(args, "default_requests_cpu_m"):
                cpu_m = resources.predicted_cpu_m(
                    pod, args.default_requests_cpu_m, args.default_requests_multiplier
                )
                return self._estimate(pod, cpu_m, getattr(args, "estimator", None))
        return self._estimate(pod, resources.predicted_cpu_m(pod), None)

    def _estimate(
        self, pod: PodInfo, cpu_m: int, args: estimator.EstimatorArgs | None
    ) -> estimator.Estimate:
        args = args or estimator.DEFAULT_ARGS
        memory = estimator.request_estimate(pod, args).memory
        return estimator.estimate(pod, self.workloads(), args, (cpu_m, memory))

    def predicted_cpu_m(self, pod: PodInfo) -> int:
        """The CPU a pod bound now adds to its node until the watcher's window shows it."""
        return self.estimate(pod).cpu_m

    # --- the binder's answer, on a binder thread ---------------------------------------
    def binding_done(self, pod: PodInfo, node: str, result: str, detail: str) -> None:
        self.telemetry.binds.labels(result).inc()
        score = self._won.pop(pod.uid, None)
        if self.decisions is not None:
            outcome = outcomes.BOUND if result == binding.BOUND else outcomes.BIND_FAILED
            self.decisions.outcome(
                pod.key,
                pod.uid,
                outcome,
                "" if outcome == outcomes.BOUND else f"{result}: {detail}",
            )
        if result == binding.BOUND:
            # The window must contain the pod's usage after its start, i.e. after this moment.
            self.recent.record(pod.uid, node, self.predicted_cpu_m(pod))
            self.events.scheduled(pod, node, score)
            if pod.created:
                self.telemetry.e2e.observe(max(0.0, time.time() - pod.created))
            return
        self.cache.forget(pod)
        self.recent.forget(pod.uid)
        if result == binding.ALREADY_BOUND:
            log.info("%s was bound elsewhere already: %s", pod.key, detail)
            return  # the watch brings the real placement
        if result == binding.GONE:
            self.queue.remove(pod.uid)
            return
        log.warning("binding %s to %s failed: %s; requeued", pod.key, node, detail)
        self.events.failed(pod, f"Binding rejected: {detail}", SCHEDULER_ERROR)
        self.queue.requeue_backoff(pod)


class _Handle:
    """What the PostFilter plugins may ask of the cycle (framework.Handle)."""

    def __init__(self, cycle: Cycle, profile: Profile) -> None:
        self._cycle = cycle
        self._profile = profile

    def fits(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        return self._profile.fits(pod, node, snap, self._cycle.nominated_on(pod, node.name))

    def passes(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> bool:
        return self._profile.passes(pod, node, snap, self._cycle.nominated_on(pod, node.name))

    def rules_out(
        self,
        pod: PodInfo,
        node: NodeInfo,
        snap: Snapshot,
        added: Sequence[PodInfo] = (),
        taken: Sequence[PodInfo] = (),
    ) -> bool:
        return self._profile.rules_out(pod, node, snap, added, taken)

    def by_requests(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> bool:
        if self._cycle.nominated_on(pod, node.name):
            return False
        return self._profile.by_requests(pod, node, snap)

    def reprieve(
        self, pod: PodInfo, node: NodeInfo, snap: Snapshot, order: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        return self._profile.reprieve(pod, node, snap, order)

    def nominated_node(self, pod: PodInfo) -> str:
        return self._cycle.nominated_node(pod)
