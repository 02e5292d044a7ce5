"""The window store interface, its in-memory implementation, and the factory.

Redis (shared by replicas) lives in watcher/redis_store.py; with no Redis URL the same interface
runs in memory, the embedded default for one process.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from watcher.config import Config
from watcher.window import Frame


class Store(Protocol):
    kind: str

    def ping(self) -> None:
        """Raise StoreError when the store cannot be reached."""

    def save(self, frames: list[Frame], snapshot: bytes, version: str) -> None:
        """Persist one poll: its frame (more after a warm start) and the snapshot, in one
        round trip."""

    def load_frames(self, since: float) -> list[Frame]: ...

    def snapshot_version(self) -> str | None: ...

    def load_snapshot(self) -> bytes | None: ...

    def save_workloads(self, doc: bytes, rings: dict[str, bytes] | None, keep: float) -> None:
        """Persist the workload profiles' statistics, and their rings when given (replacing
        the stored ones); both expire `keep` seconds after the last write."""

    def load_workloads(self) -> tuple[bytes | None, dict[str, bytes]]:
        """(statistics document, rings by field)."""
        ...

    def workloads_doc(self) -> bytes | None: ...

    def save_pods(self, doc: bytes, rows: bytes | None, keep: float) -> None:
        """Persist the per-pod statistics' document, and their rows when given; both expire
        `keep` seconds after the last write."""

    def load_pods(self) -> tuple[bytes | None, bytes | None]:
        """(statistics document, rows)."""
        ...

    def pods_doc(self) -> bytes | None: ...

    def save_workload_history(self, rows: bytes, keep: float) -> None:
        """Persist the workloads' per-bucket maxima (watcher/workloadhistory.py); they expire
        `keep` seconds after the last write."""

    def load_workload_history(self) -> bytes | None: ...

    def save_gpus(self, doc: bytes, keep: float) -> None:
        """Persist the GPU windows' document (watcher/gpus.py); it expires after `keep`
        seconds without a write."""

    def gpus_doc(self) -> bytes | None: ...

    def lead(self, holder: str, ttl: float) -> bool:
        """Take or renew the poller lock for `holder`; True while `holder` holds it."""

    def leader(self) -> str | None: ...

    def release(self, holder: str) -> None: ...

    def close(self) -> None: ...


class MemoryStore:
    """One process's store: the poller and the API share it, so only one worker may serve it."""

    kind = "memory"

    def __init__(self, window: float) -> None:
        self.window = window
        self._frames: list[Frame] = []
        self._snapshot: bytes | None = None
        self._version: str | None = None
        self._workloads: bytes | None = None
        self._rings: dict[str, bytes] = {}
        self._gpus: bytes | None = None
        self._pods: bytes | None = None
        self._pod_rows: bytes | None = None
        self._history: bytes | None = None
        self._lock = threading.Lock()

    def ping(self) -> None:
        return None

    def save(self, frames: list[Frame], snapshot: bytes, version: str) -> None:
        with self._lock:
            if frames:
                cutoff = time.time() - self.window
                self._frames = [f for f in self._frames if f.time >= cutoff] + frames
            self._snapshot = snapshot
            self._version = version

    def load_frames(self, since: float) -> list[Frame]:
        with self._lock:
            return [f for f in self._frames if f.time >= since]

    def snapshot_version(self) -> str | None:
        return self._version

    def load_snapshot(self) -> bytes | None:
        return self._snapshot

    def save_workloads(self, doc: bytes, rings: dict[str, bytes] | None, keep: float) -> None:
        with self._lock:
            self._workloads = doc
            if rings is not None:
                self._rings = rings

    def load_workloads(self) -> tuple[bytes | None, dict[str, bytes]]:
        with self._lock:
            return self._workloads, dict(self._rings)

    def workloads_doc(self) -> bytes | None:
        return self._workloads

    def save_pods(self, doc: bytes, rows: bytes | None, keep: float) -> None:
        with self._lock:
            self._pods = doc
            if rows is not None:
                self._pod_rows = rows

    def load_pods(self) -> tuple[bytes | None, bytes | None]:
        with self._lock:
            return self._pods, self._pod_rows

    def pods_doc(self) -> bytes | None:
        return self._pods

    def save_workload_history(self, rows: bytes, keep: float) -> None:
        self._history = rows

    def load_workload_history(self) -> bytes | None:
        return self._history

    def save_gpus(self, doc: bytes, keep: float) -> None:
        self._gpus = doc

    def gpus_doc(self) -> bytes | None:
        return self._gpus

    def lead(self, holder: str, ttl: float) -> bool:
        return True

    def leader(self) -> str | None:
        return None

    def release(self, holder: str) -> None:
        return None

    def close(self) -> None:
        return None


def create(config: Config) -> Store:
    if config.redis_url:
        from watcher.redis_store import RedisStore

        return RedisStore(config.redis_url, config.key_prefix, config.window)
    return MemoryStore(config.window)
