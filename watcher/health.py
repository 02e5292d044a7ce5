"""What the probes answer: readiness is "can serve", liveness is "not wedged".

Every replica reads the same snapshot, so a readiness that followed the last poll would take
every replica out of its Service at once on one Prometheus blip, and with them the only copy of
load data the schedulers have. A replica is therefore ready while it holds data inside its expiry
(the answers say how stale it is) and unready only when it has nothing valid to serve. Liveness
fails only for a process that no longer moves: the poller's seat held while no tick has run for
WEDGED_POLLS intervals (plus room for the slowest legitimate tick), which a restart cures and
waiting does not. Pure functions of what a worker can read; the Flask layer only calls them.
"""

from __future__ import annotations

from typing import Any

from watcher.views import View

WEDGED_POLLS = 5  # intervals without a tick after which the poller's holder counts as wedged
SLOW_TICK = 3  # provider timeouts one legitimate tick may take (node query, pod query, save)


def readiness(
    view: View | None, store_error: str | None, now: float, poll_interval: float
) -> tuple[bool, list[str]]:
    """(ready, reasons): every problem is named, only "nothing valid to serve" makes unready."""
    reasons = []
    if store_error:
        reasons.append(f"store: {store_error}")
    if view is None:
        reasons.append("no snapshot yet")
        return False, reasons
    last = view.last_poll
    if not last.get("ok"):
        reasons.append(f"provider: {last.get('error')}")
    if not view.has_data:
        reasons.append("no successful poll yet")
        return False, reasons
    age = data_age(view, now)
    if age > 2 * poll_interval:
        reasons.append(f"data {age:.0f}s old: answers are marked stale")
    if not view.live(now):
        reasons.append(f"every node's data is past its expiry ({view.expiry:.0f}s)")
        return False, reasons
    return True, reasons


def data_age(view: View, now: float) -> float:
    """Seconds since the last poll that brought data (the snapshot's own time without one)."""
    return max(0.0, now - float(view.doc.get("lastSuccess") or view.doc["built"]))


def stale_mark(view: View, now: float, poll_interval: float) -> str | None:
    """The X-Ballast-Stale header of an answer built from `view`, or None while it is current:
    the load-watcher wire format has no field for it, and Trimaran ignores headers."""
    age = data_age(view, now)
    last = view.last_poll
    if last.get("ok") and age <= 2 * poll_interval:
        return None
    mark = f"data {age:.1f}s old"
    if not last.get("ok"):
        mark += f"; last poll failed: {last.get('error')}"
    # A header, not a log: the error names every failed query, and quotes what a broken store
    # answered (control bytes, U+FFFD), which no header may carry: gunicorn would answer 500.
    return "".join(c if " " <= c <= "~" else "?" for c in mark[:512])


def wedge_limit(poll_interval: float, provider_timeout: float) -> float:
    return WEDGED_POLLS * poll_interval + SLOW_TICK * provider_timeout


def liveness(
    seated_at: float | None, ticked_at: float | None, now: float, limit: float
) -> tuple[bool, str | None]:
    """(alive, why not). `seated_at`: when this replica's poller seat was last taken (None: no
    worker holds it, nothing to judge); `ticked_at`: the holder's last tick, even one that only
    found another replica polling or waited out a store backoff (None: none yet)."""
    if seated_at is None:
        return True, None
    since = max(seated_at, ticked_at or 0.0)
    if now - since <= limit:
        return True, None
    if ticked_at is None or ticked_at < seated_at:
        return False, f"poller seat held {now - seated_at:.0f}s with no poll started"
    return False, f"no poll for {now - ticked_at:.0f}s (limit {limit:.0f}s): the poller is wedged"


def figures_tick(figures: dict[str, Any] | None) -> float | None:
    return (figures or {}).get("tickedAt")
