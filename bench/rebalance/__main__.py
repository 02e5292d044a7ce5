"""`python -m bench.rebalance`: runs the rebalance benchmark, its trace scenario too.

The command sits above run.py and trace.py (which builds on run.py), so neither of the two
imports the other back.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench.harness import runguard
from bench.harness.common import redraw, redraw_option, scenario_table, sized
from bench.harness.provenance import write_result
from bench.harness.verdict import all_verdicts, print_verdicts
from bench.rebalance import budget, decisions
from bench.rebalance import run as rb
from bench.rebalance import trace as rt
from bench.rebalance.plots import plot_all
from sandbox.load.trace import DEFAULT_PATH as DEFAULT_TRACE
from sandbox.load.trace import for_scenarios
from sandbox.load.trace_player import windows as trace_windows
from sandbox.peers import descheduler, koordinator


# -- the command --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.rebalance",
        description=rb.__doc__.split("\n\n")[0],
        epilog=budget.help_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"one seed, every scenario shortened, {len(rb.QUICK_CONTENDERS)} contenders "
        "(rebalance-quick.json)",
    )
    parser.add_argument("--scenarios", help=f"comma-separated, of {', '.join(rb.SCENARIOS)}")
    parser.add_argument("--seeds", type=int, help=f"how many seeds (default {len(rb.SEEDS)})")
    parser.add_argument(
        "--first-seed", type=int, default=1, help="the seeds are first-seed, first-seed + 1, ..."
    )
    parser.add_argument(
        "--contenders",
        help=f"comma-separated (default {', '.join(rb.DEFAULT_CONTENDERS)}), "
        f"of {', '.join(rb.CONTENDERS)}",
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--observe", type=float, help="seconds after the change, every scenario")
    parser.add_argument("--table", type=Path, help="print a results JSON as rb.markdown and exit")
    parser.add_argument(
        "--merge", type=Path, nargs="+", help="join the runs of results JSONs into --out"
    )
    parser.add_argument(
        "--trace", type=Path, default=DEFAULT_TRACE, help="the trace the `trace` scenario replays"
    )
    redraw_option(parser, "--plot", "only draw an earlier result's pictures (beside it)")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    seeds_given = args.seeds is not None
    if args.plot is not None:
        return redraw(args.plot, plot_all, rt.plot)
    sized(
        args,
        quick={"seeds": 1, "contenders": ",".join(rb.QUICK_CONTENDERS),
               "out": rb.RESULTS / "rebalance-quick.json"},
        full={"seeds": len(rb.SEEDS), "contenders": ",".join(rb.DEFAULT_CONTENDERS),
              "out": rb.RESULTS / "rebalance.json"},
    )  # fmt: skip
    if args.table:
        doc = json.loads(args.table.read_text())
        print(rb.markdown(doc) + "\n" + scenario_table(doc, "trace", rt.COLUMNS))
        return 0
    if args.merge:
        code = rb.merge(args.merge, args.out)
        for path in rt.plot(json.loads(args.out.read_text()), args.out.parent, args.out.stem):
            print(f"plot: {path}")
        return code
    runguard.start_run(parser, args.allow_dirty)
    names = args.scenarios.split(",") if args.scenarios else list(rb.SCENARIOS)
    trace = for_scenarios(args.trace, bool(args.scenarios)) if "trace" in names else None
    if trace is None and "trace" in names:
        names.remove("trace")
    contenders = args.contenders.split(",")
    unknown = [c for c in contenders if c not in rb.CONTENDERS]
    if unknown:
        parser.error(f"unknown contenders {', '.join(unknown)}; known: {', '.join(rb.CONTENDERS)}")
    if "descheduler" in contenders:
        descheduler.ensure_built()
    if any(c in contenders for c in rb.KOORDS):
        koordinator.ensure_built()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    for n in names:
        if args.quick:
            rb.SCENARIOS[n] = rb.QUICK[n]
        if args.observe:
            rb.SCENARIOS[n] = replace(rb.SCENARIOS[n], observe=args.observe)
    started = time.monotonic()
    runs = []
    # Seeds whose scenario did not happen (rb.ScenarioFailed): failed runs, recorded and
    # reported, not zeros; the benchmark goes on to the next seed (53bc346's full run stopped
    # after 69 minutes on one) and exits 1 at the end.
    failed: list[dict[str, object]] = []

    def say(text: str) -> None:
        print(text, flush=True)

    # The trace: one window on every day one can start on (6 of the subset's 7), unless the
    # seeds are given; --quick's one seed is its first window.
    windows = list(range(1, trace_windows(trace) + 1)) if trace is not None else []
    if args.quick or seeds_given:
        windows = seeds
    for name in names:
        for seed in windows if name == "trace" else seeds:
            print(f"[{time.monotonic() - started:5.0f} s] {name}, seed {seed}", flush=True)
            try:
                if name == "trace":
                    run = rt.run_one(rb.SCENARIOS[name], seed, contenders, trace, say=say)
                else:
                    run = rb.run_one(rb.SCENARIOS[name], seed, contenders, say=say)
            except rb.ScenarioFailed as e:
                say(f"  FAILED RUN: {e}")
                failed.append({"scenario": name, "seed": seed, "why": str(e)})
                run = None
            if run is not None:
                runs.append(run)
            # After every run, so a run cut short still leaves what it measured.
            partial = rb.document(runs, seeds, names, contenders, round(time.monotonic() - started))
            partial["failed_runs"] = failed
            write_result(args.out, partial)
            if run is None:
                continue
            for c, r in run["contenders"].items():
                print(
                    f"    {c:<12} evictions {r['evictions']:>2}  bounced {r['bounced']:>2}"
                    f"  node-s >100% {r['node_seconds_over_100']:>4}"
                    f"  >{rb.HIGH:.0f}% {r['node_seconds_over_high']:>4}"
                    f"  hot at end {r['hot_nodes_at_end']}  cool after {r['seconds_until_cool']}"
                    f"  max unavailable {r['max_unavailable']}  lost {r['pods_lost']}",
                    flush=True,
                )
                if why := decisions.why(r.get("decisions")):
                    print(f"    {c:<12} why: {why}", flush=True)
    doc = rb.document(runs, seeds, names, contenders, round(time.monotonic() - started))
    if trace is not None:
        doc["setup"]["trace"] = rt.setup(trace, contenders)
        doc["setup"]["trace_windows"] = windows
    doc["verdicts"] = all_verdicts(runs, rb.VERDICT_MEASURES, "ballast", rb.AA)
    doc["failed_runs"] = failed
    write_result(args.out, doc)  # before the pictures: a failing plot never loses a run
    print_verdicts(doc["verdicts"])
    print(f"results: {args.out} ({doc['seconds']} s)")
    for path in plot_all(doc, args.out.parent, prefix=args.out.stem):
        print(f"plot: {path}")
    for path in rt.plot(doc, args.out.parent, prefix=args.out.stem):
        print(f"plot: {path}")
    for f in failed:
        print(f"failed run: {f['scenario']} seed {f['seed']}: {f['why']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
