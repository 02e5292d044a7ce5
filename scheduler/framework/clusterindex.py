"""Cluster-wide lookups for the constraint plugins, kept incrementally by the cache.

InterPodAffinity and PodTopologySpread count placed pods that match a label selector across the
whole cluster, once per pending pod. Scanning every pod for that costs O(pods) per cycle; an index
by (namespace, label key, value) narrows a selector to its candidates first. The index holds
placed pods only (bound or assumed), as upstream's snapshot does: pending pods never count.

PodTopologySpread asks, per pending pod, how many placed pods of a namespace one selector
matches on each node and in each domain (a topology key's value). Walking the matching pods for
that costs O(matching pods) per cycle; `selector_counts` keeps those counts instead, started on
the first ask by one walk and then kept in step by every add and remove (the cache's, and a
preemption trial's), so a cycle reads O(nodes with such pods), or O(domains) through
`value_counts`. Terminating pods are not counted. The per-domain counts read the labels of
`nodes` (the cache's node map); the cache calls `nodes_changed` when a node is added, deleted,
relabelled, retainted, cordoned or changed in readiness, which drops them (and `node_memo`)
until asked again.

It also holds the other objects plugins read by name (namespaces for namespaceSelector, the
volume objects), filled by the cache's list+watch stores. All of it is read under the cache
lock, which the scheduling cycle holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework.labels import LabelSelector
from scheduler.framework.types import NodeInfo, PodInfo

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
DEPLOYMENTS = "deployments"  # watched by the rebalancer only: its opt-out annotation
OBJECT_KINDS = (
    NAMESPACES,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    CSI_NODES,
    *SELECTOR_KINDS,
    PDBS,
    DEPLOYMENTS,
)

_NONE: frozenset[str] = frozenset()
# Selectors counted per namespace; the least recently asked one goes beyond this (a pod per
# selector would otherwise make every add pay for selectors nobody asks about any more).
SELECTORS_PER_NAMESPACE = 64


class SelectorCounts:
    """Placed, non-terminating pods of one namespace that one selector matches: per node name
    (`by_node`, nodes the cache does not know included) and, per topology key asked through
    ClusterIndex.value_counts, per value of that key on the pods' known nodes ("" for a node
    without the key). Read only: the index keeps them."""

    __slots__ = ("by_node", "by_value")

    def __init__(self) -> None:
        self.by_node: dict[str, int] = {}
        self.by_value: dict[str, dict[str, int]] = {}

    def bump(self, node: str, sign: int, nodes: Mapping[str, NodeInfo] | None) -> None:
        _bump(self.by_node, node, sign)
        if self.by_value and nodes is not None:
            info = nodes.get(node)
            if info is not None:
                for key, counts in self.by_value.items():
                    _bump(counts, info.labels.get(key, ""), sign)


def terminating(pod: PodInfo) -> bool:
    return bool((pod.raw.get("metadata") or {}).get("deletionTimestamp"))


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
        # The node map whose labels value_counts reads (the cache's own; snapshot_of's), None
        # when the index is not kept with any. Its owner calls nodes_changed on every node
        # added, deleted, relabelled, retainted, cordoned or changed in readiness.
        self.nodes: Mapping[str, NodeInfo] | None = None
        # Plugins' data derived from the nodes' labels, taints, cordons and readiness, dropped
        # by nodes_changed.
        self.node_memo: dict[Any, Any] = {}
        self._selectors: dict[str, dict[LabelSelector, SelectorCounts]] = {}
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
        self._count(pod, node, 1)
        for listener in self.pod_listeners:
            listener(pod, node)

    def remove_pod(self, uid: str) -> None:
        pod = self.pods.pop(uid, None)
        node = self.placed.pop(uid, None)
        if pod is None:
            return
        if node is not None:
            self._count(pod, node, -1)
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

    # --- counts per selector (PodTopologySpread) ------------------------------------------
    def selector_counts(self, namespace: str, selector: LabelSelector) -> SelectorCounts:
        """The counts of `selector`'s placed pods in `namespace`, kept from now on (an empty
        selector counts nothing, as PodTopologySpread wants, and is not kept)."""
        if selector.nothing or not selector.requirements:
            return SelectorCounts()
        known = self._selectors.setdefault(namespace, {})
        found = known.pop(selector, None)
        if found is None:
            found = SelectorCounts()
            for uid in self.matching(namespace, selector):
                _bump(found.by_node, self.placed[uid], 1)
            if len(known) >= SELECTORS_PER_NAMESPACE:
                del known[next(iter(known))]
        known[selector] = found  # the most recently asked last
        return found

    def value_counts(self, counts: SelectorCounts, key: str) -> dict[str, int]:
        """`counts` per value of `key` on the pods' nodes, for an index kept with `nodes`."""
        found = counts.by_value.get(key)
        if found is None:
            found = counts.by_value[key] = {}
            nodes = self.nodes or {}
            for name, n in counts.by_node.items():
                node = nodes.get(name)
                if node is not None:
                    _bump(found, node.labels.get(key, ""), n)
        return found

    def matching(self, namespace: str, selector: LabelSelector) -> list[str]:
        """The uids of the placed, non-terminating pods of `namespace` that `selector` matches
        (a recount: what selector_counts keeps)."""
        if selector.nothing or not selector.requirements:
            return []
        found = selector.candidates(
            lambda k, v: self.with_label(namespace, k, v),
            lambda k: self.with_label_key(namespace, k),
        )
        uids = self.in_namespace(namespace).keys() if found is None else found
        pods = self.pods
        out = []
        for uid in uids:
            pod = pods.get(uid)
            if pod is None or pod.namespace != namespace or not selector.matches(pod.labels):
                continue
            if not terminating(pod):
                out.append(uid)
        return out

    def nodes_changed(self) -> None:
        """A node was added, deleted, relabelled, retainted, cordoned or changed in readiness:
        drop what was derived from the nodes' labels, taints, cordons and readiness."""
        self.node_memo.clear()
        for known in self._selectors.values():
            for counts in known.values():
                counts.by_value.clear()

    def _count(self, pod: PodInfo, node: str, sign: int) -> None:
        known = self._selectors.get(pod.namespace)
        if not known or terminating(pod):
            return
        labels = pod.labels
        for selector, counts in known.items():
            if selector.matches(labels):
                counts.bump(node, sign, self.nodes)

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


def _bump(counts: dict[str, int], key: str, n: int) -> None:
    left = counts.get(key, 0) + n
    if left:
        counts[key] = left
    else:
        del counts[key]


def _discard(index: dict[Any, set[str]], key: Any, uid: str) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(uid)
        if not members:
            del index[key]
