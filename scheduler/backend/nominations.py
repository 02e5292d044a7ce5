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
        # The same pods by node: a preemption asks for one node's on every trial (hundreds per
        # preemptor), while pods of an earlier churn may stay nominated by the dozen.
        self._by_node: dict[str, dict[str, PodInfo]] = {}

    def set(self, pod: PodInfo, node: str) -> None:
        with self._lock:
            old = self._by_uid.get(pod.uid)
            if old is not None and old[1] != node:
                self._drop(pod.uid, old[1])
            self._by_uid[pod.uid] = (pod, node)
            self._by_node.setdefault(node, {})[pod.uid] = pod

    def clear(self, uid: str) -> None:
        with self._lock:
            old = self._by_uid.pop(uid, None)
            if old is not None:
                self._drop(uid, old[1])

    def _drop(self, uid: str, node: str) -> None:
        pods = self._by_node.get(node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._by_node[node]

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
            pods = self._by_node.get(node)
            return list(pods.values()) if pods else []

    def by_node(self) -> dict[str, list[PodInfo]]:
        with self._lock:
            return {node: list(pods.values()) for node, pods in self._by_node.items()}
