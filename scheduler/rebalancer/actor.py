"""One move carried out: the rebalancer's only writes, and the state a move changes.

For each move the round hands over: the kill switch (held, nothing changed), a token of the
eviction rate, the node's intent record (no record, no eviction), the Eviction call (each
attempt behind a fresh leadership confirmation; the server's throttling tried again after its
retryAfterSeconds), the check of a call that got no answer (the pod's uid gone or terminating:
it took place), then either the failure set aside for the node's rest (its pod, or its whole
workload when the refusal is the workload's) with its token given back, or the state the
eviction changes (the node rests in proportion to its relief, or until samples taken after the
pod's going still show it hot (rest.py), its streaks start over, the workload is in flight, the
replacement is booked on its target until it is bound: replacements.py) and the Events that tell
it. A dry run sends the same call
with dryRun=All and changes the same state.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework import CPU, PodInfo
from scheduler.rebalancer import evictions, gpuhot, limits, replacements
from scheduler.rebalancer.classify import Classification, HotStreaks
from scheduler.rebalancer.judge import Move
from scheduler.rebalancer.rest import HOT_AGAIN, Cooldowns
from scheduler.rebalancer.saturation import SATURATED, Saturation
from scheduler.rebalancer.settings import RebalancerSettings
from scheduler.rebalancer.status import (
    EVICT,
    REST_ENDED,
    SKIP,
    WOULD_EVICT,
    Decision,
    DecisionLog,
    Telemetry,
)
from scheduler.rebalancer.victims import Estimator

logger = logging.getLogger(__name__)

DEFAULT_WINDOW_S = 300.0  # the watcher's default window, when its answer names no expiry
DRY_RUN, KILL_SWITCH, RATE_LIMIT = "dry-run", "kill-switch", "rate-limit"
NOT_LEADING = "leadership-not-confirmed"
NOT_RECORDED = "intent-not-recorded"
# A 429 that is the API server throttling: tried again after its retryAfterSeconds (else this
# backoff, doubling), each attempt behind a fresh leadership confirmation.
THROTTLE_ATTEMPTS = 3
THROTTLE_BACKOFF_S = 0.5
THROTTLE_MAX_S = 5.0
# Held or carried out: what the round's limits and the node's rest count.
ACTED = (evictions.EVICTED, WOULD_EVICT)
# Results after which the round goes on without re-planning the node: nothing was refused.
NOT_TRIED = (DRY_RUN, KILL_SWITCH, RATE_LIMIT)
# Refusals about the workload, not the one pod: its other replicas are set aside with it.
WORKLOAD_REFUSALS = (evictions.PDB, evictions.REFUSED)
# The API server drops Events an hour after their last write (kube-apiserver --event-ttl): a
# rest on record must end before its Event does, or a new leader would not see it.
EVENT_TTL_S = 3600.0
MAX_REST_S = EVENT_TTL_S - 300.0
REST_FLOOR = 0.5  # of the window, after a move that relieves only part of the node's excess


@dataclass
class Memory:
    """What the rebalancer remembers between rounds (its moves' effects and the failures)."""

    bucket: limits.TokenBucket
    cooldowns: Cooldowns
    aside: limits.SetAside
    in_flight: limits.InFlight
    replacements: replacements.Replacements
    streaks: HotStreaks
    gpu_streaks: HotStreaks
    saturation: Saturation


class Actor:
    def __init__(
        self,
        settings: RebalancerSettings,
        writer: evictions.Writer,
        memory: Memory,
        estimator: Estimator,
        telemetry: Telemetry,
        decisions: DecisionLog,
        confirm: Callable[[], float],
        enabled: Callable[[], bool],
        stopping: threading.Event,
        provider_lag: float,
    ) -> None:
        """`confirm`: seconds an Eviction call may take, the Lease confirmed ours that long (0:
        not leading); `enabled`: False while the kill switch holds every move."""
        self.settings = settings
        self.writer = writer
        self.memory = memory
        self.estimator = estimator
        self.telemetry = telemetry
        self.decisions = decisions
        self.confirm = confirm
        self.enabled = enabled
        self.stopping = stopping
        self.provider_lag = provider_lag

    def rest(self, view: Classification, move: Move) -> float:
        """Seconds a node rests after losing a pod: until the watcher's window holds no sample
        from before the eviction when the round's moves bring it under high; in proportion to
        the relief when they only part-relieve it (never under half the window: its average
        then shows at least half the relief), so its next move comes sooner; never past the
        Event TTL (the rest's record). Samples taken after the pod's going may end it sooner
        (rest.py)."""
        s = self.settings
        window = s.cooldown or view.window.get(move.source) or DEFAULT_WINDOW_S
        share = 1.0
        over = {r: v - move.high[r] for r, v in move.source_usage.items() if r in move.high}
        main = max(over, key=lambda r: over[r], default="")
        if main and over[main] > 0 and move.source_after and move.reason != gpuhot.GPU_HOT:
            relief = move.source_usage[main] - move.source_after.get(main, 0.0)
            share = min(1.0, max(REST_FLOOR, relief / over[main]))
        return min(MAX_REST_S, window * share + self.provider_lag)

    def act(
        self,
        move: Move,
        view: Classification,
        now: float,
        summary: dict,
        placed: frozenset[str] = frozenset(),
    ) -> str:
        """One move made (or held); its result: EVICTED, WOULD_EVICT, or why it was not.
        `placed`: the uids of the workload's pods placed before it (replacements.siblings)."""
        s = self.settings
        pod, t = move.pod, self.telemetry
        if not s.dry_run and not self.enabled():
            # The kill switch is a brake, not a rehearsal: no state changes, so that once it is
            # released the rebalancer acts at once on what is still hot.
            t.would_evict.inc()
            summary["wouldEvict"].append(pod.key)
            self.log(WOULD_EVICT, move.source, pod.key, KILL_SWITCH, move.note(), move.target)
            return KILL_SWITCH
        held = DRY_RUN if s.dry_run else ""
        if not self.memory.bucket.take():
            self.skip(move.source, pod.key, RATE_LIMIT)
            return RATE_LIMIT
        rest = self.rest(view, move)
        if not held:
            unrecorded = self.writer.intend(pod, move.source, move.note(), now + rest)
            if unrecorded:
                # Without the record a successor would not know the node rests: no eviction.
                self.memory.bucket.give_back()
                self.skip(move.source, pod.key, NOT_RECORDED, unrecorded)
                return NOT_RECORDED
        outcome = self.evict(pod, dry_run=bool(held))
        saturated = move.reason == SATURATED  # its rest may end on one sample (rest.py)
        if outcome.maybe:
            # No answer, and the server could not say whether the pod went: the node rests (a
            # second pod must not leave it if the first did), the pod is set aside.
            self.memory.cooldowns.start(move.source, now, rest, pod.uid, saturated)
        if outcome.result != evictions.EVICTED:
            self.memory.bucket.give_back()  # nothing evicted: the rate is for evictions
            if outcome.result != NOT_LEADING:
                # Not tried again this rest period; the node's next candidate is tried now.
                key = move.workload.key if outcome.result in WORKLOAD_REFUSALS else pod.uid
                self.memory.aside.add(key, now + rest, outcome.result)
            self.skip(move.source, pod.key, outcome.result, outcome.detail)
            return outcome.result
        # From here a held move changes the state as the eviction would have.
        self.memory.cooldowns.start(move.source, now, rest, pod.uid, saturated)
        self.memory.streaks.reset(move.source)
        self.memory.gpu_streaks.reset(move.source)
        self.memory.in_flight.add(
            move.workload, pod.uid, limits.IN_FLIGHT_MAX_S if not held else rest
        )
        self.book(move, view, now, placed, bool(held))
        note = f"{move.note()}; node rests {rest:.0f}s"
        if held:
            t.would_evict.inc()
            summary["wouldEvict"].append(pod.key)
            self.log(WOULD_EVICT, move.source, pod.key, held, note, move.target)
            return WOULD_EVICT
        resource = max(move.high, key=lambda r: move.source_usage.get(r, 0.0) - move.high[r])
        reason = move.reason or f"{resource}-hot"
        t.evictions.labels(reason).inc()
        self.writer.tell(pod, move.source, note, now + rest)
        summary["evicted"].append(pod.key)
        self.log(EVICT, move.source, pod.key, reason, note, move.target)
        logger.info("evicted %s: %s", pod.key, note)
        return evictions.EVICTED

    def book(
        self, move: Move, view: Classification, now: float, placed: frozenset[str], held: bool
    ) -> None:
        """The replacement's predicted CPU on its target until it is bound, a window of the
        target's at most past its creation (replacements.py); a dry run's, as bound at once."""
        cpu_m = int(self.estimator.use(move.pod, CPU))
        if held:
            self.memory.replacements.held(move.pod, move.target, cpu_m, now)
            return
        window = view.window.get(move.target) or DEFAULT_WINDOW_S
        until = now + replacements.created_within(move.pod, move.workload) + window
        self.memory.replacements.expect(move.pod, move.workload, move.target, cpu_m, until, placed)

    def evict(self, pod: PodInfo, dry_run: bool = False) -> evictions.Outcome:
        """The Eviction call, each attempt behind a fresh leadership confirmation; throttling
        (a 429 no budget gave) is tried again after a pause; a call with no answer is EVICTED
        when the pod's uid is gone or terminating after it."""
        outcome = self._call(pod, dry_run)
        if outcome.result != evictions.NO_ANSWER or dry_run:
            return outcome
        state = self.writer.pod_state(pod)
        if state in (evictions.POD_GONE, evictions.POD_TERMINATING):
            logger.info("eviction of %s had no answer (%s) but took place", pod.key, outcome.detail)
            return evictions.Outcome(evictions.EVICTED, f"{outcome.detail}; pod {state}")
        detail = f"{outcome.detail}; pod {state}"
        return evictions.Outcome(evictions.NO_ANSWER, detail, maybe=state == evictions.POD_UNKNOWN)

    def _call(self, pod: PodInfo, dry_run: bool) -> evictions.Outcome:
        delay = THROTTLE_BACKOFF_S
        outcome = evictions.Outcome(NOT_LEADING)
        for attempt in range(THROTTLE_ATTEMPTS):
            within = self.confirm()
            if within <= 0.0:
                return evictions.Outcome(NOT_LEADING, "the Lease could not be renewed with margin")
            outcome = self.writer.evict(pod, within, dry_run)
            if outcome.result != evictions.THROTTLED or attempt == THROTTLE_ATTEMPTS - 1:
                break
            pause = min(THROTTLE_MAX_S, outcome.retry_after or delay)
            logger.info(
                "evicting %s throttled (%s); again in %.1fs", pod.key, outcome.detail, pause
            )
            if self.stopping.wait(pause):
                break
            delay = min(THROTTLE_MAX_S, delay * 2)
        return outcome

    def rest_ended(self, node: str, why: str, reason: str = HOT_AGAIN) -> None:
        """A node's rest ended on post-move samples (rest.py): it may be judged again."""
        logger.info("%s may be judged again: %s", node, why)
        self.log(REST_ENDED, node, "", reason, why)

    def skip(self, node: str, pod: str, reason: str, detail: str = "") -> None:
        self.telemetry.skipped.labels(reason).inc()
        self.log(SKIP, node, pod, reason, detail)

    def log(
        self, action: str, node: str, pod: str, reason: str, detail: str = "", target: str = ""
    ) -> None:
        self.decisions.add(Decision(time.time(), action, node, pod, reason, detail, target))
