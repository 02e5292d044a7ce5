"""The chart's default profile, chosen from a full placement run by the rule docs/placement.md
wrote before that run (issue 45 item 4): a pure function of the result document.

PeakFit (`ballast-peak`) replaces LoadVariationRiskBalancing (`ballast-lvrb`, the default) when
the run qualifies and every condition holds; else the default stays. Every comparison is paired
over the same trace windows or seeds; a measure's A/A spread in a scenario is
bench.harness.verdict's: the mean absolute per-window difference between `ballast-lvrb` and its
twin `ballast-lvrb-aa`.

    python -m bench.placement.choice bench/results/placement.json
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.harness.verdict import AHEAD, aa_spread, verdict, windows
from bench.placement import run as pl

PEAK, LVRB, AA = pl.PEAK, pl.DEFAULT_PROFILE, pl.AA
SYNTHETIC = tuple(name for name in pl.SCENARIOS if name != "trace")
MIN_TRACE_WINDOWS = 6
MIN_SEEDS = 5
TRACE_LEAD = "node_seconds_over_100"  # where PeakFit must be ahead
PENDING = "pending"  # never more than LoadVariationRiskBalancing's, anywhere


def qualifies(doc: dict[str, Any]) -> list[str]:
    """Why the run cannot decide (empty: it can): a full run from a clean tree, with the three
    contenders in at least 6 trace windows and 5 seeds of every synthetic scenario."""
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
        full = [r for r in runs if {PEAK, LVRB, AA} <= set(r.get("contenders", {}))]
        if len(full) < least or len(full) < len(runs):
            problems.append(f"{scenario}: {len(full)} of at least {least} windows with all three")
    return problems


def _check(runs: list[dict], scenario: str, measure: str, kind: str) -> dict[str, Any]:
    """One condition on one scenario's measure; `kind`: "ahead" (PeakFit lower on the mean by
    more than the spread and in ceil(5/6) of the windows), "within" (PeakFit's mean at most
    the spread above) or "no more" (PeakFit's mean at most LoadVariationRiskBalancing's)."""
    peak, lvrb = (windows(runs, scenario, measure, c) for c in (PEAK, LVRB))
    spread = aa_spread(lvrb, windows(runs, scenario, measure, AA))
    diff = statistics.fmean(p - q for p, q in zip(peak, lvrb, strict=True))
    if kind == "ahead":
        held = verdict(peak, lvrb, spread) == AHEAD
    elif kind == "within":
        held = diff <= spread + 1e-9
    else:
        held = diff <= 1e-9
    return {
        "scenario": scenario,
        "measure": measure,
        "condition": kind,
        "peak_mean": round(statistics.fmean(peak), 3),
        "lvrb_mean": round(statistics.fmean(lvrb), 3),
        "mean_difference": round(diff, 3),
        "aa_spread": spread,
        "windows": len(peak),
        "lower_in": sum(p < q for p, q in zip(peak, lvrb, strict=True)),
        "needed_lower_in": math.ceil(5 / 6 * len(peak) - 1e-9) if kind == "ahead" else None,
        "held": held,
    }


def choose(doc: dict[str, Any]) -> dict[str, Any]:
    """{"default": the profile, "qualifies": problems, "conditions": every check}."""
    problems = qualifies(doc)
    if problems:
        return {"default": LVRB, "qualifies": problems, "conditions": []}
    runs = doc["runs"]
    checks = [
        _check(runs, "trace", TRACE_LEAD, "ahead"),
        _check(runs, "trace", "node_seconds_over_90", "within"),
        _check(runs, "trace", PENDING, "no more"),
    ]
    for scenario in SYNTHETIC:
        for measure in pl.VERDICT_MEASURES:
            kind = "no more" if measure == PENDING else "within"
            checks.append(_check(runs, scenario, measure, kind))
    default = PEAK if all(c["held"] for c in checks) else LVRB
    return {"default": default, "qualifies": [], "conditions": checks}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m bench.placement.choice RESULT.json", file=sys.stderr)
        return 2
    result = choose(json.loads(Path(args[0]).read_text()))
    for problem in result["qualifies"]:
        print(f"does not decide: {problem}")
    for c in result["conditions"]:
        mark = "held" if c["held"] else "FAILED"
        print(
            f"{mark:6} {c['scenario']:<15} {c['measure']:<22} {c['condition']:<8} "
            f"peak {c['peak_mean']:g}  lvrb {c['lvrb_mean']:g}  "
            f"diff {c['mean_difference']:+g}  A/A {c['aa_spread']:g}"
        )
    print(f"the chart's default profile: {result['default']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
