"""Pod affinity terms parsed once per pod, and an index of placed pods' terms for InterPodAffinity.

A term (upstream's framework.AffinityTerm) matches a pod when the pod's namespace is in the term's
namespaces, or its namespace's labels match the term's namespaceSelector, and the pod's labels
match the term's labelSelector. The namespaces default to the owning pod's own only when both
`namespaces` is empty and `namespaceSelector` is null; a null namespaceSelector matches no
namespace, an empty one ({}) every namespace. matchLabelKeys / mismatchLabelKeys are not read here:
see inter_pod_affinity.py.

`ExistingTerms` groups the placed pods that carry affinity terms by (namespace, terms), since the
replicas of one workload share them, and indexes each group's terms by one label the matching pod
must have. The symmetric checks (an existing pod's terms against the incoming pod) then look at the
groups the incoming pod's labels can match, not at every placed pod.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework import PodInfo
from scheduler.framework.clusterindex import ClusterIndex
from scheduler.framework.labels import EXISTS, IN, NOTHING, LabelSelector

MEMO_KEY = "InterPodAffinity"

# Kinds of an existing pod's terms, as they act on an incoming pod.
REQUIRED_ANTI = "required-anti"  # filters (the symmetric anti-affinity check)
REQUIRED_AFFINITY = "required-affinity"  # scores with hardPodAffinityWeight
PREFERRED_AFFINITY = "preferred-affinity"  # scores +weight
PREFERRED_ANTI = "preferred-anti"  # scores -weight


@dataclass(frozen=True)
class Term:
    namespaces: frozenset[str]
    selector: LabelSelector
    ns_selector: LabelSelector  # NOTHING when the term has none
    topology_key: str
    weight: int = 0  # preferred terms only

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str] | None) -> bool:
        """Upstream's AffinityTerm.Matches; `ns_labels` are the labels of `pod`'s namespace."""
        if pod.namespace in self.namespaces or (
            not self.ns_selector.nothing and self.ns_selector.matches(ns_labels or {})
        ):
            return self.selector.matches(pod.labels)
        return False

    def resolved(self, namespace_labels: Mapping[str, Mapping[str, str]]) -> Term:
        """The incoming pod's term with its namespaceSelector turned into names (upstream's
        mergeAffinityTermNamespacesIfNotEmpty), so matching needs no namespace lookups; an empty
        selector stays, meaning every namespace."""
        if self.ns_selector.everything or self.ns_selector.nothing:
            return self
        chosen = {n for n, labels in namespace_labels.items() if self.ns_selector.matches(labels)}
        return _replace_ns(self, self.namespaces | chosen)

    @property
    def all_namespaces(self) -> bool:
        return self.ns_selector.everything


def _replace_ns(term: Term, namespaces: frozenset[str]) -> Term:
    return Term(namespaces, term.selector, NOTHING, term.topology_key, term.weight)


def _term(owner_ns: str, raw: Mapping[str, Any], weight: int = 0) -> Term:
    names = raw.get("namespaces") or []
    raw_ns_selector = raw.get("namespaceSelector")
    namespaces = (
        frozenset(names) if names or raw_ns_selector is not None else frozenset((owner_ns,))
    )
    return Term(
        namespaces=namespaces,
        selector=LabelSelector.parse(raw.get("labelSelector")),
        ns_selector=LabelSelector.parse(raw_ns_selector),
        topology_key=raw.get("topologyKey") or "",
        weight=weight,
    )


@dataclass(frozen=True)
class PodTerms:
    """A pod's four term lists; a list that fails to parse is empty and its error kept."""

    required_affinity: tuple[Term, ...] = ()
    required_anti: tuple[Term, ...] = ()
    preferred_affinity: tuple[Term, ...] = ()
    preferred_anti: tuple[Term, ...] = ()
    errors: tuple[str, ...] = ()


_NO_TERMS = PodTerms()


def _parse_list(ns: str, items: Any, weighted: bool, label: str, errors: list[str]) -> tuple:
    try:
        if weighted:
            return tuple(
                _term(ns, w.get("podAffinityTerm") or {}, int(w.get("weight") or 0))
                for w in items or ()
            )
        return tuple(_term(ns, t) for t in items or ())
    except ValueError as exc:
        errors.append(f"{label}: {exc}")
        return ()


def terms_of(pod: PodInfo) -> PodTerms:
    """The pod's parsed terms, memoised on the PodInfo."""
    memo = pod.memo.get(MEMO_KEY)
    if memo is not None:
        return memo
    affinity = (pod.raw.get("spec") or {}).get("affinity") or {}
    aff = affinity.get("podAffinity") or {}
    anti = affinity.get("podAntiAffinity") or {}
    if not aff and not anti:
        parsed = _NO_TERMS
    else:
        ns, errors = pod.namespace, []
        req = "requiredDuringSchedulingIgnoredDuringExecution"
        pref = "preferredDuringSchedulingIgnoredDuringExecution"
        parsed = PodTerms(
            required_affinity=_parse_list(ns, aff.get(req), False, "requiredAffinityTerms", errors),
            required_anti=_parse_list(
                ns, anti.get(req), False, "requiredAntiAffinityTerms", errors
            ),
            preferred_affinity=_parse_list(
                ns, aff.get(pref), True, "preferredAffinityTerms", errors
            ),
            preferred_anti=_parse_list(
                ns, anti.get(pref), True, "preferredAntiAffinityTerms", errors
            ),
            errors=tuple(errors),
        )
    pod.memo[MEMO_KEY] = parsed
    return parsed


