"""`python -m bench.placement`: runs the placement benchmark, its trace scenario too.

The command sits above run.py and trace.py (which builds on run.py), so neither of the two
imports the other back.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from bench.harness import chart, runguard
from bench.harness.common import redraw, redraw_option, scenario_table
from bench.harness.provenance import write_result
from bench.harness.verdict import all_verdicts, print_verdicts
from bench.placement import budget
from bench.placement import run as pl
from bench.placement import trace as pt
from bench.placement.plots import plot_all
from sandbox.load.trace import DEFAULT_PATH as DEFAULT_TRACE
from sandbox.load.trace import for_scenarios
from sandbox.load.trace_player import windows as trace_windows
from sandbox.peers import koordinator


# -- the command --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.placement",
        description=pl.__doc__.split("\n\n")[0],
        epilog=budget.help_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"one seed of every scenario in a shorter shape, {len(pl.QUICK_CONTENDERS)} "
        "contenders (placement-quick.json)",
    )
    parser.add_argument("--scenarios", help=f"comma-separated, of {', '.join(pl.SCENARIOS)}")
    parser.add_argument("--seeds", type=int, help=f"how many seeds (default {len(pl.SEEDS)})")
    parser.add_argument("--nodes", type=int, default=pl.NODES_PER_POOL, help="nodes per pool")
    parser.add_argument("--out", type=Path, help="results JSON (default bench/results/...)")
    parser.add_argument(
        "--contenders",
        help=f"comma-separated (default {', '.join(pl.CONTENDERS)}; --quick: "
        f"{', '.join(pl.QUICK_CONTENDERS)}), of {', '.join(pl.DESCRIPTIONS)}",
    )
    parser.add_argument(
        "--source", choices=pl.SOURCES, default="prometheus", help="what the watcher reads"
    )
    parser.add_argument(
        "--trace", type=Path, default=DEFAULT_TRACE, help="the trace the `trace` scenario replays"
    )
    redraw_option(parser, "--plot", "only draw an earlier result's pictures (beside it)")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    if args.plot is not None:
        return redraw(args.plot, plot_all)
    shapes = pl.QUICK if args.quick else pl.SCENARIOS
    window_shape = pt.QUICK if args.quick else pt.FULL
    names = args.scenarios.split(",") if args.scenarios else list(shapes)
    if unknown := [n for n in names if n not in shapes]:
        parser.error(f"unknown scenarios {unknown}: of {', '.join(shapes)}")
    seeds = list(pl.SEEDS)[:1] if args.quick else list(pl.SEEDS)
    if args.seeds:
        seeds = list(range(1, args.seeds + 1))
    trace = None
    if "trace" in names and args.source != "prometheus":
        print("trace scenario left out: kwok's usage annotations do not follow a trace")
    elif "trace" in names:
        trace = for_scenarios(args.trace, bool(args.scenarios))
    if trace is None and "trace" in names:
        names.remove("trace")
    suffix = "" if args.source == "prometheus" else f"-{args.source}"
    out = args.out or pl.RESULTS / f"placement{'-quick' if args.quick else ''}{suffix}.json"
    default = pl.QUICK_CONTENDERS if args.quick else pl.CONTENDERS
    contenders = args.contenders.split(",") if args.contenders else list(default)
    if unknown := [c for c in contenders if c not in pl.DESCRIPTIONS]:
        parser.error(f"unknown contenders {unknown}: of {', '.join(pl.DESCRIPTIONS)}")
    runguard.start_run(parser, args.allow_dirty)
    if any(c.startswith("koordinator") for c in contenders):
        koordinator.ensure_built()  # minutes, once: koord-scheduler and the CRDs into .cache/
    # The trace: one window on every day one can start on (6 of the subset's 7), unless the
    # seeds are given; --quick's one seed is its first window.
    windows = list(range(1, trace_windows(trace) + 1)) if trace is not None else []
    if args.quick or args.seeds:
        windows = seeds
    started = time.monotonic()
    runs = []
    for name in names:
        for seed in windows if name == "trace" else seeds:
            print(f"[{time.monotonic() - started:5.0f} s] {name}, seed {seed}", flush=True)
            if name == "trace":
                run = pt.run_one(seed, contenders, trace, say=_say, shape=window_shape)
            else:
                run = pl.run_one(
                    shapes[name], seed, contenders, args.nodes, say=_say, source=args.source
                )
            runs.append(run)
            for c, r in run["contenders"].items():
                print(
                    f"    {c:<15} >100%: {r['nodes_over_100']:>2}  >90%: {r['nodes_over_90']:>2}"
                    f"  >{pl.TARGET + 10}%: {r['nodes_over_target_10']:>2}  max {r['max_cpu']:5.1f}"
                    f"  std {r['std_cpu']:4.1f}  pods/node max {r['pods_per_node_max']:>2}"
                    f"  pending {r['pending']:>3}  bound in {r['bind_seconds']} s",
                    flush=True,
                )
                if "decisions" in r:
                    print(f"    {'':<15} {pt.why_hot(r['decisions'])}", flush=True)
    summary = pl.summarize(runs)
    measures = {"trace": pt.VERDICT_MEASURES, "*": pl.VERDICT_MEASURES}
    verdicts = all_verdicts(runs, measures, pl.DEFAULT_PROFILE, pl.AA)
    doc = {
        "about": pl.__doc__.split("\n\n")[0],
        "quick": args.quick,
        "seconds": round(time.monotonic() - started),
        "cpus": os.cpu_count(),
        "setup": {
            "nodes_per_pool": args.nodes,
            "seeds": seeds,
            "trace_windows": windows,
            "target": pl.TARGET,
            "requests_m": pl.REQUESTS_M,
            "factor": pl.FACTOR,
            "background_cpu": pl.BACKGROUND,
            "hot_background_cpu": pl.HOT_BACKGROUND,
            "ramp_seconds": pl.RAMP_SECONDS,
            "bind_wait_seconds": {"deadline": pl.BIND_DEADLINE, "quiet": pl.BIND_QUIET},
            "watcher": pl.WATCHER_ENV,
            "timing": pl.SYNTHETIC.record(),
            "fresh_node_metrics": asdict(pl.FRESH_NODE_METRICS),
            "load_aware_args": {"koordinator": {}, "koordinator-agg": pl.KOORDINATOR_P95},
            "source": args.source,
            "scenarios": {n: shapes[n].about for n in names},
            "contenders": {c: pl.DESCRIPTIONS[c] for c in contenders},
            # Ballast's rows as they ran: the chart's profile or a variant of it, under the
            # overlays (bench.harness.chart); percentageOfNodesToScore the chart's.
            "ballast_profiles": {
                c: pl.ballast_profile(c) for c in contenders if c.startswith("ballast-")
            },
            "overlays": chart.OVERLAYS,
        },
        "feasibility": pl.feasibility(
            [n for n in names if n != "trace"], seeds, args.nodes, shapes
        ),
        "summary": summary,
        "goals": pl.goals(summary),
        "verdicts": verdicts,
        "runs": runs,
    }
    if trace is not None:
        doc["setup"]["trace"] = pt.setup(trace, window_shape)
        print(scenario_table(doc, "trace", pt.COLUMNS))
    write_result(out, doc)  # before the pictures: a failing plot never loses a run
    print_verdicts(verdicts)
    print(f"results: {out} ({doc['seconds']} s)")
    for path in plot_all(doc, out.parent, prefix=out.stem):
        print(f"plot: {path}")
    return 0


def _say(text: str) -> None:
    print(text, flush=True)


if __name__ == "__main__":
    sys.exit(main())
