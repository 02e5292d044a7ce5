"""The placement policies bench.placement.online replays: each scores the nodes for one pod from a
`Known` (what a deployed scheduler could know then) and says which nodes it allows.

Imitations of the contenders (IMITATES names the contender), simplified: CPU only (the real ones
also score memory, which the trace's pods barely use), no other score plugin beside them:
- `lvrb`: Ballast's LoadVariationRiskBalancing: the node window's mean (5 samples, the trace's
  watcher window) plus the pods bound since its last sample, plus the pod's estimate (its
  workload's profile, the p95 of its replicas' last 60 samples or their max under 3 replicas,
  floored at half the request; else the request), and the window's deviation:
  (1 - (mu + sigma) / 2) x 100, rounded; past capacity ordered by the overflow when the
  estimate is learned (`orderSaturated: learned`).
- `koord-agg`: Koordinator's LoadAwareScheduling on the p95 of the node's last 30 samples (its
  longest aggregate, the trace's 30 minutes), pods bound since the last sample and the pod at
  85 % of their CPU request; a node whose usage passes 65 % is refused (pods wait); score the
  least used, in whole points. `koord`: the same on the mean of the last 5 samples.
- `peak`: Ballast's PeakFit as the warm start runs it: each pod its workload's day max (the
  history of the day before) or, measured, the larger of that and its own max so far; the
  node's RC-like sum (with what no pod explains) against its own max so far plus what that
  cannot hold; (1 - peak / allocatable) x 100 clamped to 0..100 and rounded: nodes predicted
  past allocatable all score 0. `peak-cold`: the same without the day before (the full run at
  9ba285c): pods unmeasured are the estimator's (profile, else 85 % of the request).

Candidates, each using the same knowledge:
- `requests`: the least requested share of CPU or memory, no load data.
- `peak-over`: `peak` scored by the predicted peak itself, unclamped: saturated nodes ranked by
  how far over.
- `tod-peak-2`: each pod (on the node and the new one) at its workload's most in the coming 2
  trace hours of the day before at the same time of day, rather than its whole day's max,
  summed with what no pod explains; score: the lowest predicted peak.
- `tod-overflow`: per coming trace hour (to the window's end, 4) the node's predicted use, each
  pod at its workload's max that hour of the day before: the fewest predicted point-hours over
  capacity, then the lowest predicted peak (time of day kept: two pods peaking at different
  hours do not add).
- `recent-K`: each pod at its workload's most in the current hour bucket and the K - 1 before
  it (the day before's steps, then its replicas' samples), summed with what no pod explains;
  `-phase-M`: the buckets M trace minutes out of step with the window's start; `recent-Hh`:
  exactly the last H hours, no buckets; `-node`: at least the node's own most over them.
- `*-fit`: ranked by the larger of the predicted peak's and the requests' share of allocatable
  (`requested`; `-l2`: their Euclidean norm); `-whole`: in whole points 0..100 of the room left;
  `-spread`: in whole points spread over the nodes' own range (PeakFit's `requestsTerm`).
- `aligned-Hh-Mm`: time-aligned (coincidence): per workload, its most in each M-trace-minute
  bucket of the last H trace hours (the day before's steps, then its replicas' samples); the
  node's predicted peak the most over the buckets of what no pod explains plus its pods' and
  the new pod's buckets summed, max_b sum_k pod_k[b], not the sum of each pod's most; ranked as
  `recent-3-fit-spread` (`-nofit`: by the peak alone). `-sigmaK`: at least the sum's mean plus
  K deviations over the buckets (N-sigma); `-last`: a bucket before a workload's replicas ran
  is its latest bucket, not its most; `-phase-M`: buckets M trace minutes out of step.
  `maxsum-*`: the control, the same buckets summed as each pod's most (`maxsum-3h-60m` is
  `recent-3-fit-spread`). `aligned-day-before-2h-15m`: the coming 2 hours the day before.
- `*-strict`: a filter refusing nodes predicted past 100 % of allocatable whatever the others
  (pods wait).
- `clairvoyant`: NOT deployable, a bound: knows every pod's use to come (the simulator's own),
  places each on arrival where it adds the fewest node-seconds over 100 %, then the lowest
  peak (`-fit`: then the larger of that peak's and the requests' share). What placing pods one
  at a time as they arrive can reach with a perfect predictor.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from bench.placement.pool import Known, Policy, Pool, ramped
from scheduler.framework.resources import go_round_array
from watcher.rows import HOURS

WINDOW = 5  # the trace's watcher window, samples (5 wall seconds: one trace step)
PROFILE = 60  # the workload profile's window, samples (BALLAST_PROFILE_WINDOW)
PROFILE_MIN = 10  # the estimator's min_samples
AGGREGATE = 30  # Koordinator's longest aggregate, samples
KOORD_CPU = 0.85  # Koordinator's CPU scaling of a request
KOORD_LIMIT = 65.0  # its CPU usage threshold, %
MIN_SAMPLES = 5  # PeakFit's: a full window when the watcher's holds fewer than 8


def _on_node(values: np.ndarray, known: Known, mask: np.ndarray | None = None) -> np.ndarray:
    """Per node, the sum of `values` (one per pod) of the pods bound there (and in `mask`)."""
    keep = known.node_of >= 0 if mask is None else (known.node_of >= 0) & mask
    return np.bincount(known.node_of[keep], values[keep], len(known.capacity))


def _recent(known: Known) -> np.ndarray:
    """Pods bound since the nodes' last sample: no sample shows them yet."""
    return known.bound_at >= known.now - 1


