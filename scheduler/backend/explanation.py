"""What a decision record holds, built from the parts a cycle already has (docs/explain.md).

The cycle calls `placed` or `unschedulable` under the cache's lock, before it assumes the pod,
so the load view is the one the scores saw. Only the top nodes get the per-plugin breakdown and
the load view; everything else is counts. Plain dicts out, written as JSON by the store.
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
from scheduler.plugins.helpers import loadview

# The rule kube-scheduler and Ballast use; said in the record so nobody has to guess.
RANDOM_TIE_BREAK = "uniformly at random among the nodes with the best total"
# DefaultPreemption's choice, in its order (scheduler/plugins/default_preemption.py).
PREEMPTION_RULE = (
    "victims: pods of lower priority whose removal lets the pod pass every filter, most "
    "important reprieved first; node: fewest PDB violations, then lowest highest-victim "
    "priority, smallest priority sum, fewest victims, latest start, lowest CPU load after "
    "eviction, name"
)
# Where the pod's predicted CPU comes from; names the estimate so another can replace it.
PREDICTION_SOURCE = "TargetLoadPacking rule: limit, else request x multiplier, else default"


def node_counts(
    total: int, considered: int, feasible: int, scored: int, percentage: int, wanted: int
) -> dict[str, Any]:
    return {
        "total": total,
        "considered": considered,
        "feasible": feasible,
        "scored": scored,
        "percentageOfNodesToScore": percentage,
        "enoughFeasible": wanted,  # the filter stops after this many (the percentage's cut)
    }


def filter_counts(reasons: dict[str, list[str]], state: CycleState) -> dict[str, Any]:
    """Rejections per reason (counted as FailedScheduling counts them) and per filter plugin.
    Nodes turned away to leave room for pods nominated there are the cycle's, not a plugin's."""
    by_reason: dict[str, int] = {}
    for why in reasons.values():
        for reason in why:
            by_reason[reason] = by_reason.get(reason, 0) + 1
    by_plugin = {name: dict(counts) for name, counts in (state.get(FILTER_TALLY) or {}).items()}
    tallied = sum(sum(c.values()) for c in by_plugin.values())
    rest = sum(by_reason.values()) - tallied
    out: dict[str, Any] = {"rejectedNodes": len(reasons), "byReason": by_reason}
    rejection = state.get(PRE_FILTER_REJECTION)
    if rejection is not None:
        out["preFilter"] = {"plugin": state.get(PRE_FILTER_PLUGIN, ""), "reason": rejection.reason}
    elif rest > 0:
        by_plugin["(room for nominated pods)"] = {"other": rest}
    out["byPlugin"] = by_plugin
    return out


def load_view(node: NodeInfo, snap: Snapshot) -> dict[str, Any]:
    """The numbers a load-aware score read for `node`: usage after the fallback rule, its state
    and the data's age, and the recently bound CPU counted on top."""
    scratch = CycleState()  # loadview counts fallbacks in the state; these are not the cycle's
    view: dict[str, Any] = {}
    cpu_weight = 0.0
    for resource in (CPU, MEMORY):
        u = loadview.usage(scratch, node, snap, resource)
        stats = loadview.metric_stats(snap, node.name, resource)
        view[resource] = {
            "usage": round(u.avg, 2),
            "std": round(u.std, 2),
            "state": u.reason,
            "measuredShare": round(u.weight, 3),
            "age": None if stats is None else round(stats.age, 1),
        }
        if resource == CPU:
            cpu_weight = u.weight
    recent = snap.recent_cpu_m.get(node.name, 0)
    view["recentCpuM"] = recent
    view["recentCountedCpuM"] = round(recent * cpu_weight, 1)
    view["capacityCpuM"] = node.capacity.get(CPU, 0)
    return view


def top_indices(totals: np.ndarray, k: int, must: int) -> list[int]:
    """Indices of the k best totals, best first (ties by position), always with `must` (the
    winner, which a random tie-break may have taken from beyond the k)."""
    n = len(totals)
    if n <= k:
        order = list(range(n))
    else:
        part = np.argpartition(-totals, k - 1)[:k]
        order = part.tolist()
    order.sort(key=lambda i: (-int(totals[i]), i))
    if must not in order:
        order[-1] = must
        order.sort(key=lambda i: (-int(totals[i]), i))
    return order


