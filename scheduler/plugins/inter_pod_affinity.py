"""InterPodAffinity: required pod affinity / anti-affinity filter, preferred terms score.

Upstream v1.34's rules (pkg/scheduler/framework/plugins/interpodaffinity):
- PreFilter counts, per topology pair (topologyKey, node's value), the placed pods that match ALL
  of the incoming pod's required affinity terms (each term's key counted), the placed pods that
  match each of its required anti-affinity terms, and the placed pods whose own required
  anti-affinity terms match the incoming pod (the symmetric check). A pair is counted only where
  the placed pod's node carries the key. Pods on nodes the cache does not know are ignored.
- Filter, in this order: every required affinity key must be on the node with a non-zero count
  there, else `node(s) didn't match pod affinity rules` (UnschedulableAndUnresolvable), except the
  first replica: when no placed pod matched the affinity terms anywhere and the pod matches its
  own terms, a node with all the keys passes. Then `node(s) didn't match pod anti-affinity rules`
  and `node(s) didn't satisfy existing pods anti-affinity rules` (both Unschedulable).
- Score sums, per topology pair of each placed pod's node: the incoming pod's preferred affinity
  weights (+) and anti-affinity weights (-) for placed pods its terms match; for placed pods whose
  terms match the incoming pod, their required affinity terms times hardPodAffinityWeight and their
  preferred affinity (+) and anti-affinity (-) weights. ignorePreferredTermsOfExistingPods skips
  the whole score when the incoming pod has no preferred terms. A node scores the sum over its own
  pairs; scores are then scaled min..max over the scored nodes to 0..100, truncated as Go does.
- Namespaces: an incoming term's namespaceSelector is resolved to names from the namespaces the
  cache lists; an existing pod's term is matched against the incoming pod's namespace labels.

matchLabelKeys / mismatchLabelKeys: the v1.34 apiserver (feature MatchLabelKeysInPodAffinity,
GA and on) merges them into the term's labelSelector when the pod is created, as `key In (value)`
and `key NotIn (value)` from the pod's own labels; kube-scheduler never reads them. So Ballast does
not merge them either: merging twice would be harmless for In but the scheduler would then disagree
with upstream on pods created with the gate off.

Cost: the incoming pod's terms are narrowed by the cluster index's label sets, and placed pods'
terms are grouped and indexed by label (pod_affinity_terms.ExistingTerms), so PreFilter and
PreScore cost grows with the matching pods, not the cluster; Filter is a few dict lookups a node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from scheduler.clusterindex import NAMESPACES, ClusterIndex
from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.plugins.pod_affinity_terms import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI,
    REQUIRED_AFFINITY,
    Term,
    existing_terms,
    terms_of,
)

if TYPE_CHECKING:
    from scheduler.config import Fields

NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
_FILTER = NAME + ".filter"
_SCORE = NAME + ".score"

_AFFINITY_FAILED = Status.reject(REASON_AFFINITY, unresolvable=True)
_ANTI_FAILED = Status.reject(REASON_ANTI_AFFINITY)
_EXISTING_FAILED = Status.reject(REASON_EXISTING_ANTI_AFFINITY)

Counts = dict[tuple[str, str], int]  # (topologyKey, value) -> matching pods


@dataclass(frozen=True)
class Args:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


def parse_args(f: Fields) -> Args:
    d = Args()
    args = Args(
        hard_pod_affinity_weight=f.integer(
            "hardPodAffinityWeight", d.hard_pod_affinity_weight, 0, 100
        ),
        ignore_preferred_terms_of_existing_pods=f.boolean(
            "ignorePreferredTermsOfExistingPods", d.ignore_preferred_terms_of_existing_pods
        ),
    )
    f.finish()
    return args


# --- counting placed pods ------------------------------------------------------------------
def _namespace_labels(cluster: ClusterIndex) -> dict[str, dict[str, str]]:
    return {
        name: (obj.get("metadata") or {}).get("labels") or {}
        for name, obj in cluster.objects.get(NAMESPACES, {}).items()
    }


def _resolve(terms: tuple[Term, ...], cluster: ClusterIndex) -> tuple[Term, ...]:
    if all(t.ns_selector.nothing or t.all_namespaces for t in terms):
        return terms  # nothing to look up (the usual case)
    labels = _namespace_labels(cluster)
    return tuple(t.resolved(labels) for t in terms)


def _candidates(term: Term, cluster: ClusterIndex) -> list[Iterable[str]]:
    """Sets of uids that hold every placed pod `term` (an incoming pod's, resolved) can match."""
    if term.all_namespaces:
        return [cluster.pods.keys()]  # namespaceSelector {}: rare, no narrowing by namespace
    out: list[Iterable[str]] = []
    for ns in term.namespaces:
        found = term.selector.candidates(
            partial(cluster.with_label, ns), partial(cluster.with_label_key, ns)
        )
        out.append(cluster.in_namespace(ns).keys() if found is None else found)
    return out


def _size(parts: list[Iterable[str]]) -> int:
    return sum(len(p) for p in parts)  # type: ignore[arg-type]


def _add(counts: Counts, node: NodeInfo, key: str, value: int) -> None:
    topology_value = node.labels.get(key)
    if topology_value is not None:
        pair = (key, topology_value)
        counts[pair] = counts.get(pair, 0) + value


def _affinity_counts(terms: tuple[Term, ...], snap: Snapshot) -> Counts:
    """Pairs of placed pods matching ALL `terms`, each term's key counted."""
    counts: Counts = {}
    if not terms:
        return counts
    cluster = snap.cluster
    parts = min((_candidates(t, cluster) for t in terms), key=_size)
    for uids in parts:
        for uid in uids:
            pod = cluster.pods[uid]
            if all(t.matches(pod, None) for t in terms):
                node = snap.nodes.get(cluster.placed[uid])
                if node is not None:
                    for t in terms:
                        _add(counts, node, t.topology_key, 1)
    return counts


def _anti_counts(terms: tuple[Term, ...], snap: Snapshot) -> Counts:
    counts: Counts = {}
    cluster = snap.cluster
    for t in terms:
        for uids in _candidates(t, cluster):
            for uid in uids:
                pod = cluster.pods[uid]
                if t.matches(pod, None):
                    node = snap.nodes.get(cluster.placed[uid])
                    if node is not None:
                        _add(counts, node, t.topology_key, 1)
    return counts


def _existing_anti_counts(
    pod: PodInfo, ns_labels: Mapping[str, str] | None, snap: Snapshot
) -> Counts:
    counts: Counts = {}
    for group, term, _ in existing_terms(snap.cluster).anti.candidates(pod.labels):
        if term.matches(pod, ns_labels):
            for node_name, members in group.nodes.items():
                node = snap.nodes.get(node_name)
                if node is not None:
                    _add(counts, node, term.topology_key, members)
    return counts


def _by_key(counts: Counts) -> dict[str, frozenset[str]]:
    """topologyKey -> the values with a positive count."""
    out: dict[str, set[str]] = {}
    for (key, value), n in counts.items():
        if n > 0:
            out.setdefault(key, set()).add(value)
    return {k: frozenset(v) for k, v in out.items()}


@dataclass(frozen=True)
class _FilterState:
    affinity: tuple[Term, ...]
    affinity_values: dict[str, frozenset[str]]
    first_replica: bool  # no placed pod matched and the pod matches its own terms
    # topologyKey -> values where the pod may not go, per reason
    anti_values: dict[str, frozenset[str]]
    existing_values: dict[str, frozenset[str]]

    def check(self, labels: Mapping[str, str]) -> Status | None:
        if self.affinity:
            pods_exist = True
            for t in self.affinity:
                value = labels.get(t.topology_key)
                if value is None:
                    return _AFFINITY_FAILED
                if value not in self.affinity_values.get(t.topology_key, ()):
                    pods_exist = False
            if not pods_exist and not self.first_replica:
                return _AFFINITY_FAILED
        for key, values in self.anti_values.items():
            if labels.get(key) in values:
                return _ANTI_FAILED
        for key, values in self.existing_values.items():
            if labels.get(key) in values:
                return _EXISTING_FAILED
        return None


# --- the plugin ------------------------------------------------------------------------------
class Plugin:
    name = NAME

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        terms = terms_of(pod)
        if terms.errors:
            return Status.reject("parsing pod: " + "; ".join(terms.errors), unresolvable=True)
        cluster = snap.cluster
        affinity = _resolve(terms.required_affinity, cluster)
        anti = _resolve(terms.required_anti, cluster)
        existing = _existing_anti_counts(pod, cluster.namespace_labels(pod.namespace), snap)
        if not existing and not affinity and not anti:
            return False
        affinity_counts = _affinity_counts(affinity, snap)
        state[_FILTER] = _FilterState(
            affinity=affinity,
            affinity_values=_by_key(affinity_counts),
            first_replica=not affinity_counts and all(t.matches(pod, None) for t in affinity),
            anti_values=_by_key(_anti_counts(anti, snap)),
            existing_values=_by_key(existing),
        )
        return True

    def _state(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> _FilterState | None:
        if _FILTER not in state and self.pre_filter(state, pod, snap) is not True:
            return None
        return state[_FILTER]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        s = self._state(state, pod, snap)
        verdict = s.check(node.labels) if s is not None else None
        return verdict or Status.success()

    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        s = self._state(state, pod, snap)
        if s is None:
            return {}
        if not s.affinity and not s.existing_values and len(s.anti_values) == 1:
            # The usual Deployment: anti-affinity to its own group on one key.
            ((key, values),) = s.anti_values.items()
            return {i: _ANTI_FAILED for i, n in enumerate(nodes) if n.labels.get(key) in values}
        out: dict[int, Status] = {}
        check = s.check
        for i, node in enumerate(nodes):
            verdict = check(node.labels)
            if verdict is not None:
                out[i] = verdict
        return out

    # --- score ---------------------------------------------------------------------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        terms = terms_of(pod)
        has_preferred = bool(terms.preferred_affinity or terms.preferred_anti)
        if not nodes or (self.args.ignore_preferred_terms_of_existing_pods and not has_preferred):
            return False
        cluster = snap.cluster
        scores: dict[str, dict[str, int]] = {}
        for t in _resolve(terms.preferred_affinity, cluster):
            self._score_incoming(scores, t, t.weight, snap)
        for t in _resolve(terms.preferred_anti, cluster):
            self._score_incoming(scores, t, -t.weight, snap)
        self._score_existing(scores, pod, snap)
        state[_SCORE] = scores
        return bool(scores)

    def _score_incoming(
        self, scores: dict[str, dict[str, int]], term: Term, weight: int, snap: Snapshot
    ) -> None:
        cluster = snap.cluster
        key = term.topology_key
        for uids in _candidates(term, cluster):
            for uid in uids:
                if term.matches(cluster.pods[uid], None):
                    node = snap.nodes.get(cluster.placed[uid])
                    value = node.labels.get(key) if node is not None else None
                    if value is not None:
                        by_value = scores.setdefault(key, {})
                        by_value[value] = by_value.get(value, 0) + weight

    def _score_existing(
        self, scores: dict[str, dict[str, int]], pod: PodInfo, snap: Snapshot
    ) -> None:
        ns_labels = snap.cluster.namespace_labels(pod.namespace)
        hard = self.args.hard_pod_affinity_weight
        for group, term, kind in existing_terms(snap.cluster).scoring.candidates(pod.labels):
            if kind == REQUIRED_AFFINITY:
                if hard <= 0:
                    continue
                weight = hard
            elif kind == PREFERRED_AFFINITY:
                weight = term.weight
            else:
                assert kind == PREFERRED_ANTI
                weight = -term.weight
            if not term.matches(pod, ns_labels):
                continue
            key = term.topology_key
            for node_name, members in group.nodes.items():
                node = snap.nodes.get(node_name)
                value = node.labels.get(key) if node is not None else None
                if value is not None:
                    by_value = scores.setdefault(key, {})
                    by_value[value] = by_value.get(value, 0) + weight * members

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        if _SCORE not in state:
            self.pre_score(state, pod, [node], snap)
        total = 0
        labels = node.labels
        for key, by_value in state.get(_SCORE, {}).items():
            value = labels.get(key)
            if value is not None:
                total += by_value.get(value, 0)
        return total

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        if not state.get(_SCORE) or not scores:
            return
        low, high = min(scores.values()), max(scores.values())
        spread = high - low
        for node, value in scores.items():
            # Go: float64(MaxNodeScore) * (float64(s-min) / float64(max-min)), then int64()
            scores[node] = (
                int(float(MAX_NODE_SCORE) * ((value - low) / spread)) if spread > 0 else 0
            )