def _measured(known: Known, samples: int) -> np.ndarray:
    """Pods with at least `samples` samples of their own."""
    return known.bound_at <= known.now - samples


def _window(known: Known, samples: int = WINDOW) -> np.ndarray:
    return known.nodes[:, -samples:]


def _profile(known: Known, j: int) -> float | None:
    """The estimator's profile figure for pod j's workload: p95 of its bound replicas' last
    PROFILE samples (their max under 3 replicas), None below PROFILE_MIN samples."""
    mates = np.flatnonzero((known.workload == known.workload[j]) & (known.node_of >= 0))
    if not len(mates):
        return None
    lived = np.minimum(known.now - known.bound_at[mates], PROFILE).astype(int)
    if lived.sum() < PROFILE_MIN:
        return None
    samples = np.concatenate([known.pods[m, known.pods.shape[1] - n :]
                              for m, n in zip(mates, lived, strict=True) if n > 0])  # fmt: skip
    return float(samples.max() if len(mates) < 3 else np.percentile(samples, 95))


def _estimate(known: Known, j: int, scale: float = 1.0) -> tuple[float, bool]:
    """(the estimator's CPU figure for pod j, whether it is learned)."""
    request = scale * known.requests[j, 0]
    found = _profile(known, j)
    if found is None:
        return request, False
    return max(found, 0.5 * request), True


def lvrb(known: Known, j: int) -> tuple[np.ndarray, np.ndarray]:
    cap = known.capacity
    w = _window(known)
    recent = _recent(known)
    extra = np.array([_estimate(known, k)[0] if recent[k] else 0.0 for k in range(len(recent))])
    pred, learned = _estimate(known, j)
    mu_raw = (w.mean(axis=1) + _on_node(extra, known) + pred) / cap
    sigma = np.clip(w.std(axis=1) / cap, 0.0, 1.0)
    mu = mu_raw if learned else np.minimum(mu_raw, 1.0)
    score = np.maximum(go_round_array((1.0 - (mu + sigma) / 2) * 100), 0.0)
    return score, np.ones(len(cap), dtype=bool)


def koord(known: Known, j: int, samples: int, p95: bool) -> tuple[np.ndarray, np.ndarray]:
    cap = known.capacity
    w = _window(known, samples)
    usage = np.percentile(w, 95, axis=1) if p95 else w.mean(axis=1)
    recent = _recent(known)
    assigned = _on_node(KOORD_CPU * known.requests[:, 0], known, recent)
    used = usage + assigned
    allowed = 100.0 * used / cap <= KOORD_LIMIT
    score = np.floor(np.maximum(cap - used - KOORD_CPU * known.requests[j, 0], 0) * 100 / cap)
    return score, allowed


