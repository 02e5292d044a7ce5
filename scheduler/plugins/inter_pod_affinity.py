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

matchLabelKeys / mismatchLabelKeys: the v1.34 apiserver (feature gate MatchLabelKeysInPodAffinity,
on by default) merges them into the term's labelSelector when the pod is created, as
`key In (value)` and `key NotIn (value)` from the pod's own labels, and kube-scheduler never reads
them; tests/integration/test_scheduler_pod_affinity.py reads the merged selector back from the
sandbox's apiserver. So Ballast does not merge them again: the stored selector is the whole rule.

Cost: the incoming pod's terms are narrowed by the cluster index's label sets, and placed pods'
terms are grouped and indexed by label (pod_affinity_terms.ExistingTerms), so PreFilter and
PreScore cost grows with the matching pods, not the cluster; Filter is a few dict lookups a node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.clusterindex import NAMESPACES, ClusterIndex
from scheduler.framework.labels import EXISTS, IN
from scheduler.plugins.helpers.pod_affinity_terms import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI,
    REQUIRED_AFFINITY,
    Term,
    existing_terms,
    terms_of,
)

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
_FILTER = NAME + ".filter"
_SCORE = NAME + ".score"

_AFFINITY_FAILED = Status.reject(REASON_AFFINITY, unresolvable=True)
_ANTI_FAILED = Status.reject(REASON_ANTI_AFFINITY)
_EXISTING_FAILED = Status.reject(REASON_EXISTING_ANTI_AFFINITY)

Pairs = dict[str, set[str]]  # topologyKey -> the node values where matching pods are


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


def _put(found: Pairs, key: str, node: NodeInfo | None) -> None:
    value = node.labels.get(key) if node is not None else None
    if value is not None:
        values = found.get(key)
        if values is None:
            found[key] = {value}
        else:
            values.add(value)


def _exact(term: Term) -> bool:
    """True when the index's candidates for `term` all match it (one In or Exists)."""
    reqs = term.selector.requirements
    return not term.all_namespaces and len(reqs) == 1 and reqs[0][1] in (IN, EXISTS)


def _affinity_pairs(terms: tuple[Term, ...], snap: Snapshot) -> Pairs:
    """Pairs of placed pods matching ALL `terms`, each term's key counted (upstream counts
    pods per pair; only whether a pair has any matters, and counts never go down here)."""
    found: Pairs = {}
    if not terms:
        return found
    cluster, nodes = snap.cluster, snap.nodes
    pods, placed = cluster.pods, cluster.placed
    for uids in min((_candidates(t, cluster) for t in terms), key=_size):
        for uid in uids:
            pod = pods[uid]
            if all(t.matches(pod, None) for t in terms):
                node = nodes.get(placed[uid])
                for t in terms:
                    _put(found, t.topology_key, node)
    return found


def _anti_pairs(terms: tuple[Term, ...], snap: Snapshot) -> Pairs:
    found: Pairs = {}
    cluster, nodes = snap.cluster, snap.nodes
    pods, placed = cluster.pods, cluster.placed
    for t in terms:
        key, exact, selector = t.topology_key, _exact(t), t.selector
        values: set[str] = set()
        for uids in _candidates(t, cluster):
            for uid in uids:
                # candidates are already in the term's namespaces: only labels are left
                if exact or selector.matches(pods[uid].labels):
                    node = nodes.get(placed[uid])
                    if node is not None:
                        value = node.labels.get(key)
                        if value is not None:
                            values.add(value)
        if values:
            found.setdefault(key, set()).update(values)
    return found


def _existing_anti_pairs(
    pod: PodInfo, ns_labels: Mapping[str, str] | None, snap: Snapshot
) -> Pairs:
    found: Pairs = {}
    nodes = snap.nodes
    for group, term, _ in existing_terms(snap.cluster).anti.candidates(pod.labels):
        if term.matches(pod, ns_labels):
            key = term.topology_key
            for node_name in group.nodes:
                _put(found, key, nodes.get(node_name))
    return found


