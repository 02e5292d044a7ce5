"""PeakFit: score a node by its predicted peak with the pod added, against its allocatable;
optionally refuse a node the peak would take past a limit (docs/peak-model.md).

The predictor is Bashir et al.'s (EuroSys 2021, "Take it to the Limit") max of predictors, with
the offline peak study's node term (docs/peak-model.md), per resource (CPU millicores, memory
bytes), over the pods on the node plus the new one:
- RC-like: the sum over pods of each pod's usage percentile (`percentile`: p90, p95, p99, or
  max, the default: the most it used in the last 24 hours);
- N-sigma: the sum of the pods' means plus `nSigma` times the standard deviation of their sum,
  sqrt(sum over workloads of (sum of that workload's replicas' stds)^2): the replicas of one
  workload see the same traffic, so their peaks coincide and their stds add linearly; different
  workloads are taken as independent;
- with `nodePeak` (the default), the node's own most used over the watcher's last 72 hours,
  plus the unmeasured pods' estimates (which it may not have seen) and the new pod's figure;
- the predicted peak is the largest of them.

A pod's figures come from the watcher's per-pod statistics (/api/v1/pods) once it has
`minSamples` samples in the window (or a full window, when the watcher's holds fewer: a short
window, or the benchmark's replay in trace time, 5 samples). The new pod is predicted from its
workload's measured replicas (their mean figures per replica, in the same workload group as
those on the node) when there are any. A pod without figures of its own (the new pod, one just
bound, one not measured) whose workload has no measured replica running but has a history at
the watcher (`workloadHistory`, kept past its pods: watcher/workloadhistory.py) takes that
history's day max, the most one replica used, as its percentile, and the mean of its buckets'
maxima as its mean (high, an hour's max being at least its mean, and never above the
percentile), with no deviation. With neither, the estimator's rules
(plugins/helpers/estimator.py: its workload profile, else its requests or limits scaled) give
one figure, counted as its mean and its percentile, with no deviation. With `percentile: max`,
a measured pod younger than the look-back (its maxima fill fewer of the day's buckets: `held`)
takes the larger of its own max and its workload's day max, in RC-like and, for the part it
raises, in the node term (the node has not seen the day the pod has not lived); its mean and
deviation stay its own. The new pod borrows its replicas' figures so raised. Those sources
(replicas, workload history, the raise) are plugins/helpers/podfigures.py's.

What the node uses beyond its pods (the system, the kubelet, pods the metrics miss) is the
node window's mean less the pods' means, when positive and fresh; it is added to both
predictors. A node whose pods are all unmeasured and without workload history (the watcher
serves no per-pod statistics, or none for this node's pods) is predicted from its own window
instead: RC-like is the window's p95, N-sigma its mean plus `nSigma` window stds (the paper's
machine-level N-sigma), plus the pods bound since the window's last sample.

Score per resource: (1 - peak / allocatable) x 100, clamped to 0..100; the node's is the lower
of CPU and memory. Filter (`peakLimitPercent` > 0): a node whose predicted CPU or memory peak
passes that percentage of allocatable is refused while another node of the same filter pass
stays under it (the pod spills over rather than waits); with `strict` it is refused whatever
the others, as Koordinator's LoadAware filter refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework import (
    CPU,
    MAX_NODE_SCORE,
    MEMORY,
    CycleState,
    NodeInfo,
    PodInfo,
    Snapshot,
    Status,
)
from scheduler.framework.podusage import PERCENTILES, PodUsage, WorkloadPeak
from scheduler.framework.resources import go_round_array
from scheduler.framework.spread import spread_scores
from scheduler.plugins.helpers import estimator, podfigures
from scheduler.plugins.helpers.estimator import EstimatorArgs, parse_estimator_args
from scheduler.plugins.helpers.loadview import usage_arrays

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "PeakFit"
RESOURCES = (CPU, MEMORY)
# How a node's pods were counted (explain): per pod, from the node's window, or neither.
PODS, NODE = "pods", "node"
RC_LIKE, N_SIGMA, NODE_PEAK = "rc-like", "n-sigma", "node-peak"
# CycleState: node name -> its prediction's parts (explain reads them through `parts_of`), and
# "" -> where the pod's figures came from.
PARTS = NAME + ".parts"
PART_FIELDS = (
    "peak", "rcLike", "nSigma", "mean", "sigma", "podShare", "allocatable", "nodePeak",
    "requested",  # with `requestsTerm`: the node's requests with the pod's (else 0)
)  # fmt: skip
_MEMO = NAME + ".sums"  # on the plugin: node name -> (key, sums)
OVER_LIMIT = "node(s) would pass the predicted peak limit"
DAY, RECENT = "day", "recent"  # `lookBack`: a pod's figure from its day or its last buckets
LOOK_BACKS = (DAY, RECENT)


@dataclass(frozen=True)
class Args:
    # The offline peak study's recommendation (bench/peaks, i45a at e13914e, 3 seeds,
    # docs/peak-model.md): max(each pod's max over the last day summed, the node's own max
    # over 3 days, with the new pod's day max added to both): <= 0.47 % violations at every
    # horizon from 5 minutes to an hour, 71.2 % savings. N-sigma is off (0: it never passes
    # the sum of maxima); the best of the paper's own set there was max(N-sigma with N = 4,
    # the pods' 1-day maxima), 68.3 %.
    n_sigma: float = 0.0
    percentile: str = "max"
    node_peak: bool = True
    min_samples: int = 8
    peak_limit_percent: float = 0.0  # 0: the filter passes every node
    strict: bool = False
    estimator: EstimatorArgs = EstimatorArgs()
    # Issue 45's online study (bench/placement/online.py, docs/peak-model.md): each pod whose
    # workload has a history at its workload's most of the last few buckets ("recent") rather
    # than of the day; and the node's requests beside its predicted peak, scores spread over
    # the nodes' range. Off by default until a full run decides (docs/placement.md's rule).
    look_back: str = DAY
    requests_term: bool = False


def parse_args(f: Fields) -> Args:
    d = Args()
    args = Args(
        n_sigma=f.number("nSigma", d.n_sigma, 0, 100),
        percentile=f.string("percentile", d.percentile, PERCENTILES),
        node_peak=f.boolean("nodePeak", d.node_peak),
        min_samples=f.integer("minSamples", d.min_samples, 1, 1_000_000),
        peak_limit_percent=f.number("peakLimitPercent", d.peak_limit_percent, 0, 1000),
        strict=f.boolean("strict", d.strict),
        estimator=parse_estimator_args(f),
        look_back=f.string("lookBack", d.look_back, LOOK_BACKS),
        requests_term=f.boolean("requestsTerm", d.requests_term),
    )
    f.finish()
    return args


# ---- the predictor (pure) ---------------------------------------------------------------------
@dataclass(frozen=True)
class Sums:
    """One resource of one node's pods, before the new pod: sums the predictor needs."""

    mean: float  # sum of means (and of the unmeasured pods' estimates)
    rc: float  # sum of percentiles (and of the estimates)
    groups: dict[str, float]  # workload -> sum of its replicas' stds on the node
    ss: float  # sum over groups of their std sum squared

    @classmethod
    def of(cls, pods: list[tuple[str, float, float, float]]) -> Sums:
        """From (group, mean, std, percentile) per pod."""
        groups: dict[str, float] = {}
        mean = rc = 0.0
        for group, m, s, p in pods:
            mean += m
            rc += p
            if s > 0:
                groups[group] = groups.get(group, 0.0) + s
        return cls(mean, rc, groups, sum(v * v for v in groups.values()))


