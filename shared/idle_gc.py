"""Python's full collection moved to a moment the process is idle.

The cyclic collector's full pass walks every tracked object; in a scheduler holding thousands
of pods that is 50-300 ms of one thread with the GIL held, and it falls due when enough objects
have survived since the last one (a quarter of the long-lived heap): typically right after a
burst, when the next pods arrive. `IdleCollection` runs that pass when the caller reports an
idle moment after enough work, so the pass the burst made due is not paid inside the next
scheduling cycle or preemption. The CPU is the same; where it lands is not.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger(__name__)


class IdleCollection:
    """Counts units of work (`worked`); on `idle`, after at least `after` of them, runs a full
    collection. Not thread-safe: one owner thread (the scheduling loop)."""

    def __init__(self, after: int = 256) -> None:
        self.after = after
        self._since = 0
        self.collections = 0

    def worked(self, units: int = 1) -> None:
        self._since += units

    def idle(self) -> bool:
        """Collect now if enough work happened since the last time; whether it did."""
        if self._since < self.after:
            return False
        self._since = 0
        started = time.process_time()
        found = gc.collect()
        self.collections += 1
        log.debug(
            "idle-time collection: %d unreachable, %.0f ms CPU",
            found,
            1000 * (time.process_time() - started),
        )
        return True
