"""What a decision record holds, built from the parts a cycle already has (docs/explain.md).

The cycle calls `placed` or `unschedulable` under the cache's lock, before it assumes the pod,
so the load view is the one the scores saw. Only the top nodes get the per-plugin breakdown and
the load view; everything else is counts.

Two forms: the cycle writes a compact one (lists in a fixed order, floats unrounded, no repeated
names: a few hundred bytes of JSON per attempt, kept for thousands of pods), and `expand` turns
it into the named document the API serves, when somebody asks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.framework import (
    CPU,
    MEMORY,
    CycleState,
    NodeInfo,
    PodInfo,
    PostFilterResult,
    Snapshot,
)
from scheduler.framework.profile import FILTER_TALLY, PRE_FILTER_PLUGIN, ScoreParts
from scheduler.framework.status import PRE_FILTER_REJECTION
from scheduler.plugins import peak_fit
from scheduler.plugins.helpers import loadview

# The rule kube-scheduler and Ballast use; said in the record so nobody has to guess.
RANDOM_TIE_BREAK = "uniformly at random among the nodes with the best total"
ONLY_NODE = "the only feasible node: not scored, as kube-scheduler does"
NOMINATED_FIRST = "its nominated node, tried first as kube-scheduler does, fits: not scored"
# DefaultPreemption's choice, in its order (scheduler/plugins/default_preemption.py).
PREEMPTION_RULE = (
    "victims: pods of lower priority whose removal lets the pod pass every filter, most "
    "important reprieved first; node: fewest PDB violations, then lowest highest-victim "
    "priority, smallest priority sum, fewest victims, latest start, lowest CPU load after "
    "eviction, name"
)
# Where the pod's predicted CPU comes from when the cycle does not say (the cycle sets the
# record's `prediction` from plugins/helpers/estimator.py: figures, source, workload).
PREDICTION_SOURCE = "requests"
NOMINATED_ROOM = "(room for nominated pods)"
# In extender mode kube-scheduler decides; what Ballast said is one part of its sum.
EXTENDER_NOTES = {
    "filter": "Ballast's filter answer to kube-scheduler (which also runs its own filters)",
    "prioritize": "Ballast's scores for kube-scheduler, which adds them, times the extender's "
    "weight, to its own and picks; the winner here is Ballast's favourite, not the decision",
    "bind": "bound by kube-scheduler through Ballast's bind verb",
}

# compact field orders
_COUNTS = (
    "total",
    "considered",
    "feasible",
    "scored",
    "percentageOfNodesToScore",
    "enoughFeasible",
)
_LOAD = ("usage", "std", "state", "measuredShare", "age")


def node_counts(
    total: int, considered: int, feasible: int, scored: int, percentage: int, wanted: int
) -> list[int]:
    """`wanted` is how many feasible nodes end the filter (percentageOfNodesToScore's cut)."""
    return [total, considered, feasible, scored, percentage, wanted]


def filter_counts(reasons: dict[str, list[str]], state: CycleState) -> list[Any]:
    """[rejected nodes, {reason: nodes} (counted as FailedScheduling counts them),
    {plugin: {reason: nodes}}, [PreFilter plugin, reason] or None]."""
    by_reason: dict[str, int] = {}
    for why in reasons.values():
        for reason in why:
            by_reason[reason] = by_reason.get(reason, 0) + 1
    by_plugin = state.get(FILTER_TALLY) or {}
    rejection = state.get(PRE_FILTER_REJECTION)
    pre = None
    if rejection is not None:
        pre = [state.get(PRE_FILTER_PLUGIN, ""), rejection.reason]
    else:
        # Nodes turned away to leave room for pods nominated there are the cycle's doing.
        rest = sum(by_reason.values()) - sum(sum(c.values()) for c in by_plugin.values())
        if rest > 0:
            by_plugin = {**by_plugin, NOMINATED_ROOM: {"other": rest}}
    return [len(reasons), by_reason, by_plugin, pre]


def load_view(node: NodeInfo, snap: Snapshot) -> list[Any]:
    """The numbers a load-aware score read for `node`, per resource (cpu, memory): usage after
    the fallback rule, std, state, the measured share and the data's age; then the recently
    bound CPU (millicores) and the node's CPU capacity."""
    load = snap.loads.get(node.name)
    out: list[Any] = []
    cpu_share = 0.0
    for resource in (CPU, MEMORY):
        stats = load.metrics.get(resource) if load is not None else None
        measured = None
        if stats is not None and stats.state == loadview.FRESH:
            measured = stats.avg if stats.avg is not None else stats.latest
        if measured is not None:  # fresh data, as loadview.usage takes it, without its memo
            out += (measured, stats.std or 0.0, loadview.FRESH, 1.0, stats.age)
            share = 1.0
        elif load is None:  # no data at all: loadview.usage's allocation fallback, as it is
            out += (loadview.allocation_percent(node, resource), 0.0, loadview.MISSING, 0.0, None)
            share = 0.0
        else:  # a scratch state: these look-ups are not the cycle's fallbacks
            u = loadview.usage(CycleState(), node, snap, resource)
            out += (u.avg, u.std, u.reason, u.weight, None if stats is None else stats.age)
            share = u.weight
        if resource == CPU:
            cpu_share = share
    recent = snap.recent_cpu_m.get(node.name, 0)
    out += (recent, recent * cpu_share, node.capacity.get(CPU, 0))
    return out


def top_indices(totals: np.ndarray, k: int) -> list[int]:
    """Indices of the k best totals, best first, ties by position: a stable sort of the
    negated totals (scores are small non-negative integers) keeps equal ones in node order."""
    return np.argsort(-totals, kind="stable")[:k].tolist()


def scores(
    parts: ScoreParts, chosen: str, snap: Snapshot, k: int, state: CycleState | None = None
) -> list[Any]:
    """[plugins [[name, weight, skipped]], winner [node, total, ties, runner-up node, its
    total], top rows [[node, total, [[raw, normalised] per plugin scored], load view, PeakFit's
    prediction or None]]]; `state`: the cycle's, when PeakFit kept its parts there."""
    names, totals = parts.names, parts.totals
    top = top_indices(totals, k)
    win = next((i for i in top if names[i] == chosen), -1)
    if win < 0:
        # More than k nodes share the best total and the random tie-break took one beyond the
        # k: every one of the k has that total, so the last makes room for the winner.
        win = names.index(chosen)
        top = [win, *top[:-1]]
    best = int(totals[win])
    ties = int(np.count_nonzero(totals == best))
    scored = [(raw, norm) for _, _, raw, norm in parts.plugins if raw is not None]
    rows = []
    for i in top:
        node = snap.nodes.get(names[i])
        rows.append(
            [
                names[i],
                int(totals[i]),
                [[raw[i], norm[i]] for raw, norm in scored],
                load_view(node, snap) if node is not None else None,
                peak_fit.parts_of(state, names[i]) if state is not None else None,
            ]
        )
    runner = next((i for i in top if i != win), None)
    winner = [chosen, best, ties, None, None]
    if runner is not None:
        winner[3:] = [names[runner], int(totals[runner])]
    plugins = [[name, weight, raw is None] for name, weight, raw, _ in parts.plugins]
    return [plugins, winner, rows]


def placed(
    pod: PodInfo,
    counts: list[int],
    reasons: dict[str, list[str]],
    state: CycleState,
    snap: Snapshot,
    parts: ScoreParts | None,
    chosen: str,
    predicted_cpu_m: int,
    k: int,
) -> dict[str, Any]:
    """The record of a pod placed on `chosen`; `parts` None when one node was feasible."""
    doc = _common(pod, counts, reasons, state, predicted_cpu_m)
    peaks = state.get(peak_fit.PARTS)
    if peaks:
        doc["pk"] = peaks.get("", "")
    if parts is not None:
        doc["s"] = scores(parts, chosen, snap, k, state if peaks else None)
    else:
        node = snap.nodes.get(chosen)
        view = load_view(node, snap) if node is not None else None
        doc["s"] = [[], [chosen, None, 1, None, None], [[chosen, None, [], view]]]
    return doc


def unschedulable(
    pod: PodInfo,
    counts: list[int],
    reasons: dict[str, list[str]],
    state: CycleState,
    message: str,
    post: PostFilterResult,
    predicted_cpu_m: int,
) -> dict[str, Any]:
    """The record of a pod that fits nowhere: the FailedScheduling text and its counts, and
    what preemption did about it."""
    doc = _common(pod, counts, reasons, state, predicted_cpu_m)
    doc["m"] = message
    if post.nominated_node or post.message:
        victims = [[v.namespace, v.name, v.uid, v.priority] for v in post.victims]
        doc["x"] = [post.nominated_node, victims, post.message]
    return doc


def _common(
    pod: PodInfo,
    counts: list[int],
    reasons: dict[str, list[str]],
    state: CycleState,
    predicted_cpu_m: int,
) -> dict[str, Any]:
    return {
        "p": pod.priority,
        "n": counts,
        "f": filter_counts(reasons, state),
        "c": predicted_cpu_m,
    }


# --- the API's form ----------------------------------------------------------------------------
def expand(doc: dict[str, Any]) -> dict[str, Any]:
    """The compact record as the API serves it (docs/explain.md has an example)."""
    rejected, by_reason, by_plugin, pre = doc["f"]
    filters: dict[str, Any] = {
        "rejectedNodes": rejected,
        "byReason": by_reason,
        "byPlugin": by_plugin,
    }
    if pre is not None:
        filters["preFilter"] = {"plugin": pre[0], "reason": pre[1]}
    out: dict[str, Any] = {
        "priority": doc["p"],
        "nodes": dict(zip(_COUNTS, doc["n"], strict=True)),
        "filters": filters,
        "prediction": doc.get("prediction") or {"cpuM": doc["c"], "source": PREDICTION_SOURCE},
    }
    if "s" in doc:
        out["scores"] = _expand_scores(*doc["s"])
        if "pk" in doc:
            out["scores"]["peakPodFrom"] = doc["pk"]
        total, considered = doc["n"][0], doc["n"][1]
        if out["scores"]["winner"]["total"] is None and considered == 1 < total:
            out["scores"]["winner"]["tieBreak"] = NOMINATED_FIRST
    if "m" in doc:
        out["message"] = doc["m"]
    if "e" in doc:
        out["extender"] = {"verb": doc["e"], "note": EXTENDER_NOTES.get(doc["e"], "")}
    if "x" in doc:
        node, victims, message = doc["x"]
        out["preemption"] = {
            "nominatedNode": node,
            "victims": [
                {"namespace": v[0], "name": v[1], "uid": v[2], "priority": v[3]} for v in victims
            ],
            "why": PREEMPTION_RULE if node else message,
        }
    return out


def _expand_scores(plugins: list, winner: list, rows: list) -> dict[str, Any]:
    scored = [(name, weight) for name, weight, skipped in plugins if not skipped]
    node, total, ties, runner, runner_total = winner
    tie_break = ""
    if total is None:
        tie_break = ONLY_NODE
    elif ties > 1:
        tie_break = RANDOM_TIE_BREAK
    top = []
    for name, row_total, parts, view, *more in rows:  # records before PeakFit had 4 fields
        peak = more[0] if more else None
        top.append(
            {
                "node": name,
                "total": row_total,
                "plugins": {
                    plugin: {"raw": raw, "normalized": norm, "weighted": weight * norm}
                    for (plugin, weight), (raw, norm) in zip(scored, parts, strict=True)
                },
                "load": _expand_load(view),
                **({"peak": _expand_peak(peak)} if peak else {}),
            }
        )
    return {
        "plugins": [{"name": n, "weight": w, "skipped": s} for n, w, s in plugins],
        "winner": {
            "node": node,
            "total": total,
            "margin": None if runner is None else total - runner_total,
            "runnerUp": None if runner is None else {"node": runner, "total": runner_total},
            "ties": ties,
            "tieBreak": tie_break,
        },
        "top": top,
    }


def _expand_peak(parts: list[Any]) -> dict[str, Any]:
    """PeakFit's prediction for one node: how its pods were counted, then per resource the
    predicted peak with the pod, its two predictors, which won, and the pod's share of it."""
    mode, measured, estimated, *rest = parts
    out: dict[str, Any] = {"from": mode, "podsMeasured": measured, "podsEstimated": estimated}
    # records before the workloads' history have no count after the resources
    out["podsFromHistory"] = rest[2] if len(rest) > 2 else 0
    # and none before the young pods' raise: measured pods whose max their workload's day raised
    out["podsRaised"] = rest[3] if len(rest) > 3 else 0
    for resource, values in zip((CPU, MEMORY), rest[:2], strict=False):
        entry = {k: round(v, 1) for k, v in zip(peak_fit.PART_FIELDS, values, strict=False)}
        node_peak = values[7] if len(values) > 7 else 0.0
        terms = [(values[1], peak_fit.RC_LIKE), (values[2], peak_fit.N_SIGMA)]
        entry["won"] = max([*terms, (node_peak, peak_fit.NODE_PEAK)], key=lambda t: t[0])[1]
        out[resource] = entry
    return out


def _expand_load(view: list[Any] | None) -> dict[str, Any] | None:
    if view is None:
        return None
    out: dict[str, Any] = {}
    for j, resource in enumerate((CPU, MEMORY)):
        values = view[5 * j : 5 * j + 5]
        entry = dict(zip(_LOAD, values, strict=True))
        for key, digits in (("usage", 2), ("std", 2), ("measuredShare", 3), ("age", 1)):
            if entry[key] is not None:
                entry[key] = round(entry[key], digits)
        out[resource] = entry
    out["recentCpuM"], counted, out["capacityCpuM"] = view[10:13]
    out["recentCountedCpuM"] = round(counted, 1)
    return out