def predict(
    mean: np.ndarray,
    rc: np.ndarray,
    ss: np.ndarray,
    group_std: np.ndarray,
    n_sigma: float,
    add_mean: float,
    add_std: float,
    add_pct: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node, with a pod of (mean, std, percentile) added whose workload already has
    `group_std` of std on the node: (peak, RC-like, N-sigma, the N-sigma's deviation term)."""
    ss_with = np.maximum(ss - group_std**2 + (group_std + add_std) ** 2, 0.0)
    sigma = n_sigma * np.sqrt(ss_with)
    n_sig = mean + add_mean + sigma
    rc_like = rc + add_pct
    return np.maximum(rc_like, n_sig), rc_like, n_sig, sigma


def node_peak(
    pods: list[tuple[str, float, float, float]], n_sigma: float
) -> tuple[float, float, float]:
    """(peak, RC-like, N-sigma) of pods given as (group, mean, std, percentile): the predictor
    for one node, what `predict` computes for many."""
    s = Sums.of(pods)
    peak, rc, ns, _ = predict(
        np.array([s.mean]), np.array([s.rc]), np.array([s.ss]), np.zeros(1), n_sigma, 0, 0, 0
    )
    return float(peak[0]), float(rc[0]), float(ns[0])


def scores_from(peak: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Unrounded 0..100 scores: the room the predicted peak leaves, 0 for no capacity."""
    valid = capacity > 0
    room = 1.0 - peak / np.where(valid, capacity, 1.0)
    return np.where(valid, np.clip(room, 0.0, 1.0) * MAX_NODE_SCORE, 0.0)


# ---- the plugin -------------------------------------------------------------------------------
@dataclass(frozen=True)
class _NodeSums:
    mode: str  # PODS or NODE
    sums: tuple[Sums, Sums]  # cpu, memory
    measured: int
    estimated: int
    unmeasured: tuple[float, float]  # the figures of the pods without history, cpu, memory
    from_history: int = 0  # of the pods without history, those counted from their workload's
    raised: int = 0  # of the measured pods, those whose max their workload's day raised
    # the means counted for the pods not measured (history or estimate), cpu, memory
    unmeasured_mean: tuple[float, float] = (0.0, 0.0)


class Plugin:
    name = NAME
    score_falls_with_load = True  # every predictor grows with the node's figures
    reads_pod_usage = True  # the runtime fetches /api/v1/pods for it

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()
        self._memo: dict[str, tuple[tuple, _NodeSums]] = {}

    # -- per pod on a node ----------------------------------------------------------------------
    def _estimate(self, pod: PodInfo, snap: Snapshot) -> tuple[float, float]:
        guess = estimator.estimate(pod, snap.workloads, self.args.estimator)
        return float(guess.cpu_m), float(guess.memory)

    def _node_sums(self, node: NodeInfo, snap: Snapshot) -> _NodeSums:
        """The node's pods summed, cached between cycles until its pods or the documents
        change."""
        # the profiles' build time: a new document gives the unmeasured pods new estimates
        key = (node.version, snap.pod_usage.serial, snap.workloads.built, len(snap.workloads))
        hit = self._memo.get(node.name)
        if hit is not None and hit[0] == key:
            return hit[1]
        pct, usage = self.args.percentile, snap.pod_usage
        by_pod, min_samples = usage.by_pod, usage.enough(self.args.min_samples)
        mean, rc = [0.0, 0.0], [0.0, 0.0]
        groups: tuple[dict[str, float], dict[str, float]] = ({}, {})
        measured = estimated = from_history = raised = 0
        unmeasured, unmeasured_mean = [0.0, 0.0], [0.0, 0.0]
        for pod in node.pods.values():
            figures = by_pod.get((pod.namespace, pod.name))
            recent = self._recent(pod, usage)
            if figures is not None and figures.samples >= min_samples:
                measured += 1
                group = figures.workload or pod.uid
                lift = None if recent else podfigures.lift(figures, usage, pct)
                raised += lift is not None
                for r, f in ((0, figures.cpu), (1, figures.memory)):
                    mean[r] += f.mean
                    # lookBack recent: its workload's last buckets, its own samples included
                    rc[r] += recent.recent[r] if recent and recent.recent else getattr(f, pct)
                    if lift is not None:
                        # the part of its day the pod has not lived, the node has not seen
                        rc[r] += lift[r]
                        unmeasured[r] += lift[r]
                    if f.std > 0:
                        groups[r][group] = groups[r].get(group, 0.0) + f.std
            elif (peak := recent or self._workload_day(pod, usage)) is not None:
                from_history += 1
                for r, (m, top) in enumerate(_history_figures(peak, recent is not None)):
                    mean[r] += m
                    unmeasured_mean[r] += m
                    rc[r] += top
                    unmeasured[r] += top
            else:
                estimated += 1
                for r, e in enumerate(self._estimate(pod, snap)):
                    mean[r] += e
                    unmeasured_mean[r] += e
                    rc[r] += e
                    unmeasured[r] += e
        sums = tuple(
            Sums(mean[r], rc[r], groups[r], sum(v * v for v in groups[r].values())) for r in (0, 1)
        )
        mode = NODE if node.pods and not (measured or from_history) else PODS
        found = _NodeSums(
            mode,
            sums,  # type: ignore[arg-type]
            measured,
            estimated,
            tuple(unmeasured),  # type: ignore[arg-type]
            from_history,
            raised,
            tuple(unmeasured_mean),  # type: ignore[arg-type]
        )
        if len(self._memo) > 2 * len(snap.nodes) + 100:  # nodes gone: forget their sums
            self._memo = {k: v for k, v in self._memo.items() if k in snap.nodes}
        self._memo[node.name] = (key, found)
        return found

    # -- the new pod ----------------------------------------------------------------------------
    def _replicas(self, usage: PodUsage) -> dict[str, podfigures.Replicas]:
        return podfigures.replicas(usage, self.args.min_samples, self.args.percentile)

    def _workload_day(self, pod: PodInfo, usage: PodUsage) -> WorkloadPeak | None:
        return podfigures.workload_day(pod, usage, self.args.min_samples, self.args.percentile)

    def _recent(self, pod: PodInfo, usage: PodUsage) -> WorkloadPeak | None:
        """With `lookBack: recent`, the pod's workload history when it serves `recentMax`."""
        if self.args.look_back != RECENT:
            return None
        return podfigures.workload_recent(pod, usage)

    def _new_pod(self, pod: PodInfo, snap: Snapshot) -> tuple[str, list[tuple[float, ...]], str]:
        """(group, [(mean, std, percentile) for cpu, memory], where the figures come from)."""
        w = estimator.workload(pod)
        recent = self._recent(pod, snap.pod_usage)
        if w is not None and recent is not None:
            figures = [(m, 0.0, top) for m, top in _history_figures(recent, True)]
            return w.key, figures, f"workload history's last buckets of {w.key}"
        replicas = self._replicas(snap.pod_usage).get(w.key) if w is not None else None
        if w is not None and replicas is not None:
            count, f, raised = replicas
            pct = self.args.percentile
            figures = [(x.mean, x.std, x.get(pct)) for x in (f.cpu, f.memory)]
            lifted = f", {raised} raised to the {podfigures.RAISED_BY}'s day max" if raised else ""
            return w.key, figures, f"replicas of {w.key} ({count} measured{lifted})"
        peak = self._workload_day(pod, snap.pod_usage)
        if w is not None and peak is not None:
            figures = [(peak.bucket_mean[r], 0.0, peak.max[r]) for r in (0, 1)]
            span = snap.pod_usage.history_buckets or "?"
            return w.key, figures, f"workload history of {w.key} ({peak.held} of {span} buckets)"
        guess = estimator.estimate(pod, snap.workloads, self.args.estimator)
        figures = [(float(guess.cpu_m), 0.0, float(guess.cpu_m))]
        figures.append((float(guess.memory), 0.0, float(guess.memory)))
        return pod.uid, figures, f"estimate ({guess.source})"

    # -- all nodes at once ----------------------------------------------------------------------
    def predict_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> tuple[np.ndarray, np.ndarray]:
        """(peaks, allocatable), each nodes x 2 (cpu, memory); the parts kept in the state
        for the decision record (`parts_of`)."""
        a = self.args
        group, new, source = self._new_pod(pod, snap)
        sums = [self._node_sums(node, snap) for node in nodes]
        n = len(nodes)
        by_node = np.array([s.mode == NODE for s in sums], dtype=bool)
        peaks, capacity = np.zeros((n, 2)), np.zeros((n, 2))
        asked = requested_with(pod, nodes) if a.requests_term else np.zeros((n, 2))
        table = np.zeros((n, 2, len(PART_FIELDS)))
        for r, resource in enumerate(RESOURCES):
            capacity[:, r] = [node.allocatable.get(resource, 0) for node in nodes]
            # The watcher's percentages are of the node's whole CPU or memory.
            whole = np.array([node.capacity.get(resource, 0) for node in nodes], dtype=float)
            whole = np.where(whole > 0, whole, capacity[:, r])
            avg, std, weight = (np.asarray(x) for x in usage_arrays(state, nodes, snap, resource))
            seen = avg * whole / 100
            mean = np.array([s.sums[r].mean for s in sums])
            rc = np.array([s.sums[r].rc for s in sums])
            ss = np.array([s.sums[r].ss for s in sums])
            gstd = np.array([s.sums[r].groups.get(group, 0.0) for s in sums])
            # beyond the pods: what a fresh window saw that no pod's mean explains; with
            # lookBack recent only the measured pods' (the window may not hold the others yet,
            # and without the node term nothing else would count them: the online study's rule)
            explained = mean
            if a.look_back == RECENT:
                explained = mean - np.array([s.unmeasured_mean[r] for s in sums])
            rest = np.where(weight >= 1.0, np.maximum(seen - explained, 0.0), 0.0)
            mean, rc = mean + rest, rc + rest
            if by_node.any():
                # no pod measured: the node's own window (mean, its deviation, its p95)
                recent = np.zeros(n)
                p95 = seen.copy()
                for i in np.flatnonzero(by_node).tolist():
                    node = nodes[i]
                    if resource == CPU:
                        recent[i] = snap.recent_cpu_m.get(node.name, 0) * weight[i]
                    found = _node_p95(snap, node, resource, float(weight[i]))
                    if found is not None:
                        p95[i] = max(seen[i], found * whole[i] / 100)
                node_std = std * whole / 100
                mean = np.where(by_node, seen + recent, mean)
                rc = np.where(by_node, p95 + recent, rc)
                ss = np.where(by_node, node_std**2, ss)
                gstd = np.where(by_node, 0.0, gstd)
            add_mean, add_std, add_pct = new[r]
            peak, rc_like, n_sig, sigma = predict(
                mean, rc, ss, gstd, a.n_sigma, add_mean, add_std, add_pct
            )
            before = np.maximum(rc, mean + a.n_sigma * np.sqrt(ss))
            # the node's own 72-hour max, plus what it cannot have seen: the unmeasured pods
            # (or, for a node judged by its window, those bound since its last sample)
            node_term = np.zeros(n)
            if a.node_peak:
                long = np.array([_long_peak(snap, node, resource) for node in nodes])
                long = long * weight * whole / 100
                unseen = np.array([s.unmeasured[r] for s in sums])
                unseen = np.where(by_node, mean - seen, unseen)  # the recent pods' CPU
                node_term = np.where(np.isnan(long), 0.0, long + unseen)
                before = np.maximum(before, node_term)
                node_term = np.where(node_term > 0, node_term + add_pct, 0.0)
                peak = np.maximum(peak, node_term)
            peaks[:, r] = peak
            table[:, r] = np.column_stack(
                [
                    peak,
                    rc_like,
                    n_sig,
                    mean + add_mean,
                    sigma,
                    peak - before,
                    capacity[:, r],
                    node_term,
                    asked[:, r],
                ]
            )
        kept = state.setdefault(PARTS, {})
        kept[""] = source
        chunk = (table, sums)
        kept.update(zip((node.name for node in nodes), zip(repeat(chunk), range(n)), strict=False))
        return peaks, capacity

    def spread_shares(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> np.ndarray | None:
        """With `requestsTerm`, each node's larger share (what `spread_scores` spreads); None
        without it (the scores are each node's own)."""
        if not self.args.requests_term:
            return None
        peaks, capacity = self.predict_all(state, pod, nodes, snap)
        return requests_share(peaks, capacity, requested_with(pod, nodes)).max(axis=1)

    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        if not nodes:
            return []
        share = self.spread_shares(state, pod, nodes, snap)
        if share is not None:
            return go_round_array(spread_scores(share)).astype(np.int64).tolist()
        peaks, capacity = self.predict_all(state, pod, nodes, snap)
        per_resource = scores_from(peaks, capacity)
        return go_round_array(per_resource.min(axis=1)).astype(np.int64).tolist()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        return self.score_all(state, pod, [node], snap)[0]

    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        limit = self.args.peak_limit_percent
        if limit <= 0 or not nodes:
            return {}
        # Not memoised: a preemption's trial edits the node between two filter calls.
        peaks, capacity = self.predict_all(CycleState(), pod, nodes, snap)
        bound = capacity * limit / 100
        over = ((peaks > bound) & (capacity > 0)).any(axis=1)
        if not over.any() or (not self.args.strict and over.all()):
            return {}
        return {int(i): Status.reject(OVER_LIMIT) for i in np.flatnonzero(over)}

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        return self.filter_all(state, pod, [node], snap).get(0, Status.success())


def requested_with(pod: PodInfo, nodes: list[NodeInfo]) -> np.ndarray:
    """nodes x 2 (CPU, memory): each node's requests with the pod's."""
    return np.array(
        [[node.requested.get(r, 0) + pod.requests.get(r, 0) for r in RESOURCES] for node in nodes],
        dtype=float,
    ).reshape(len(nodes), 2)


def requests_share(peaks: np.ndarray, capacity: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """nodes x 2 (CPU, memory): the larger of the predicted peak's and the requests' (`asked`)
    share of allocatable (inf for none). The study's reason: pods placed by their peak alone
    leave the requests of the coolest nodes full, and the last to arrive fit only on hot ones
    (a clairvoyant online placement: 65 node-s without, 17 with)."""
    share = np.maximum(peaks, asked) / np.where(capacity > 0, capacity, 1.0)
    return np.where(capacity > 0, share, np.inf)


def _history_figures(peak: WorkloadPeak, recent: bool) -> list[tuple[float, float]]:
    """(mean, percentile) per resource of a pod counted from its workload's history: its day
    max, or with `recent` its last buckets' max; the mean of the day's bucket maxima as its
    mean, never above the percentile (so N-sigma never outruns RC-like on its account)."""
    top = peak.recent if recent and peak.recent is not None else peak.max
    return [(min(peak.bucket_mean[r], top[r]), top[r]) for r in (0, 1)]


def parts_of(state: CycleState, node: str) -> list[Any] | None:
    """The decision record's view of one node's prediction: [how its pods were counted,
    measured pods, estimated pods, then per resource (cpu, memory) PART_FIELDS, then the pods
    counted from their workload's history, then the measured pods whose max it raised]."""
    found = (state.get(PARTS) or {}).get(node)
    if found is None:
        return None
    (table, sums), i = found
    s = sums[i]
    per_resource = (table[i, r].tolist() for r in range(2))
    return [s.mode, s.measured, s.estimated, *per_resource, s.from_history, s.raised]


def _long_peak(snap: Snapshot, node: NodeInfo, resource: str) -> float:
    """The node's most used over the watcher's 72 hours, percent; NaN when not served."""
    load = snap.loads.get(node.name)
    stats = load.metrics.get(resource) if load is not None else None
    if stats is None or stats.peak is None:
        return float("nan")
    return stats.peak


def _node_p95(snap: Snapshot, node: NodeInfo, resource: str, weight: float) -> float | None:
    """The window's p95 in percent, as far as the window is still data."""
    load = snap.loads.get(node.name)
    stats = load.metrics.get(resource) if load is not None else None
    if stats is None or stats.p95 is None or weight <= 0:
        return None
    return stats.p95 * weight
