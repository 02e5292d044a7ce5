"""Cluster-wide lookups for the constraint plugins, kept incrementally by the cache.

InterPodAffinity and PodTopologySpread count placed pods that match a label selector across the
whole cluster, once per pending pod. Scanning every pod for that costs O(pods) per cycle; an index
by (namespace, label key, value) narrows a selector to its candidates first. The index holds
placed pods only (bound or assumed), as upstream's snapshot does: pending pods never count.

It also holds the other objects plugins read by name (namespaces for namespaceSelector, the
volume objects), filled by the cache's list+watch stores. All of it is read under the cache
lock, which the scheduling cycle holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.framework.types import PodInfo

# Object kinds the cache lists and watches besides nodes and pods (plural resource names).
NAMESPACES = "namespaces"
PVCS = "persistentvolumeclaims"
PVS = "persistentvolumes"
STORAGE_CLASSES = "storageclasses"
CSI_NODES = "csinodes"
# PodTopologySpread's default constraints take their selector from these (upstream's
# DefaultSelector). Upstream does not requeue pods on their changes, so neither does the cache.
SERVICES = "services"
REPLICATION_CONTROLLERS = "replicationcontrollers"
REPLICA_SETS = "replicasets"
STATEFUL_SETS = "statefulsets"
SELECTOR_KINDS = (SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS)
PDBS = "poddisruptionbudgets"  # policy/v1, read by preemption
OBJECT_KINDS = (NAMESPACES, PVCS, PVS, STORAGE_CLASSES, CSI_NODES, *SELECTOR_KINDS, PDBS)

_NONE: frozenset[str] = frozenset()


def object_key(obj: dict[str, Any]) -> str:
    """ "namespace/name" for namespaced objects, "name" for cluster-scoped ones."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name', '')}" if ns else meta.get("name", "")


class ClusterIndex:
    def __init__(self) -> None:
        self.placed: dict[str, str] = {}  # uid -> node name
        self.pods: dict[str, PodInfo] = {}  # uid -> placed pod
        self.affinity_pods: dict[str, PodInfo] = {}
        self.anti_affinity_pods: dict[str, PodInfo] = {}
        self._by_namespace: dict[str, dict[str, PodInfo]] = {}
        self._by_label: dict[tuple[str, str, str], set[str]] = {}
        self._by_key: dict[tuple[str, str], set[str]] = {}
        self.objects: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in OBJECT_KINDS}
        self.synced: set[str] = set()
        # Called as listener(pod, node) after a pod is added and listener(pod, None) after it
        # is removed, for plugins that keep indexes of their own in step (InterPodAffinity).
        self.pod_listeners: list[Callable[[PodInfo, str | None], None]] = []

    # --- pods ---------------------------------------------------------------------------
    def add_pod(self, pod: PodInfo, node: str) -> None:
        """Count a placed pod; adding a known uid replaces the old copy."""
        if pod.uid in self.pods:
            self.remove_pod(pod.uid)
        uid, ns = pod.uid, pod.namespace
        self.placed[uid] = node
        self.pods[uid] = pod
        self._by_namespace.setdefault(ns, {})[uid] = pod
        for key, value in pod.labels.items():
            self._by_label.setdefault((ns, key, value), set()).add(uid)
            self._by_key.setdefault((ns, key), set()).add(uid)
        if pod.has_pod_affinity:
            self.affinity_pods[uid] = pod
        if pod.has_required_anti_affinity:
            self.anti_affinity_pods[uid] = pod
        for listener in self.pod_listeners:
            listener(pod, node)

    def remove_pod(self, uid: str) -> None:
        pod = self.pods.pop(uid, None)
        self.placed.pop(uid, None)
        if pod is None:
            return
        ns = pod.namespace
        members = self._by_namespace.get(ns)
        if members is not None:
            members.pop(uid, None)
            if not members:
                del self._by_namespace[ns]
        for key, value in pod.labels.items():
            _discard(self._by_label, (ns, key, value), uid)
            _discard(self._by_key, (ns, key), uid)
        self.affinity_pods.pop(uid, None)
        self.anti_affinity_pods.pop(uid, None)
        for listener in self.pod_listeners:
            listener(pod, None)

    def in_namespace(self, namespace: str) -> dict[str, PodInfo]:
        return self._by_namespace.get(namespace) or {}

    def with_label(self, namespace: str, key: str, value: str) -> set[str] | frozenset[str]:
        return self._by_label.get((namespace, key, value)) or _NONE

    def with_label_key(self, namespace: str, key: str) -> set[str] | frozenset[str]:
        return self._by_key.get((namespace, key)) or _NONE

    # --- other objects ------------------------------------------------------------------
    def put(self, kind: str, key: str, obj: dict[str, Any]) -> None:
        self.objects.setdefault(kind, {})[key] = obj

    def drop(self, kind: str, key: str) -> None:
        self.objects.setdefault(kind, {}).pop(key, None)

    def replace(self, kind: str, items: list[dict[str, Any]]) -> None:
        """A fresh list of one kind; marks the kind synced."""
        self.objects[kind] = {object_key(o): o for o in items}
        self.synced.add(kind)

    def namespace_labels(self, name: str) -> dict[str, str] | None:
        ns = self.objects[NAMESPACES].get(name)
        if ns is None:
            return None
        return (ns.get("metadata") or {}).get("labels") or {}


def _discard(index: dict[Any, set[str]], key: Any, uid: str) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(uid)
        if not members:
            del index[key]