def scores(parts: ScoreParts, chosen: str, snap: Snapshot, k: int) -> dict[str, Any]:
    """The winner, its margin, the ties, and the top `k` nodes taken apart plugin by plugin."""
    names, totals = parts.names, parts.totals
    win = names.index(chosen)
    best = int(totals[win])
    ties = int(np.count_nonzero(totals == best))
    top = top_indices(totals, k, win)
    rows = []
    for i in top:
        plugins = {}
        for name, weight, raw, normalized in parts.plugins:
            if raw is None:
                continue
            norm = int(normalized[i])
            plugins[name] = {"raw": int(raw[i]), "normalized": norm, "weighted": weight * norm}
        node = snap.nodes.get(names[i])
        rows.append(
            {
                "node": names[i],
                "total": int(totals[i]),
                "plugins": plugins,
                "load": load_view(node, snap) if node is not None else None,
            }
        )
    runner_up = None
    if len(totals) > 1:
        others = np.delete(totals, win)
        j = int(np.argmax(others))
        runner_up = {"node": names[j if j < win else j + 1], "total": int(others[j])}
    return {
        "plugins": [
            {"name": name, "weight": weight, "skipped": raw is None}
            for name, weight, raw, _ in parts.plugins
        ],
        "winner": {
            "node": chosen,
            "total": best,
            "margin": best - runner_up["total"] if runner_up else None,
            "runnerUp": runner_up,
            "ties": ties,
            "tieBreak": RANDOM_TIE_BREAK if ties > 1 else "",
        },
        "top": rows,
    }


def placed(
    pod: PodInfo,
    nodes: dict[str, Any],
    reasons: dict[str, list[str]],
    state: CycleState,
    snap: Snapshot,
    parts: ScoreParts | None,
    chosen: str,
    predicted_cpu_m: int,
    k: int,
) -> dict[str, Any]:
    """The record of a pod placed on `chosen`; `parts` None when one node was feasible."""
    doc = _common(pod, nodes, reasons, state, predicted_cpu_m)
    if parts is not None:
        doc["scores"] = scores(parts, chosen, snap, k)
    else:
        node = snap.nodes.get(chosen)
        doc["scores"] = {
            "plugins": [],
            "winner": {
                "node": chosen,
                "total": None,
                "margin": None,
                "runnerUp": None,
                "ties": 1,
                "tieBreak": "the only feasible node: not scored, as kube-scheduler does",
            },
            "top": [
                {
                    "node": chosen,
                    "total": None,
                    "plugins": {},
                    "load": load_view(node, snap) if node is not None else None,
                }
            ],
        }
    return doc


def unschedulable(
    pod: PodInfo,
    nodes: dict[str, Any],
    reasons: dict[str, list[str]],
    state: CycleState,
    message: str,
    post: PostFilterResult,
    predicted_cpu_m: int,
) -> dict[str, Any]:
    """The record of a pod that fits nowhere: the FailedScheduling text and its counts, and
    what preemption did about it."""
    doc = _common(pod, nodes, reasons, state, predicted_cpu_m)
    doc["message"] = message
    if post.nominated_node:
        doc["preemption"] = {
            "nominatedNode": post.nominated_node,
            "victims": [
                {"namespace": v.namespace, "name": v.name, "uid": v.uid, "priority": v.priority}
                for v in post.victims
            ],
            "why": PREEMPTION_RULE,
        }
    elif post.message:
        doc["preemption"] = {"nominatedNode": "", "victims": [], "why": post.message}
    return doc


def _common(
    pod: PodInfo,
    nodes: dict[str, Any],
    reasons: dict[str, list[str]],
    state: CycleState,
    predicted_cpu_m: int,
) -> dict[str, Any]:
    return {
        "priority": pod.priority,
        "nodes": nodes,
        "filters": filter_counts(reasons, state),
        "prediction": {"cpuM": predicted_cpu_m, "source": PREDICTION_SOURCE},
    }
