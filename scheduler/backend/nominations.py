"""The in-memory half of upstream's nominator: pods nominated to a node by a preemption are
counted on that node by later cycles (those of equal or higher priority than the pod being
scheduled), so the room freed for a preemptor is not taken by a lower-priority pod meanwhile."""

from __future__ import annotations

import threading

from scheduler.framework import PodInfo


class Nominations:
    """Pods nominated to a node by a preemption, until bound, deleted or re-nominated."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_uid: dict[str, tuple[PodInfo, str]] = {}

    def set(self, pod: PodInfo, node: str) -> None:
        with self._lock:
            self._by_uid[pod.uid] = (pod, node)

    def clear(self, uid: str) -> None:
        with self._lock:
            self._by_uid.pop(uid, None)

    def node_of(self, uid: str) -> str:
        with self._lock:
            entry = self._by_uid.get(uid)
            return entry[1] if entry else ""

    def __bool__(self) -> bool:
        return bool(self._by_uid)

    def on_node(self, node: str) -> list[PodInfo]:
        if not self._by_uid:  # the common case, asked on every preemption trial: no lock
            return []
        with self._lock:
            return [pod for pod, where in self._by_uid.values() if where == node]

    def by_node(self) -> dict[str, list[PodInfo]]:
        with self._lock:
            out: dict[str, list[PodInfo]] = {}
            for pod, where in self._by_uid.values():
                out.setdefault(where, []).append(pod)
            return out
