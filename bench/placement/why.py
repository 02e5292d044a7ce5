"""`python -m bench.placement.why RESULT`: why Ballast's trace nodes ran hot, read again offline.

A placement result keeps, per trace window, the decision records of every Ballast contender
(bench.placement.decisions). This replays each window's simulator from the result (the plan and
the trace are deterministic in the window's seed), places the pods where the records say, and
splits the overload on nodes that went over 100 % into the view, the prediction and the later
rise, with the definitions of the code that runs now: a result written before a definition
changed is read with the new one. Nothing is run against a cluster and nothing is written.

Results written before windows recorded their replay's start (`trace.started_at`) are read with
the start put one second before the window's first decision, the first wave's bind: within a
fifth of a trace step, and said so in the output.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.placement import decisions
from bench.placement import trace as pt
from sandbox.load.trace import DEFAULT_PATH, load

FIRST_BIND = 1.0  # seconds from the replay's start to the first wave's first decision, at most


def window(
    run: dict[str, Any], contender: str, setup: pt.Setup
) -> tuple[dict[str, Any], bool, int]:
    """(the attribution, whether the start was estimated, pods without a record) for one
    contender's pool in one window."""
    records = [
        decisions.Decision(**r) for r in run["contenders"][contender]["decisions"]["records"]
    ]
    start = run["trace"].get("started_at")
    estimated = start is None
    if estimated:
        times = [
            r["time"]
            for c in run["contenders"].values()
            for r in (c.get("decisions") or {}).get("records", [])
        ]
        start = min(times) - FIRST_BIND
    setup.player.start(start)
    placed = {d.pod: (d.node, d.time) for d in records}
    series = pt.over_time(
        contender, setup.nodes, setup.pods, placed, setup.config, start, start + setup.shape.length
    )
    truth = pt.Window(contender, setup.nodes, setup.pods, placed, setup.config, start, series)
    return truth.attribute(records), estimated, len(setup.pods) - len(records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.placement.why", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("result", type=Path, help="a placement result with trace windows")
    parser.add_argument("--trace", type=Path, default=DEFAULT_PATH, help="the trace it replayed")
    args = parser.parse_args(argv)
    doc = json.loads(args.result.read_text())
    runs = [r for r in doc["runs"] if r["scenario"] == "trace"]
    if not any("decisions" in c for r in runs for c in r["contenders"].values()):
        parser.error(f"{args.result}: no trace window with decision records")
    trace = load(args.trace)
    shape = pt.shape_of(doc)
    totals: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        names = [c for c, r in run["contenders"].items() if "decisions" in r]
        for c in names:
            setup = pt.setup_window(trace, run["seed"], list(run["contenders"]), shape)
            out, estimated, missing = window(run, c, setup)
            totals.setdefault(c, []).append(out)
            note = "; start estimated" if estimated else ""
            note += f"; {missing} pods without a record" if missing else ""
            print(f"window {run['seed']} {c:<16} {out['node_seconds_over_100']:>5} node-s > 100 %: "
                  f"{pt.why_hot(out)}{note}")  # fmt: skip
    print("over the windows, per pod placed on a node that went over 100 % (points of CPU):")
    for c, outs in totals.items():
        hot = [o["hot_nodes"] for o in outs if o["hot_nodes"]["pods"]]
        pods = sum(h["pods"] for h in hot)
        if not pods:
            print(f"  {c:<16} no pod on a node over 100 %")
            continue
        mean = {
            k: sum(h[k] * h["pods"] for h in hot) / pods
            for k in ("view_gap", "prediction_gap", "rise")
        }
        seconds = statistics.fmean(o["node_seconds_over_100"] for o in outs)
        print(f"  {c:<16} {pods:>4} pods, {seconds:6.1f} node-s > 100 % a window: view "
              f"{mean['view_gap']:+.1f}, prediction {mean['prediction_gap']:+.1f}, later rise "
              f"{mean['rise']:+.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