def _signature(pod: PodInfo) -> tuple[str, str]:
    """Pods with equal signatures have equal terms. repr, not sorted JSON: pods of one workload
    come from the same template through the same serializer, so their dicts have one key order;
    a pod whose order differs only starts a group of its own, which costs nothing in results."""
    affinity = (pod.raw.get("spec") or {}).get("affinity") or {}
    return pod.namespace, repr((affinity.get("podAffinity"), affinity.get("podAntiAffinity")))


@dataclass(eq=False)
class Group:
    """Placed pods sharing one namespace and the same terms; counted per node."""

    terms: PodTerms
    nodes: dict[str, int] = field(default_factory=dict)  # node name -> members there


Entry = tuple[Group, Term, str]  # (group, term, kind)


class _TermIndex:
    """Entries by one label a pod must carry to match the term: (key, value) for an In
    requirement, key alone for Exists; the rest (only negative requirements, or an empty
    selector) are checked for every pod."""

    def __init__(self) -> None:
        self.by_value: dict[tuple[str, str], dict[int, Entry]] = {}
        self.by_key: dict[str, dict[int, Entry]] = {}
        self.others: dict[int, Entry] = {}

    def _slots(self, term: Term) -> list[dict[int, Entry]]:
        for key, op, values in term.selector.requirements:
            if op == IN:
                return [self.by_value.setdefault((key, v), {}) for v in values]
        for key, op, _ in term.selector.requirements:
            if op == EXISTS:
                return [self.by_key.setdefault(key, {})]
        return [self.others]

    def add(self, entry: Entry) -> None:
        if entry[1].selector.nothing:
            return  # a null labelSelector matches no pod
        for slot in self._slots(entry[1]):
            slot[id(entry)] = entry

    def remove(self, entry: Entry) -> None:
        if entry[1].selector.nothing:
            return
        for slot in self._slots(entry[1]):
            slot.pop(id(entry), None)

    def candidates(self, labels: Mapping[str, str]) -> Iterable[Entry]:
        """Every entry whose term could match a pod with `labels` (each once)."""
        for item in labels.items():
            found = self.by_value.get(item)
            if found:
                yield from found.values()
            found = self.by_key.get(item[0])
            if found:
                yield from found.values()
        yield from self.others.values()


class ExistingTerms:
    """The terms of placed pods with pod affinity, kept in step with a ClusterIndex."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], Group] = {}
        self.entries: dict[tuple[str, str], list[Entry]] = {}
        self.members: dict[str, tuple[tuple[str, str], str]] = {}  # uid -> (group key, node)
        self.anti = _TermIndex()  # REQUIRED_ANTI entries
        self.scoring = _TermIndex()  # the other kinds

    def pod_changed(self, pod: PodInfo, node: str | None) -> None:
        """ClusterIndex listener: `node` None when the pod left."""
        if node is None:
            self._remove(pod.uid)
        elif pod.has_pod_affinity:
            self._add(pod, node)

    def _add(self, pod: PodInfo, node: str) -> None:
        self._remove(pod.uid)
        key = _signature(pod)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(terms_of(pod))
            self._index(key, group)
        group.nodes[node] = group.nodes.get(node, 0) + 1
        self.members[pod.uid] = (key, node)

    def _remove(self, uid: str) -> None:
        known = self.members.pop(uid, None)
        if known is None:
            return
        key, node = known
        group = self.groups[key]
        left = group.nodes[node] - 1
        if left:
            group.nodes[node] = left
        else:
            del group.nodes[node]
        if not group.nodes:
            del self.groups[key]
            for entry in self.entries.pop(key):
                (self.anti if entry[2] == REQUIRED_ANTI else self.scoring).remove(entry)

    def _index(self, key: tuple[str, str], group: Group) -> None:
        t = group.terms
        entries: list[Entry] = [(group, term, REQUIRED_ANTI) for term in t.required_anti]
        entries += [(group, term, REQUIRED_AFFINITY) for term in t.required_affinity]
        entries += [(group, term, PREFERRED_AFFINITY) for term in t.preferred_affinity]
        entries += [(group, term, PREFERRED_ANTI) for term in t.preferred_anti]
        self.entries[key] = entries
        for entry in entries:
            (self.anti if entry[2] == REQUIRED_ANTI else self.scoring).add(entry)


_BY_INDEX: weakref.WeakKeyDictionary[ClusterIndex, ExistingTerms] = weakref.WeakKeyDictionary()


def existing_terms(cluster: ClusterIndex) -> ExistingTerms:
    """The ExistingTerms of `cluster`, built on first use and then kept by its listener."""
    found = _BY_INDEX.get(cluster)
    if found is None:
        found = _BY_INDEX[cluster] = ExistingTerms()
        for uid, pod in cluster.affinity_pods.items():
            found.pod_changed(pod, cluster.placed[uid])
        cluster.pod_listeners.append(found.pod_changed)
    return found
