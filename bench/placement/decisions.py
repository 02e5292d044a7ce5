"""What Ballast's scheduler saw when it placed each pod of a run, beside the truth (issue 45).

A node runs hot after a placement for one of three reasons, and each needs a different fix:

- **the view**: the node was already hotter than the load the scorer read (a look-back too long,
  stale data, recently bound pods not counted): `view_gap` = the node's true CPU when the pod
  was placed minus what the scorer saw, recent pods included;
- **the prediction**: the pod came to use more than it was predicted to (a profile's floor, the
  estimator's fallback): `prediction_gap` = the pod's highest use after it was placed minus its
  prediction;
- **what came after**: neither was wrong at the moment of choice; the node's other pods rose later
  (a burst a mean cannot see): `rise` = the node's peak after the placement, counting only the
  pods bound by then (later pods have decisions of their own), minus its truth then and the
  pod's own highest use.

The three add up to the node's peak after the placement minus what the scorer expected it to be
with the pod (what it saw plus the prediction).

The scheduler's decision records (`/api/v1/decisions`, docs/explain.md) give the first two
halves, the simulator's truth the others. `source` is the estimator's (the cycle's prediction,
which the recently bound pods count); `peak_source` is where PeakFit took the pod's figures from
(its workload's measured replicas, its workload's history at the watcher, or the estimator).
`digest` keeps what these need of one record; `attribute` sums them over the pods placed on
nodes that went over 100 % and over the rest, so a table can say which of the three a
contender's node-seconds over 100 % came from.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote

import requests

PLACED = ("bound", "binding")
TIMEOUT = 5.0


@dataclass(frozen=True)
class Decision:
    pod: str
    node: str
    time: float  # Unix seconds of the attempt
    seen_cpu: float  # % of the node the scorer read, recently bound pods included
    state: str  # the load data's state (fresh, stale, missing ...)
    age: float | None  # seconds
    predicted_cpu: float  # the pod's predicted use, % of the node
    source: str  # which estimate gave the prediction
    margin: float | None  # the winner's lead over the runner-up
    peak_cpu: float | None  # PeakFit's predicted peak with the pod, % (None without PeakFit)
    # PeakFit's: "replicas", "replicas raised by workload history", "workload history",
    # "workload history's last buckets" (`lookBack: recent`), "estimate (...)"
    peak_source: str | None = None


def digest(doc: dict[str, Any]) -> Decision | None:
    """The newest attempt of a pod's record that placed it, reduced to what `attribute` reads;
    None when no attempt placed it or the winner has no load view (the only feasible node)."""
    for attempt in doc.get("attempts") or []:
        if attempt.get("outcome") not in PLACED:
            continue
        scores = attempt.get("scores") or {}
        node = attempt.get("node") or (scores.get("winner") or {}).get("node")
        row = next((r for r in scores.get("top") or [] if r.get("node") == node), None)
        load = (row or {}).get("load")
        if not node or not load or not load.get("capacityCpuM"):
            return None
        capacity = float(load["capacityCpuM"])
        cpu = load.get("cpu") or {}
        recent = 100.0 * float(load.get("recentCountedCpuM") or 0.0) / capacity
        prediction = attempt.get("prediction") or {}
        peak = ((row or {}).get("peak") or {}).get("cpu") or {}
        return Decision(
            pod=doc["pod"],
            node=node,
            time=float(attempt["time"]),
            seen_cpu=round(float(cpu.get("usage") or 0.0) + recent, 2),
            state=str(cpu.get("state") or ""),
            age=cpu.get("age"),
            predicted_cpu=round(100.0 * float(prediction.get("cpuM") or 0) / capacity, 2),
            source=str(prediction.get("source") or ""),
            margin=(scores.get("winner") or {}).get("margin"),
            peak_cpu=peak.get("peak"),
            peak_source=peak_kind(scores.get("peakPodFrom")),
        )
    return None


def peak_kind(source: Any) -> str | None:
    """PeakFit's `peakPodFrom` without the workload's name: "replicas of NS/Kind/NAME (2
    measured)" -> "replicas", "replicas of ... (2 measured, 1 raised to the workload history's
    day max)" -> "replicas raised by workload history", "workload history of ... (24 of 24
    buckets)" -> "workload history", "workload history's last buckets of ..." (`lookBack:
    recent`) -> "workload history's last buckets"; an estimate stays as it is ("estimate
    (requests)")."""
    if not isinstance(source, str) or not source:
        return None
    if source.startswith("replicas of ") and " raised to the " in source:
        return "replicas raised by workload history"
    for kind in ("replicas", "workload history", "workload history's last buckets"):
        if source.startswith(f"{kind} of "):
            return kind
    return source


def fetch(port: int, namespace: str, pods: Iterable[str]) -> list[Decision]:
    """Each pod's digest from a scheduler's decision API on 127.0.0.1:`port` (pods it has no
    record of, or did not place, are left out)."""
    out = []
    with requests.Session() as s:
        for pod in pods:
            url = f"http://127.0.0.1:{port}/api/v1/decisions/{quote(namespace)}/{quote(pod)}"
            answer = s.get(url, timeout=TIMEOUT)
            if answer.status_code == 404:
                continue
            answer.raise_for_status()
            if (d := digest(answer.json())) is not None:
                out.append(d)
    return out


def attribute(
    decisions: list[Decision],
    truth_at: Callable[[str, float], float],
    peak_after: Callable[[str, float], float],
    use_after: Callable[[str, float], float],
    node_seconds_over_100: dict[str, int],
) -> dict[str, Any]:
    """Per group (pods placed on nodes that went over 100 %, and the others): how many, and the
    mean of each gap in points of the node's CPU.

    `truth_at(node, t)`: the node's true CPU % at t, pods bound before t only; `peak_after(node,
    t)`: its highest true CPU % from t to the run's end; `use_after(pod, t)`: the pod's highest
    use from t on, % of its node."""
    rows = []
    for d in decisions:
        truth = truth_at(d.node, d.time)
        used = use_after(d.pod, d.time)
        rows.append(
            {
                "hot": node_seconds_over_100.get(d.node, 0) > 0,
                "view_gap": truth - d.seen_cpu,
                "prediction_gap": used - d.predicted_cpu,
                "rise": peak_after(d.node, d.time) - truth - used,
                "source": d.source,
                "peak_source": d.peak_source,
            }
        )
    out: dict[str, Any] = {}
    for name, hot in (("hot_nodes", True), ("other_nodes", False)):
        group = [r for r in rows if r["hot"] == hot]
        sources: dict[str, int] = {}
        peak_sources: dict[str, int] = {}
        for r in group:
            sources[r["source"]] = sources.get(r["source"], 0) + 1
            if r["peak_source"] is not None:
                peak_sources[r["peak_source"]] = peak_sources.get(r["peak_source"], 0) + 1
        out[name] = {
            "pods": len(group),
            "sources": sources,
            **({"peak_sources": peak_sources} if peak_sources else {}),
            **{
                key: round(statistics.fmean(r[key] for r in group), 1) if group else None
                for key in ("view_gap", "prediction_gap", "rise")
            },
        }
    out["node_seconds_over_100"] = sum(node_seconds_over_100.values())
    out["cause"] = cause(out["hot_nodes"])
    return out


def cause(hot: dict[str, Any]) -> str:
    """The largest of the three gaps on the hot nodes (points of CPU per pod placed there), or
    "none" without pods placed on hot nodes."""
    if not hot["pods"]:
        return "none"
    gaps = {"view": hot["view_gap"], "prediction": hot["prediction_gap"], "later rise": hot["rise"]}
    return max(gaps, key=lambda k: gaps[k])


def as_records(decisions: list[Decision]) -> list[dict[str, Any]]:
    return [asdict(d) for d in decisions]
