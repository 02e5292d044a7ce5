"""`make bench-peaks`: runs the study over every seed and placement rule, scores each predictor
per horizon (violation rate, savings, severity) and picks the winners by the rules below.

Rules (written before the run, issue 45 item 2):
- per horizon and placement rule, `best`: the predictor with at most MAX_VIOLATIONS violations
  and the highest savings; `best_paper`: the same among the paper's set (study.PAPER_FAMILIES);
- `chosen`: the one predictor for Ballast: at most MAX_VIOLATIONS at every horizon, under both
  placement rules and in both halves of the week, and the highest savings at 1 h under
  first-fit; `chosen_pod_sum`: the same among those a scheduler can compute with a new pod on
  the node from per-pod or per-workload statistics alone (study.POD_SUM_FAMILIES).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import provenance
from bench.peaks import predictors as pr
from bench.peaks import study
from sandbox import trace as trace_mod

MAX_VIOLATIONS = 0.01
DEFAULT_OUT = provenance.REPO / provenance.RESULTS / "peaks.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.peaks",
        description="Offline peak study (issue 45 item 2): every peak predictor's forecast of a "
        "node's peak over 5 min to 1 h against what the node then used, on the Bitbrains trace "
        "(no sandbox). Writes a stamped JSON and a plot of violation rate against savings.",
    )
    options: tuple[tuple[str, type, Any, str], ...] = (
        ("--trace", Path, trace_mod.DEFAULT_PATH,
         "the trace (subset CSV or the archive's files; default %(default)s)"),
        ("--every", int, 3, "steps (5 min each) between forecast times (default 3: 15 min)"),
        ("--node-requests", float, study.NODE_REQUESTS,
         "cores of requests a node holds (default %(default)s)"),
        ("--out", Path, DEFAULT_OUT,
         "result JSON; the plot goes beside it as .png (default %(default)s)"),
    )  # fmt: skip
    for flag, kind, default, text in options:
        p.add_argument(flag, type=kind, default=default, help=text)
    p.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[1, 2, 3],
        help="replica counts, noise, placement order per seed (default 1 2 3)",
    )
    args = p.parse_args(argv)
    if args.every < 1:
        p.error("--every must be at least 1")
    if args.node_requests <= 0:
        p.error("--node-requests must be > 0")
    return args


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
        fc = study.forecasts(pods, node_of, times, say)
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    cpu_started = time.process_time()
    try:
        trace = trace_mod.load(args.trace)
    except trace_mod.TraceError as exc:
        print(f"bench.peaks: {exc}", file=sys.stderr)
        return 2
    print(f"trace: {len(trace.vms)} VMs x {trace.days:.1f} days from {trace.source}")
    metrics, facts = collect(trace, args.seeds, args.every, args.node_requests, print)
    doc = {
        "about": "`make bench-peaks`: offline peak prediction on the Bitbrains trace (issue 45 "
        "item 2); violations: share of (node, time) points whose peak over the horizon passed "
        "the forecast; savings: mean of 1 - forecast / node's requests",
        "seconds": round(time.monotonic() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu_started, 1),
        "setup": {
            "trace": trace.source,
            "vms": len(trace.vms),
            "steps": trace.steps,
            "seeds": args.seeds,
            "every_steps": args.every,
            "node_requests_cores": args.node_requests,
            "noise": study.NOISE,
            "horizons_steps": study.HORIZONS,
            "windows_steps": study.WINDOWS,
            "max_violations": MAX_VIOLATIONS,
            **facts,
        },
        "chosen": chosen(metrics, None),
        "chosen_pod_sum": chosen(metrics, study.POD_SUM_FAMILIES),
        "summary": summarise(metrics, facts.pop("oracle_savings")),
        "metrics": metrics,
    }
    path = provenance.write_result(args.out, doc)
    print(f"wrote {path} in {doc['seconds']} s")
    print(table_text(doc))
    from bench.peaks import plot  # matplotlib only once the numbers are safe

    print(f"plot: {plot.draw(doc, args.out.with_suffix('.png'))}")
    return 0


def table_text(doc: dict[str, Any]) -> str:
    lines = [
        "rule       horizon  best (<=1 %)                                 viol   save  |"
        " best of the paper's set                      viol   save"
    ]
    for rule, by_h in doc["summary"].items():
        for h, s in by_h.items():
            cells = []
            for key in ("best", "best_paper"):
                b = s[key]
                cells.append(
                    f"{b['predictor']:<44} {b['violations']:.4f} {b['savings']:.3f}"
                    if b
                    else f"{'none':<44} {'':6} {'':5}"
                )
            lines.append(f"{rule:<10} {h:<8} {cells[0]} | {cells[1]}")
    for key in ("chosen", "chosen_pod_sum"):
        c = doc[key]
        lines.append(f"{key}: {c['predictor'] if c else 'none'}")
        for h, s in c["by_rule"]["first-fit"].items() if c else ():
            lines.append(f"  first-fit {h:<4} {s['violations']:.4f} {s['savings']:.3f}")
    return "\n".join(lines)
