"""The rebalancer's defaults from measurement: a table of the candidates and
the rule's choice, read from `make bench-rebalance` results.

Candidates are Ballast's pools of bench.rebalance (ballast: avg, 3 observations, high 80 %;
ballast-n1, -n5: 1 or 5 observations; -latest, -p95: the statistic; -h70, -h90: the high
threshold). The rule, as the issue states it: the default is the candidate with the least
node-seconds over 100 % on the trace (median of its windows) among those whose false evictions
are at most 5 % of their evictions on the trace (all windows together) and that evicted nothing
in stable. Run:

    python -m bench.rebalance.defaults bench/results/rebalance.json

(a full run holds the trace's windows beside the synthetic scenarios; a run of the trace alone
is another file to name after it)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

FALSE_SHARE = 0.05  # false evictions at most this share of evictions, on the trace
SYNTHETIC = ("drift", "hot-start")  # the cooling columns beside the trace's


def values(runs: list[dict[str, Any]], scenario: str, measure: str) -> dict[str, list[float]]:
    """Contender -> `measure` in each run of `scenario`."""
    out: dict[str, list[float]] = {}
    for run in runs:
        if run["scenario"] != scenario:
            continue
        for c, r in run["contenders"].items():
            if measure in r:
                out.setdefault(c, []).append(r[measure])
    return out


def medians(runs: list[dict[str, Any]], scenario: str, measure: str) -> dict[str, float]:
    return {c: statistics.median(v) for c, v in values(runs, scenario, measure).items()}


def candidates(runs: list[dict[str, Any]]) -> list[str]:
    """Ballast's pools in these runs, the shipped default first."""
    names = {c for run in runs for c in run["contenders"] if c.startswith("ballast")}
    return sorted(names, key=lambda c: (c != "ballast", c))


def table(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per candidate: trace node-s > 100 %, evictions, false evictions (medians),
    the false share, stable evictions (the most in any seed), drift and hot-start node-s > 100 %,
    and whether it passes the rule's conditions."""
    over = medians(runs, "trace", "node_seconds_over_100")
    evictions = values(runs, "trace", "evictions")
    false = values(runs, "trace", "false_evictions")
    stable: dict[str, int] = {}
    for run in runs:
        if run["scenario"] == "stable":
            for c, r in run["contenders"].items():
                stable[c] = max(stable.get(c, 0), r["evictions"])
    synthetic = {s: medians(runs, s, "node_seconds_over_100") for s in SYNTHETIC}
    rows = []
    for c in candidates(runs):
        ev, fe = evictions.get(c), false.get(c)
        share = None
        if ev is not None and fe is not None:
            share = sum(fe) / sum(ev) if sum(ev) else 0.0
        row = {
            "candidate": c,
            "trace_node_seconds_over_100": over.get(c),
            "trace_evictions": statistics.median(ev) if ev else None,
            "trace_false_evictions": statistics.median(fe) if fe else None,
            "false_share": share,
            "stable_evictions": stable.get(c),
            **{f"{s}_node_seconds_over_100": synthetic[s].get(c) for s in SYNTHETIC},
        }
        row["eligible"] = share is not None and share <= FALSE_SHARE and stable.get(c, None) == 0
        rows.append(row)
    return rows


def choose(rows: list[dict[str, Any]]) -> str | None:
    """The eligible candidate with the least trace node-seconds over 100 % (ties: the shipped
    default, then by name); None when no candidate passes."""
    eligible = [r for r in rows if r["eligible"] and r["trace_node_seconds_over_100"] is not None]
    if not eligible:
        return None
    best = min(
        eligible,
        key=lambda r: (r["trace_node_seconds_over_100"], r["candidate"] != "ballast",
                       r["candidate"]),
    )  # fmt: skip
    return best["candidate"]


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float) and not v.is_integer():
            return f"{v:.2f}" if v < 1 else f"{v:g}"
        return f"{v:g}"

    heads = [
        "candidate",
        "trace node-s > 100 %",
        "trace evictions",
        "false",
        "false share (all windows)",
        "stable evictions (max)",
        *[f"{s} node-s > 100 %" for s in SYNTHETIC],
        "eligible",
    ]
    keys = ["candidate", "trace_node_seconds_over_100", "trace_evictions",
            "trace_false_evictions", "false_share", "stable_evictions",
            *[f"{s}_node_seconds_over_100" for s in SYNTHETIC], "eligible"]  # fmt: skip
    out = ["| " + " | ".join(heads) + " |", "| --- " * len(heads) + "|"]
    for r in rows:
        out.append("| " + " | ".join(
            r[k] if k == "candidate" else cell(r[k]) for k in keys) + " |")  # fmt: skip
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.rebalance.defaults", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("results", type=Path, nargs="+", help="bench.rebalance result JSONs")
    args = parser.parse_args(argv)
    runs = []
    for path in args.results:
        try:
            runs += json.loads(path.read_text())["runs"]
        except (OSError, ValueError, KeyError) as exc:
            parser.error(f"{path}: not a bench.rebalance result ({exc})")
    rows = table(runs)
    print(markdown(rows))
    chosen = choose(rows)
    print(f"\nchoice: {chosen or 'none passes the rule; the shipped default stays'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
