"""The study over every seed and placement rule (`make bench-peaks`): scores each predictor
per horizon (violation rate, savings, severity) and picks the winners by the rules below.

Rules (written before the full run, issue 45 item 2):
- per horizon and placement rule, `best`: the predictor with at most MAX_VIOLATIONS violations
  and the highest savings; `best_paper`: the same among the paper's set (study.PAPER_FAMILIES);
- `chosen`: the one predictor for Ballast: at most MAX_VIOLATIONS at every horizon, under both
  placement rules and in both halves of the week, and the highest savings at 1 h under
  first-fit; `chosen_pod_sum`: the same among those a scheduler can compute with a new pod on
  the node from per-pod or per-workload statistics alone (study.POD_SUM_FAMILIES);
  `chosen_paper`: the same among the paper's set, the fair opponent of `chosen`.

RECOMMENDED is what docs/peaks.md advises Ballast to build, named after the first full run:
it passes `chosen`'s rule with savings within 0.2 points of the rule's pick at 30 min and 1 h,
fewer violations, and needs only two running maxima (no horizon-long peaks per pod).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.peaks import predictors as pr
from bench.peaks import study
from sandbox.load import trace as trace_mod

MAX_VIOLATIONS = 0.01
# Each pod's max over the last day, summed, or the node's own max over the last 3 days.
RECOMMENDED = "max(rc-p100-1d, node-p100-3d)"


def score(truth: np.ndarray, forecast: np.ndarray, requests: np.ndarray) -> dict[str, float]:
    return {
        "violations": round(pr.violation_rate(truth, forecast), 5),
        "savings": round(pr.savings(forecast, requests), 4),
        "severity": round(pr.severity(truth, forecast, requests), 4),
    }


def collect(
    trace: trace_mod.Trace, seeds: list[int], every: int, capacity: float, say: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metrics, setup facts): metrics[rule][predictor][horizon] = {all, first, second} scores,
    pooled over seeds (nodes side by side)."""
    times = study.forecast_times(trace.steps, every)
    half = times < (times[0] + times[-1]) / 2
    pooled: dict[str, dict[str, dict[str, list[tuple[np.ndarray, ...]]]]] = {}
    facts: dict[str, Any] = {"pods": [], "nodes": {r: [] for r in study.RULES}}
    for seed in seeds:
        say(f"seed {seed}")
        pods = study.make_pods(trace, seed)
        node_of = study.placements(pods, seed, capacity)
        facts["pods"].append(len(pods.requests))
        fc = study.forecasts(pods, node_of, times, say, seed)
        for rule, n_of in node_of.items():
            facts["nodes"][rule].append(int(n_of.max()) + 1)
            truth = study.truths(pods, n_of, times)
            req = pr.per_node(pods.requests, n_of, int(n_of.max()) + 1)[:, None]
            for name, by_h in fc[rule].items():
                for h in study.HORIZONS:
                    f = by_h.get(h, by_h.get("*"))
                    pooled.setdefault(rule, {}).setdefault(name, {}).setdefault(h, []).append(
                        (truth[h], f, np.broadcast_to(req, f.shape))
                    )
    metrics: dict[str, Any] = {}
    for rule, named in pooled.items():
        for name, by_h in named.items():
            for h, parts in by_h.items():
                t, f, r = (np.concatenate([p[i] for p in parts]) for i in range(3))
                if name == "requests":  # the truth as a forecast: what a perfect one saves
                    oracle = facts.setdefault("oracle_savings", {}).setdefault(rule, {})
                    oracle[h] = round(pr.savings(t, r), 4)
                metrics.setdefault(rule, {}).setdefault(name, {})[h] = {
                    "all": score(t, f, r),
                    "first": score(t[:, half], f[:, half], r[:, half]),
                    "second": score(t[:, ~half], f[:, ~half], r[:, ~half]),
                }
    facts["forecast_times"] = len(times)
    return metrics, facts


def best(
    metrics: dict[str, Any], rule: str, horizon: str, families: tuple[str, ...] | None
) -> dict[str, Any] | None:
    """The predictor with at most MAX_VIOLATIONS and the highest savings (None if none)."""
    rows = [
        (m[horizon]["all"]["savings"], name)
        for name, m in metrics[rule].items()
        if m[horizon]["all"]["violations"] <= MAX_VIOLATIONS
        and (families is None or study.family_of(name) in families)
    ]
    if not rows:
        return None
    _, name = max(rows)
    return {"predictor": name, **metrics[rule][name][horizon]["all"]}


def chosen(metrics: dict[str, Any], families: tuple[str, ...] | None) -> dict[str, Any] | None:
    """The rule in the module's docstring, among `families` (None: all)."""
    ok = []
    for name in metrics["first-fit"]:
        if families is not None and study.family_of(name) not in families:
            continue
        if all(
            metrics[rule][name][h][part]["violations"] <= MAX_VIOLATIONS
            for rule in study.RULES
            for h in study.HORIZONS
            for part in ("first", "second", "all")
        ):
            ok.append((metrics["first-fit"][name]["1h"]["all"]["savings"], name))
    if not ok:
        return None
    _, name = max(ok)
    return {
        "predictor": name,
        "family": study.family_of(name),
        "by_rule": {
            rule: {h: metrics[rule][name][h]["all"] for h in study.HORIZONS} for rule in study.RULES
        },
    }


def summarise(metrics: dict[str, Any], oracle: dict[str, dict[str, float]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for rule in study.RULES:
        for h in study.HORIZONS:
            summary.setdefault(rule, {})[h] = {
                "best": best(metrics, rule, h, None),
                "best_pod_sum": best(metrics, rule, h, study.POD_SUM_FAMILIES),
                "best_paper": best(metrics, rule, h, study.PAPER_FAMILIES),
                "requests": metrics[rule]["requests"][h]["all"],
                "mean-5m": metrics[rule]["mean-5m"][h]["all"],
                "node-p95-1h": metrics[rule]["node-p95-1h"][h]["all"],
                "oracle_savings": oracle[rule][h],
            }
    return summary


def pct(value: float) -> str:
    return f"{100 * value:.2f}"


def table_text(doc: dict[str, Any]) -> str:
    """The result as a markdown table (docs/peaks.md quotes it): per placement and horizon,
    violations / savings in % of Ballast's signal today, Koordinator's, the best of the paper's
    set and the best of all at that horizon, the one-predictor picks (safe at every horizon)
    and what a perfect forecast saves."""
    picks = {
        key: (doc[key] or {}).get("predictor") for key in ("chosen_paper", "chosen", "recommended")
    }
    lines = [
        "| placement | horizon | mean-5m (Ballast today) | node-p95-1h (Koordinator) "
        "| best of the paper's set here | best here | paper's, one for all "
        "| chosen, one for all | recommended | perfect |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def cell(score: dict[str, Any] | None, named: bool) -> str:
        if not score:
            return "none at <= 1 %"
        name = f"`{score['predictor']}` " if named else ""
        return f"{name}{pct(score['violations'])} / {pct(score['savings'])}"

    for rule, by_h in doc["summary"].items():
        for h, s in by_h.items():
            named = [doc["metrics"][rule][n][h]["all"] if n else None for n in picks.values()]
            cells = [
                cell(s["mean-5m"], False),
                cell(s["node-p95-1h"], False),
                cell(s["best_paper"], True),
                cell(s["best"], True),
                *(cell(score, False) for score in named),
                f"0 / {pct(s['oracle_savings'])}",
            ]
            lines.append(f"| {rule} | {h} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("; ".join(f"{key}: `{name}`" for key, name in picks.items()))
    return "\n".join(lines)