def _day_max(known: Known) -> np.ndarray:
    """Per workload, the most one replica used over the day before."""
    return known.history.max(axis=1)  # the day's most, whatever the buckets


def peak_prediction(known: Known, j: int, warm: bool = True) -> np.ndarray:
    """PeakFit's predicted CPU peak per node with pod j added (see the module)."""
    n_pods = len(known.node_of)
    measured = _measured(known, MIN_SAMPLES) & (known.node_of >= 0)
    own_max = known.pods.max(axis=1) if known.pods.shape[1] else np.zeros(n_pods)
    own_mean = known.pods[:, -WINDOW:].mean(axis=1) if known.pods.shape[1] else own_max
    day = _day_max(known)
    fig = np.zeros(n_pods)
    unseen = np.zeros(n_pods)  # what the node's max cannot hold of each pod
    for k in np.flatnonzero(known.node_of >= 0):
        hist = day[known.workload[k]] if warm else 0.0
        if measured[k]:
            fig[k] = max(own_max[k], hist)
            unseen[k] = fig[k] - own_max[k]
        else:
            fig[k] = hist if warm else _estimate(known, k, 0.85)[0]
            unseen[k] = fig[k]
    mates = measured & (known.workload == known.workload[j])
    new = float(own_max[mates].mean()) if mates.any() else 0.0
    if warm:
        new = max(new, float(day[known.workload[j]]))
    elif not mates.any():
        new = _estimate(known, j, 0.85)[0]
    explained = _on_node(np.where(measured, own_mean, 0.0), known)
    rest = np.maximum(_window(known).mean(axis=1) - explained, 0.0)
    rc = rest + _on_node(fig, known) + new
    node = known.nodes.max(axis=1) + _on_node(unseen, known) + new
    return np.maximum(rc, node)


def peak(known: Known, j: int, warm: bool = True) -> tuple[np.ndarray, np.ndarray]:
    predicted = peak_prediction(known, j, warm)
    score = np.clip(go_round_array(100 * (1 - predicted / known.capacity)), 0, 100)
    return score, np.ones(len(known.capacity), dtype=bool)