@dataclass(frozen=True)
class _FilterState:
    affinity: tuple[Term, ...]
    affinity_pairs: Pairs
    first_replica: bool  # no placed pod matched and the pod matches its own terms
    anti_pairs: Pairs  # where the incoming pod's anti-affinity forbids it
    existing_pairs: Pairs  # where placed pods' anti-affinity forbids it
    # the anti-affinity verdicts by the node's value, when they involve one key only
    one_key: str | None
    by_value: dict[str, Status]

    @classmethod
    def of(
        cls,
        affinity: tuple[Term, ...],
        affinity_pairs: Pairs,
        first_replica: bool,
        anti_pairs: Pairs,
        existing_pairs: Pairs,
    ) -> _FilterState:
        keys = anti_pairs.keys() | existing_pairs.keys()
        one_key = next(iter(keys)) if len(keys) == 1 else None
        by_value: dict[str, Status] = {}
        if one_key is not None:
            by_value = dict.fromkeys(existing_pairs.get(one_key, ()), _EXISTING_FAILED)
            by_value.update(dict.fromkeys(anti_pairs.get(one_key, ()), _ANTI_FAILED))
        return cls(
            affinity, affinity_pairs, first_replica, anti_pairs, existing_pairs, one_key, by_value
        )

    def check(self, labels: Mapping[str, str]) -> Status | None:
        if self.affinity:
            pods_exist = True
            for t in self.affinity:
                value = labels.get(t.topology_key)
                if value is None:
                    return _AFFINITY_FAILED  # every key must be on the node
                if value not in self.affinity_pairs.get(t.topology_key, ()):
                    pods_exist = False
            if not pods_exist and not self.first_replica:
                return _AFFINITY_FAILED
        if self.one_key is not None:
            return self.by_value.get(labels.get(self.one_key))  # type: ignore[arg-type]
        for key, values in self.anti_pairs.items():
            if labels.get(key) in values:
                return _ANTI_FAILED
        for key, values in self.existing_pairs.items():
            if labels.get(key) in values:
                return _EXISTING_FAILED
        return None


# --- the plugin ------------------------------------------------------------------------------
class Plugin:
    name = NAME
    score_reads_loads = False  # placed pods, the node and objects: no watcher figures
    skip_holds_with_fewer_pods = True  # no terms and no placed anti-affinity: fewer pods keep it so

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        terms = terms_of(pod)
        if terms.errors:
            return Status.reject("parsing pod: " + "; ".join(terms.errors), unresolvable=True)
        cluster = snap.cluster
        if not terms.required_affinity and not terms.required_anti:
            if not cluster.anti_affinity_pods:  # no placed pod's anti-affinity to check
                return False
        affinity = _resolve(terms.required_affinity, cluster)
        anti = _resolve(terms.required_anti, cluster)
        existing = _existing_anti_pairs(pod, cluster.namespace_labels(pod.namespace), snap)
        if not existing and not affinity and not anti:
            return False
        affinity_pairs = _affinity_pairs(affinity, snap)
        state[_FILTER] = _FilterState.of(
            affinity,
            affinity_pairs,
            not affinity_pairs and all(t.matches(pod, None) for t in affinity),
            _anti_pairs(anti, snap),
            existing,
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
        if not s.affinity and s.one_key is not None:
            # The usual Deployment: anti-affinity to its own group on one key.
            key, get = s.one_key, s.by_value.get
            return {
                i: verdict
                for i, node in enumerate(nodes)
                if (verdict := get(node.labels.get(key))) is not None  # type: ignore[arg-type]
            }
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

    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        if _SCORE not in state:
            self.pre_score(state, pod, nodes, snap)
        by_key: dict[str, dict[str, int]] = state.get(_SCORE, {})
        if len(by_key) == 1:
            ((key, by_value),) = by_key.items()
            get = by_value.get
            return [get(n.labels.get(key), 0) for n in nodes]  # type: ignore[arg-type]
        return [self.score(state, pod, n, snap) for n in nodes]

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
