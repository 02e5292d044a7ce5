"""The chart's default profile, chosen from a full placement run by the rule docs/placement.md
wrote before that run (issue 45 item 4): a pure function of the result document.

A candidate (`--candidate`: `ballast-peak-recent` by default, or `ballast-peak`, whose rule the
run at 9ba285c applied) replaces LoadVariationRiskBalancing (`ballast-lvrb`, the default) when
the run qualifies and every condition of the candidate's rule holds; else the default stays.
Every comparison with the default is paired over the same trace windows or seeds; a measure's
A/A spread in a scenario is bench.harness.verdict's: the mean absolute per-window difference
between `ballast-lvrb` and its twin `ballast-lvrb-aa`. `ballast-peak-recent`'s rule, written
on 2026-11-28, adds issue 45's goals against the peers to the four conditions.

    python -m bench.placement.choice bench/results/placement.json [--candidate NAME]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.harness.verdict import AHEAD, aa_spread, verdict, windows
from bench.placement import run as pl

PEAK, PEAK_RECENT, LVRB, AA = pl.PEAK, pl.PEAK_RECENT, pl.DEFAULT_PROFILE, pl.AA
CANDIDATES = (PEAK_RECENT, PEAK)
# The candidates whose rule has issue 45's goals among its conditions (written 2026-11-28).
WITH_GOALS = frozenset({PEAK_RECENT})
SYNTHETIC = tuple(name for name in pl.SCENARIOS if name != "trace")
MIN_TRACE_WINDOWS = 6
MIN_SEEDS = 5
TRACE_LEAD = "node_seconds_over_100"  # where the candidate must be ahead
PENDING = "pending"  # never more than LoadVariationRiskBalancing's, anywhere
POD_SECONDS = "pod_seconds_pending"  # the trace's, against the best peer's
# Issue 45's goals: the peers (every contender not Ballast's), the scenarios where requests
# mislead, and Koordinator's two modes there.
PEERS = tuple(c for c in pl.CONTENDERS if not c.startswith("ballast-"))
MISLEAD = ("misleading", "learnable")
KOORDINATOR = ("koordinator", "koordinator-agg")


def needs(candidate: str, scenario: str) -> set[str]:
    """The contenders every run of `scenario` must have for the candidate's rule."""
    out = {candidate, LVRB, AA}
    if candidate in WITH_GOALS and scenario == "trace":
        out |= set(PEERS)
    if candidate in WITH_GOALS and scenario in MISLEAD:
        out |= set(KOORDINATOR)
    return out


def qualifies(doc: dict[str, Any], candidate: str = PEAK_RECENT) -> list[str]:
    """Why the run cannot decide (empty: it can): a full run from a clean tree, with the
    contenders the rule compares in at least 6 trace windows and 5 seeds of every synthetic
    scenario (and, for a rule with issue 45's goals, the trace's pod-seconds pending)."""
    problems = []
    if doc.get("quick"):
        problems.append("a --quick run")
    prov = doc.get("provenance") or {}
    if prov.get("dirty") is not False or (prov.get("run") or {}).get("allow_dirty"):
        problems.append("not run from a clean tree at a commit")
    for scenario, least in (("trace", MIN_TRACE_WINDOWS),) + tuple(
        (s, MIN_SEEDS) for s in SYNTHETIC
    ):
        runs = [r for r in doc.get("runs", []) if r.get("scenario") == scenario]
        wanted = needs(candidate, scenario)
        full = [r for r in runs if wanted <= set(r.get("contenders", {}))]
        if len(full) < least or len(full) < len(runs):
            names = ", ".join(sorted(wanted))
            problems.append(f"{scenario}: {len(full)} of at least {least} windows with {names}")
        if candidate in WITH_GOALS and scenario == "trace":
            missing = [
                r for r in full if any(POD_SECONDS not in r["contenders"][c] for c in wanted)
            ]
            if missing:
                problems.append(f"trace: {len(missing)} windows without {POD_SECONDS}")
    return problems


def _check(
    runs: list[dict], scenario: str, measure: str, kind: str, candidate: str = PEAK_RECENT
) -> dict[str, Any]:
    """One condition on one scenario's measure; `kind`: "ahead" (the candidate lower on the
    mean by more than the spread and in ceil(5/6) of the windows), "within" (its mean at most
    the spread above) or "no more" (its mean at most LoadVariationRiskBalancing's)."""
    ours, lvrb = (windows(runs, scenario, measure, c) for c in (candidate, LVRB))
    spread = aa_spread(lvrb, windows(runs, scenario, measure, AA))
    diff = statistics.fmean(p - q for p, q in zip(ours, lvrb, strict=True))
    if kind == "ahead":
        held = verdict(ours, lvrb, spread) == AHEAD
    elif kind == "within":
        held = diff <= spread + 1e-9
    else:
        held = diff <= 1e-9
    return {
        "scenario": scenario,
        "measure": measure,
        "condition": kind,
        "against": LVRB,
        "candidate_mean": round(statistics.fmean(ours), 3),
        "other_mean": round(statistics.fmean(lvrb), 3),
        "mean_difference": round(diff, 3),
        "aa_spread": spread,
        "windows": len(ours),
        "lower_in": sum(p < q for p, q in zip(ours, lvrb, strict=True)),
        "needed_lower_in": math.ceil(5 / 6 * len(ours) - 1e-9) if kind == "ahead" else None,
        "held": held,
    }


