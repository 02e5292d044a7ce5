"""How long a node rests after an eviction, and the evidence that ends a rest early.

A node that lost a pod is not judged again until the watcher's window holds no sample from
before the eviction (the actor sizes the rest: `Actor.rest`): the window's statistic still holds
the victim's use, and judging the node on it would count that use twice. A rising load outruns
that statistic, though: a node whose background jumps keeps climbing while its window average
lags, is predicted under high after one move, and may stay over 100 % for the whole rest.

So a rest also ends on evidence newer than the move. Once every pod evicted from the node in
this rest is gone from the API server (deleted, not only terminating: a terminating pod's
containers may still run through their grace period), a sample taken later than that by the
provider's lag shows the node without them (the rule the scheduler's RecentlyBound applies to a
pod's arrival, applied to its leaving). "That" is when the cache saw the last of them go (its
watch event, `gone`), else the round that found them gone: a round's interval after the
deletion at worst, which the samples do not need. The lag is what they need: the CPU query's
look-back (irate's last two scrapes), which the provider's lag must cover (docs/rebalancer.md,
"Saturated nodes: where the time goes"). `consecutive` such samples in a row (each a newer one,
as a hot streak counts them), each above high by the node's latest figure, end the rest. From
then until the rest's recorded end, the node is judged on those samples (per resource the least
of the last `consecutive`) instead of the window's statistic: they hold no victim, so nothing is
counted twice, and their least keeps one spike from sizing the next move. A rest read back
from the Events (a new leader's) has no victims known and runs to its end; so does a dry run's,
whose pods never leave.

A rest after a move off a saturated node (saturation.py: its CPU samples pinned at capacity,
its measured excess clamped) ends on the first such sample that is still at or above the
saturation level: the node was at capacity before the move and is after it, and the clamp hides
how far past it the demand still is. It is then judged on that sample, and as saturated.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from scheduler.backend.recent import PROVIDER_LAG
from scheduler.framework import CPU
from scheduler.rebalancer.classify import Classification, state_of

HOT_AGAIN = "hot-again"
STILL_SATURATED = "still-saturated"
GONE_KEPT = 10_000  # pods' going times kept, the newest (a victim's is read a round later)


@dataclass
class _Moved:
    """A rest's victims, and what the node's samples showed since they left."""

    victims: set[str]  # uids of the pods evicted from the node in this rest
    ends: float  # the rest's recorded end (Unix)
    since: float = 0.0  # samples later than this show the node without them; 0: not all gone
    seen: float = float("-inf")  # sample time of the last reading taken
    run: list[dict[str, float]] = field(default_factory=list)  # hot readings in a row, latest
    last: dict[str, float] = field(default_factory=dict)  # the newest reading, hot or not
    ended: str = ""  # why the rest ended early; "" while it holds
    saturated: bool = False  # a victim left a saturated node (saturation.py)
    pinned: bool = False  # a post-move sample showed it saturated still


class Cooldowns:
    """node -> Unix time until which it rests; also rebuilt from the Events a previous leader
    wrote, so a failover does not evict from a node still resting. A rest whose victims are
    known (`start` with a uid) may end early on post-move samples (`observe`)."""

    def __init__(self, lag: float = PROVIDER_LAG) -> None:
        self.lag = lag  # seconds a sample takes to show a change on the node
        self.until: dict[str, float] = {}
        self.moved: dict[str, _Moved] = {}
        self.needed = 1
        self.level = 0.0  # the saturation level (saturation.py); 0: off
        # uid -> when the cache saw the pod go (the cache's watch thread writes it)
        self._gone: OrderedDict[str, float] = OrderedDict()
        self._gone_lock = threading.Lock()

    def gone(self, uid: str, at: float) -> None:
        """The cache saw the pod go (deleted, or ended) at `at`: its containers stopped by then.
        Any pod's: the watch may report a victim's going before its eviction call returns."""
        with self._gone_lock:
            self._gone[uid] = at
            self._gone.move_to_end(uid)
            while len(self._gone) > GONE_KEPT:
                self._gone.popitem(last=False)

    def went(self, victims: Iterable[str], now: float) -> float:
        """When the last of the victims went, as the cache saw it; `now` (found gone by now at
        the latest) for one it did not report."""
        with self._gone_lock:
            return min(now, max(self._gone.get(uid, now) for uid in victims))

    def start(
        self, node: str, at: float, seconds: float, victim: str = "", saturated: bool = False
    ) -> None:
        """`saturated`: the victim left a saturated node (its rest may end on one sample)."""
        self.until[node] = max(self.until.get(node, 0.0), at + seconds)
        if not victim:
            return
        old = self.moved.get(node)
        victims = old.victims if old is not None and not old.ended else set()
        was = old is not None and not old.ended and old.saturated
        # A new victim: the evidence starts over, once it is gone too.
        self.moved[node] = _Moved({*victims, victim}, self.until[node], saturated=saturated or was)

    def active(self, node: str, now: float) -> bool:
        return self.until.get(node, 0.0) > now

    def prune(self, now: float) -> None:
        for node in [n for n, t in self.until.items() if t <= now]:
            del self.until[node]
        for node in [n for n, m in self.moved.items() if m.ends <= now]:
            del self.moved[node]

    def observe(
        self,
        view: Classification,
        now: float,
        placed: Container[str],
        needed: int,
        level: float = 0.0,
    ) -> dict[str, str]:
        """Read this round's view into each rest's evidence; the rests that end on it, each
        with why. `placed`: the uids of the pods the cache holds on a node (terminating or
        not); `level`: the saturation level (0: off)."""
        self.needed = max(1, needed)
        self.level = level
        ended: dict[str, str] = {}
        for node, m in self.moved.items():
            if not m.since:
                if any(uid in placed for uid in m.victims):
                    continue
                m.since = self.went(m.victims, now) + self.lag
            self._read(m, node, view)
            enough = len(m.run) >= self.needed or m.pinned
            if not m.ended and enough and self.active(node, now):
                m.ended = self._why(m)
                del self.until[node]
                ended[node] = m.ended
        return ended

    def _read(self, m: _Moved, node: str, view: Classification) -> None:
        latest = view.latest.get(node)
        if latest is None or node not in view.usage:
            m.run.clear()  # unknown now: the samples in a row start over, as a streak does
            return
        sample = view.sample_time.get(node, 0.0)
        if sample <= m.since or sample <= m.seen:
            return  # from before the move could show, or the same sample again
        m.seen = sample
        m.last = dict(latest)
        if self._saturated(m, latest) and not m.ended:
            m.pinned = True
            m.run = [dict(latest)]  # judged on this sample: the one that ends the rest
        elif any(v > view.high.get(r, float("inf")) for r, v in latest.items()):
            m.run = [*m.run, dict(latest)][-self.needed :]
        else:
            m.run.clear()

    def _saturated(self, m: _Moved, latest: dict[str, float]) -> bool:
        return m.saturated and bool(self.level) and latest.get(CPU, 0.0) >= self.level

    def _why(self, m: _Moved) -> str:
        figures = self.figures(m) or {}
        shown = ", ".join(f"{r} {v:.1f}%" for r, v in figures.items())
        at = time.strftime("%H:%M:%S", time.gmtime(m.since))
        if m.pinned:
            return (
                f"still saturated after the move: a sample since {at} UTC at or above "
                f"{self.level:g}% ({shown}); judged on it, not the window"
            )
        return (
            f"hot again after the move: {len(m.run)} samples above high since {at} UTC "
            f"(the least: {shown}); judged on them, not the window"
        )

    def figures(self, m: _Moved) -> dict[str, float] | None:
        """Per resource the least of the hot readings in a row; the newest reading when the
        run broke; None before any post-move reading."""
        if m.run:
            return {r: min(reading[r] for reading in m.run) for r in m.run[-1]}
        return dict(m.last) if m.last else None

    def ended(self) -> dict[str, str]:
        """The nodes whose rest ended on evidence and whose recorded end is still ahead."""
        return {n: m.ended for n, m in self.moved.items() if m.ended}

    def reason(self, node: str) -> str:
        """Why the node's rest ended early, as the decision log's reason."""
        m = self.moved.get(node)
        return STILL_SATURATED if m is not None and m.pinned else HOT_AGAIN

    def saturated(self) -> dict[str, float]:
        """The nodes whose rest ended on a saturated sample and whose newest is still at or
        above the level, each with that sample's CPU: judged as saturated (saturation.py)."""
        return {
            n: m.last[CPU]
            for n, m in self.moved.items()
            if m.pinned and m.ended and self._saturated(m, m.last)
        }

    def judged(self, view: Classification) -> None:
        """The nodes whose rest ended on evidence are judged on their post-move samples until
        the rest's recorded end: the window's statistic still holds the victims."""
        for node, m in self.moved.items():
            figures = self.figures(m) if m.ended else None
            if figures is None or node not in view.usage:
                continue
            view.usage[node] = {**view.usage[node], **figures}
            view.state[node] = state_of(view.usage[node], view.high, view.low)