def peak_over(known: Known, j: int, fit: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return _lowest(peak_prediction(known, j) / known.capacity, known, j, fit)


def _lowest(predicted: np.ndarray, known: Known, j: int, fit: bool | str = False,
            limit: str = "") -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The lowest predicted peak (a share of allocatable) wins; with `fit`, the larger of it and
    the share of allocatable the requests would take (`requested`)."""
    allowed = _limit(predicted, limit)
    if fit:
        predicted = _combine(predicted, requested(known, j), fit)
    return -predicted, allowed


def _combine(peak_: np.ndarray, asked: np.ndarray, how: bool | str) -> np.ndarray:
    """One figure from the predicted peak's and the requests' shares of allocatable."""
    if how == "l2":
        return np.hypot(peak_, asked)
    return np.maximum(peak_, asked)


def _rest(known: Known) -> np.ndarray:
    """Per node, what no pod explains: the window's mean less its measured pods' means."""
    means = known.pods[:, -WINDOW:].mean(axis=1) if known.pods.shape[1] else 0.0
    measured = _measured(known, WINDOW) & (known.node_of >= 0)
    return np.maximum(_window(known).mean(axis=1) - _on_node(np.where(measured, means, 0.0),
                                                              known), 0.0)  # fmt: skip


def _hours(known: Known, ahead: int) -> slice:
    h = known.hour_of_day
    return slice(h, min(h + ahead, HOURS))


def tod_profile(known: Known, j: int, ahead: int) -> np.ndarray:
    """node x coming hour: the predicted CPU with pod j, each pod at its workload's max that
    hour of the day before."""
    hours, hourly = _hours(known, ahead), known.hourly
    per_pod = hourly[np.maximum(known.workload, 0), hours]  # pod x hour
    bound = known.node_of >= 0
    out = np.zeros((len(known.capacity), per_pod.shape[1]))
    np.add.at(out, known.node_of[bound], per_pod[bound])
    return out + _rest(known)[:, None] + hourly[known.workload[j], hours][None, :]


def tod_peak(known: Known, j: int, ahead: int, fit: bool = False,
             limit: str = "") -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    predicted = tod_profile(known, j, ahead).max(axis=1) / known.capacity
    return _lowest(predicted, known, j, fit, limit)


def workload_buckets(known: Known, buckets: int, phase: int = 0) -> np.ndarray:
    """Per workload, the most one replica used in the current hour bucket and the `buckets` - 1
    before it, as the watcher's workload history keeps them: the day before's steps for the
    part before the window, its replicas' samples after. The buckets start with the window's
    first step, or `phase` trace steps before it (the watcher's are on the wall clock's
    minutes, whatever the window's start)."""
    per_hour = known.history.shape[1] // HOURS
    step = known.hour / per_hour  # wall seconds a trace step lasts
    current = (int((known.now / step + phase) // per_hour) * per_hour) - phase
    start = current - (buckets - 1) * per_hour  # in trace steps from the window's start
    out = known.history[:, start:].max(axis=1) if start < 0 else np.zeros(len(known.history))
    seen = known.now - int(max(start, 0) * step)
    bound = np.flatnonzero(known.node_of >= 0)
    if seen > 0 and len(bound):
        recent = known.pods[bound, known.pods.shape[1] - seen :].max(axis=1)
        np.maximum.at(out, known.workload[bound], recent)
    return out


def workload_last(known: Known, hours: float) -> np.ndarray:
    """Per workload, the most one replica used over exactly the last `hours` trace hours, at
    the trace's resolution (what finer buckets than an hour would keep): no phase."""
    span = hours * known.hour
    per_hour = known.history.shape[1] // HOURS
    before = int(np.ceil((span - known.now) / (known.hour / per_hour)))  # steps of the day before
    out = known.history[:, -before:].max(axis=1) if before > 0 else np.zeros(len(known.history))
    seen = min(int(span), known.now)
    bound = np.flatnonzero(known.node_of >= 0)
    if seen > 0 and len(bound):
        recent = known.pods[bound, known.pods.shape[1] - seen :].max(axis=1)
        np.maximum.at(out, known.workload[bound], recent)
    return out


def recent_peak(known: Known, j: int, buckets: int, fit: bool | str = False,
                node: bool = False, limit: str = "", whole: bool | str = False,
                phase: int = 0, hours: float = 0.0) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each pod at its workload's most over the last `buckets` hours (`workload_buckets`),
    summed with what no pod explains (with `node`, at least the node's own most over them
    plus the pods it has not seen); `whole` scores in whole points as a plugin does: True,
    0..100 from the predicted room; "spread", the nodes' range spread over 0..100."""
    figure = workload_last(known, hours) if hours else workload_buckets(known, buckets, phase)
    per_pod = np.where(known.workload >= 0, figure[np.maximum(known.workload, 0)], 0.0)
    new = figure[known.workload[j]]
    predicted = _rest(known) + _on_node(per_pod, known) + new
    if node:
        span = min(int(buckets * known.hour), known.nodes.shape[1])
        seen = known.nodes[:, -span:].max(axis=1)
        fresh = ~_measured(known, span)
        predicted = np.maximum(predicted, seen + _on_node(per_pod, known, fresh) + new)
    score, allowed = _lowest(predicted / known.capacity, known, j, fit, limit)
    return _points(score, whole, fit), allowed


def _points(score: np.ndarray, whole: bool | str, fit: bool | str) -> np.ndarray:
    """`_lowest`'s score in whole points as a plugin gives them: "spread", the nodes' range
    spread over 0..100 (NormalizeScore); True, 0..100 from the predicted room; else as is."""
    if whole == "spread":
        low, high = score.min(), score.max()
        return go_round_array(100 * (score - low) / (high - low)) if high > low else score * 0
    if whole:
        room = 1.0 + score / (np.sqrt(2.0) if fit == "l2" else 1.0)
        return np.clip(go_round_array(100 * room), 0, 100)
    return score


def workload_series(known: Known, hours: float, minutes: float, phase: float = 0.0,
                    fill: str = "most") -> np.ndarray:  # fmt: skip
    """workload x bucket: the most one replica used in each `minutes`-long bucket (trace
    minutes) of the current one and those before it back `hours` trace hours (the current one
    left out while it has no sample yet), `phase` trace minutes out of step with the window's
    start: the day before's steps before the window, its bound replicas' samples after. A
    bucket with neither (no replica running yet) is the workload's most over the buckets it has
    (`fill` "most"), or its latest bucket before ("last"), or 0."""
    size, shift = minutes * known.hour / 60, phase * known.hour / 60  # wall seconds
    n = round(hours * 60 / minutes)
    first = int((known.now + shift) // size) - n + 1
    seconds = np.arange(int(np.ceil(first * size - shift)), known.now)
    if not len(seconds):  # only the current bucket, empty yet
        return np.zeros((len(known.history), 1))
    out = np.full((len(known.history), len(seconds)), -np.inf)
    before = seconds < 0
    per_hour = known.history.shape[1] // HOURS
    cols = known.history.shape[1] + np.floor(seconds[before] * per_hour / known.hour).astype(int)
    out[:, before] = known.history[:, cols]
    bound = np.flatnonzero(known.node_of >= 0)
    if len(bound) and (~before).any():
        t = seconds[~before]
        use = known.pods[bound][:, known.pre + t]
        use = np.where(t[None, :] >= known.bound_at[bound, None], use, -np.inf)
        inside = out[:, ~before]
        np.maximum.at(inside, known.workload[bound], use)
        out[:, ~before] = inside
    which = np.floor((seconds + shift) / size).astype(int)
    buckets = np.maximum.reduceat(out, np.flatnonzero(np.r_[True, np.diff(which) != 0]), axis=1)
    known_ = np.isfinite(buckets)
    most = np.where(known_.any(axis=1), buckets.max(axis=1), 0.0)
    filled = np.where(known_, buckets, most[:, None])
    if fill == "last":  # each gap carries the latest bucket before it, if any
        latest = np.maximum.accumulate(np.where(known_, np.arange(buckets.shape[1]), -1), axis=1)
        rows = np.arange(len(buckets))[:, None]
        filled = np.where(latest >= 0, filled[rows, np.maximum(latest, 0)], filled)
    return filled


def day_before_series(known: Known, hours: float, minutes: float) -> np.ndarray:
    """workload x bucket: the most one replica used in each `minutes`-long bucket of the coming
    `hours` trace hours, the day before at the same time of day (what the warm start seeds)."""
    per_hour = known.history.shape[1] // HOURS
    steps = max(round(minutes * per_hour / 60), 1)
    start = int(known.now * per_hour / known.hour)
    end = min(start + round(hours * per_hour), known.history.shape[1])
    coming = known.history[:, start:end]
    return np.maximum.reduceat(coming, np.arange(0, coming.shape[1], steps), axis=1)


def node_series(known: Known, j: int, per_workload: np.ndarray) -> np.ndarray:
    """node x bucket: what no pod explains, plus each bound pod at its workload's bucket, plus
    pod j's: the node's use with pod j, bucket by bucket (replicas of one workload move
    together)."""
    bound = known.node_of >= 0
    counts = np.zeros((len(known.capacity), len(per_workload)))
    np.add.at(counts, (known.node_of[bound], known.workload[bound]), 1.0)
    return _rest(known)[:, None] + counts @ per_workload + per_workload[known.workload[j]][None, :]


def aligned_peak(known: Known, j: int, hours: float = 3.0, minutes: float = 15.0,
                 phase: float = 0.0, sigma: float = 0.0, coincide: bool = True, fill: str = "most",
                 day_before: bool = False, fit: bool | str = True,
                 whole: bool | str = "spread") -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The node's predicted peak with pod j from time-aligned history: the most over the
    look-back's buckets of the node's summed use (`node_series`), max_b(sum_k pod_k[b]) rather
    than `recent_peak`'s sum_k max_b pod_k[b]; with `sigma` k, at least the sum's mean plus k
    deviations over the buckets (N-sigma: the pods' covariance); with `coincide` False, the sum
    of each pod's most over the same buckets (the control: the same data, peaks assumed to
    coincide); with `day_before`, the coming `hours` of the day before instead of the last."""
    if day_before:
        per_workload = day_before_series(known, hours, minutes)
    else:
        per_workload = workload_series(known, hours, minutes, phase, fill)
    if coincide:
        series = node_series(known, j, per_workload)
        predicted = series.max(axis=1)
        if sigma:
            predicted = np.maximum(predicted, series.mean(axis=1) + sigma * series.std(axis=1))
    else:
        predicted = node_series(known, j, per_workload.max(axis=1, keepdims=True))[:, 0]
    score, allowed = _lowest(predicted / known.capacity, known, j, fit)
    return _points(score, whole, fit), allowed


def by_requests(known: Known, j: int) -> tuple[np.ndarray, np.ndarray]:
    """The least requested share (CPU or memory, the larger): no load data at all."""
    return -requested(known, j), np.ones(len(known.capacity), dtype=bool)


def tod_overflow(known: Known, j: int, limit: str = "") -> tuple[np.ndarray, np.ndarray]:
    profile = tod_profile(known, j, 4) / known.capacity[:, None]
    over = np.maximum(profile - 1.0, 0.0).sum(axis=1)
    peak_ = profile.max(axis=1)
    return -(over * 1e3 + peak_), _limit(peak_, limit)


def _limit(predicted: np.ndarray, mode: str) -> np.ndarray:
    """The filter (`strict`): nodes predicted past allocatable refused, pods wait."""
    return predicted <= 1.0 if mode == "strict" else np.ones(len(predicted), dtype=bool)


def requested(known: Known, j: int) -> np.ndarray:
    """Per node, the larger share of CPU or memory allocatable its pods' requests would take
    with pod j's: how close NodeResourcesFit is to refusing the next pod."""
    cpu = (_on_node(known.requests[:, 0], known) + known.requests[j, 0]) / known.capacity
    memory = (_on_node(known.requests[:, 1], known) + known.requests[j, 1]) / known.memory
    return np.maximum(cpu, memory)


class Clairvoyant:
    """Not deployable: reads every pod's use to come from the pool (see the module)."""

    def __init__(self, pool: Pool, fit: bool | str = False) -> None:
        self.pool = pool
        self.load = pool.background.copy()
        self.seen: set[int] = set()
        self.fit = fit

    def __call__(self, known: Known, j: int) -> tuple[np.ndarray, np.ndarray]:
        p = self.pool
        for k in np.flatnonzero(known.node_of >= 0):
            if k not in self.seen:
                self.seen.add(int(k))
                self.load[known.node_of[k]] += ramped(p.use[k], known.bound_at[k], p.pre, p.ramp)
        cap = p.capacity[:, None]
        future = slice(p.pre + known.now, p.pre + p.seconds)
        before = self.load[:, future]
        after = before + ramped(p.use[j], known.now, p.pre, p.ramp)[future]
        added = (after > cap).sum(axis=1) - (before > cap).sum(axis=1)
        then = after.max(axis=1) / p.capacity
        if self.fit:
            then = _combine(then, requested(known, j), self.fit)
        return -(added * 1e3 + then), np.ones(len(p.capacity), bool)


POLICIES: dict[str, Policy] = {
    # the contenders imitated
    "lvrb": lvrb,
    "koord": partial(koord, samples=WINDOW, p95=False),
    "koord-agg": partial(koord, samples=AGGREGATE, p95=True),
    "peak-cold": partial(peak, warm=False),
    "peak": peak,
    # candidates
    "requests": by_requests,
    "peak-over": peak_over,
    "peak-over-fit": partial(peak_over, fit=True),
    "tod-peak-2": partial(tod_peak, ahead=2),
    "tod-overflow": tod_overflow,
    "tod-peak-2-fit": partial(tod_peak, ahead=2, fit=True),
    "recent-3": partial(recent_peak, buckets=3),
    "recent-2-fit": partial(recent_peak, buckets=2, fit=True),
    "recent-3-fit": partial(recent_peak, buckets=3, fit=True),
    "recent-4-fit": partial(recent_peak, buckets=4, fit=True),
    "recent-3-node-fit": partial(recent_peak, buckets=3, fit=True, node=True),
    "recent-3-fit-l2": partial(recent_peak, buckets=3, fit="l2"),
    "recent-3-fit-whole": partial(recent_peak, buckets=3, fit=True, whole=True),
    "recent-3-fit-spread": partial(recent_peak, buckets=3, fit=True, whole="spread"),
    "recent-3-fit-spread-strict": partial(
        recent_peak, buckets=3, fit=True, whole="spread", limit="strict"
    ),
    # the buckets 15, 30 and 45 trace minutes out of step with the window's start, as the
    # watcher's (on the wall clock) are in a benchmark run
    **{
        f"recent-3-fit-spread-phase-{5 * k}": partial(
            recent_peak, buckets=3, fit=True, whole="spread", phase=k
        )
        for k in (3, 6, 9)
    },
    # exactly the last 2 or 2.5 hours, whatever the phase (not what the watcher keeps)
    "recent-2h-fit-spread": partial(recent_peak, buckets=0, hours=2, fit=True, whole="spread"),
    "recent-2.5h-fit-spread": partial(recent_peak, buckets=0, hours=2.5, fit=True, whole="spread"),
}
# Time-aligned (issue 45's coincidence study): buckets of 5, 15, 30 and 60 trace minutes over
# look-backs of 2-3.5 hours, each in step with the window and a quarter, half and three
# quarters of a bucket out of step (`-phase-M`, trace minutes), as the watcher's wall-clock
# buckets fall in a benchmark run
LOOK_BACKS = {5: (2, 2.5, 3, 3.5), 15: (2, 2.5, 3, 3.5), 30: (2, 2.5, 3, 3.5), 60: (2, 3, 4)}
PHASES = (0.0, 0.25, 0.5, 0.75)  # of a bucket


def _phased(name: str, minutes: float, **kwargs: object) -> dict[str, Policy]:
    return {
        (name if not q else f"{name}-phase-{q * minutes:g}"): partial(
            aligned_peak, minutes=minutes, phase=q * minutes, **kwargs
        )
        for q in PHASES
    }


ALIGNED: dict[str, Policy] = {
    **{
        policy: made
        for minutes, hours in LOOK_BACKS.items()
        for h in hours
        for policy, made in _phased(f"aligned-{h:g}h-{minutes}m", minutes, hours=h).items()
    },
    **{
        policy: made
        for k in (1, 2, 3)
        for policy, made in _phased(f"aligned-3h-15m-sigma{k}", 15, hours=3, sigma=k).items()
    },
    **_phased("aligned-3h-15m-last", 15, hours=3, fill="last"),
    **_phased("maxsum-3h-15m", 15, hours=3, coincide=False),
    **_phased("maxsum-3h-60m", 60, hours=3, coincide=False),
    "aligned-3h-15m-nofit": partial(aligned_peak, hours=3, minutes=15, fit=False, whole=False),
    "aligned-day-before-2h-15m": partial(aligned_peak, hours=2, minutes=15, day_before=True),
}
POLICIES.update(ALIGNED)
# Policies that need the pool itself (not deployable): name -> maker, per replay.
ORACLES: dict[str, Callable[[Pool], Policy]] = {
    "clairvoyant": Clairvoyant,
    "clairvoyant-fit": partial(Clairvoyant, fit=True),
}
IMITATES = {"lvrb": "ballast-lvrb", "koord": "koordinator", "koord-agg": "koordinator-agg",
            "peak-cold": "ballast-peak"}  # fmt: skip