def _goal(
    scenario: str, measure: str, kind: str, against: str, ours: list[float], theirs: list[float],
    limit: float, spread: float = 0.0,
) -> dict[str, Any]:  # fmt: skip
    """One of issue 45's goals: the candidate's mean at most `limit`."""
    mine, other = statistics.fmean(ours), statistics.fmean(theirs)
    return {
        "scenario": scenario,
        "measure": measure,
        "condition": kind,
        "against": against,
        "candidate_mean": round(mine, 3),
        "other_mean": round(other, 3),
        "mean_difference": round(mine - other, 3),
        "aa_spread": spread,
        "windows": len(ours),
        "lower_in": sum(p < q for p, q in zip(ours, theirs, strict=True)),
        "needed_lower_in": None,
        "held": mine <= limit + 1e-9,
    }


def goals(runs: list[dict], candidate: str = PEAK_RECENT) -> list[dict[str, Any]]:
    """Issue 45's goals as conditions: on the trace at most half the best peer's mean
    node-seconds over 100 % (the peer with the lowest mean), and no more pod-seconds pending
    than that peer's beyond the A/A spread of them; in misleading and learnable no more nodes
    over 100 % on the mean than either Koordinator mode, and no pod pending in any seed."""
    out = []
    ns = {c: windows(runs, "trace", TRACE_LEAD, c) for c in (candidate, *PEERS)}
    best = min(PEERS, key=lambda c: (statistics.fmean(ns[c]), c))
    half = statistics.fmean(ns[best]) / 2
    out.append(_goal("trace", TRACE_LEAD, "half of", best, ns[candidate], ns[best], half))
    waits = {c: windows(runs, "trace", POD_SECONDS, c) for c in (candidate, best, LVRB, AA)}
    spread = aa_spread(waits[LVRB], waits[AA])
    limit = statistics.fmean(waits[best]) + spread
    out.append(
        _goal("trace", POD_SECONDS, "no more", best, waits[candidate], waits[best], limit, spread)
    )
    for scenario in MISLEAD:
        over = windows(runs, scenario, "nodes_over_100", candidate)
        for peer in KOORDINATOR:
            theirs = windows(runs, scenario, "nodes_over_100", peer)
            limit = statistics.fmean(theirs)
            out.append(_goal(scenario, "nodes_over_100", "no more", peer, over, theirs, limit))
        pending = windows(runs, scenario, PENDING, candidate)
        zero = [0.0] * len(pending)
        check = _goal(scenario, PENDING, "none", "every pod placed", pending, zero, 0.0)
        check["held"] = max(pending) == 0  # in every seed, not on the mean
        out.append(check)
    return out


def choose(doc: dict[str, Any], candidate: str = PEAK_RECENT) -> dict[str, Any]:
    """{"default": the profile, "candidate", "qualifies": problems, "conditions": every check}."""
    if candidate not in CANDIDATES:
        raise ValueError(f"no rule for {candidate}: of {', '.join(CANDIDATES)}")
    problems = qualifies(doc, candidate)
    if problems:
        return {"default": LVRB, "candidate": candidate, "qualifies": problems, "conditions": []}
    runs = doc["runs"]
    checks = [
        _check(runs, "trace", TRACE_LEAD, "ahead", candidate),
        _check(runs, "trace", "node_seconds_over_90", "within", candidate),
        _check(runs, "trace", PENDING, "no more", candidate),
    ]
    for scenario in SYNTHETIC:
        for measure in pl.VERDICT_MEASURES:
            kind = "no more" if measure == PENDING else "within"
            checks.append(_check(runs, scenario, measure, kind, candidate))
    if candidate in WITH_GOALS:
        checks += goals(runs, candidate)
    default = candidate if all(c["held"] for c in checks) else LVRB
    return {"default": default, "candidate": candidate, "qualifies": [], "conditions": checks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.placement.choice",
        description="The chart's default profile from a full placement run, by the rule "
        "docs/placement.md wrote before it.",
    )
    parser.add_argument("result", type=Path, help="a full run's result (placement.json)")
    parser.add_argument(
        "--candidate",
        choices=CANDIDATES,
        default=PEAK_RECENT,
        help=f"the contender the rule is about (default {PEAK_RECENT})",
    )
    args = parser.parse_args(argv)
    result = choose(json.loads(args.result.read_text()), args.candidate)
    for problem in result["qualifies"]:
        print(f"does not decide: {problem}")
    for c in result["conditions"]:
        mark = "held" if c["held"] else "FAILED"
        print(
            f"{mark:6} {c['scenario']:<15} {c['measure']:<22} {c['condition']:<8} "
            f"{args.candidate} {c['candidate_mean']:g}  {c['against']} {c['other_mean']:g}  "
            f"diff {c['mean_difference']:+g}  A/A {c['aa_spread']:g}"
        )
    print(f"the chart's default profile: {result['default']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
