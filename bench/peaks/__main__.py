"""`python -m bench.peaks`: the study's command line (what it runs and scores: run.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import provenance, runguard
from bench.peaks import run, study
from sandbox.load import trace as trace_mod

DEFAULT_OUT = provenance.REPO / provenance.RESULTS / "peaks.json"


def command_line() -> argparse.ArgumentParser:
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
    p.add_argument("--table", type=Path, help="print the markdown table of a result and exit")
    p.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[1, 2, 3],
        help="replica counts, noise, placement order per seed (default 1 2 3)",
    )
    runguard.add_options(p)
    return p


def parse_args(
    argv: list[str] | None = None, p: argparse.ArgumentParser | None = None
) -> argparse.Namespace:
    p = p or command_line()
    args = p.parse_args(argv)
    if args.every < 1:
        p.error("--every must be at least 1")
    if args.node_requests <= 0:
        p.error("--node-requests must be > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = command_line()
    args = parse_args(argv, parser)
    if args.table:
        print(run.table_text(json.loads(args.table.read_text())))
        return 0
    runguard.start_run(parser, args.allow_dirty)
    started = time.monotonic()
    cpu_started = time.process_time()
    try:
        trace = trace_mod.load(args.trace)
    except trace_mod.TraceError as exc:
        print(f"bench.peaks: {exc}", file=sys.stderr)
        return 2
    print(f"trace: {len(trace.vms)} VMs x {trace.days:.1f} days from {trace.source}")
    metrics, facts = run.collect(trace, args.seeds, args.every, args.node_requests, print)
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
            "max_violations": run.MAX_VIOLATIONS,
            **facts,
        },
        "chosen": run.chosen(metrics, None),
        "chosen_pod_sum": run.chosen(metrics, study.POD_SUM_FAMILIES),
        "chosen_paper": run.chosen(metrics, study.PAPER_FAMILIES),
        "recommended": {
            "predictor": run.RECOMMENDED,
            "by_rule": {
                rule: {h: metrics[rule][run.RECOMMENDED][h] for h in study.HORIZONS}
                for rule in study.RULES
            },
        },
        "summary": run.summarise(metrics, facts.pop("oracle_savings")),
        "metrics": metrics,
    }
    path = provenance.write_result(args.out, doc)
    print(f"wrote {path} in {doc['seconds']} s")
    print(run.table_text(doc))
    from bench.peaks import plot  # matplotlib only once the numbers are safe

    print(f"plot: {plot.draw(doc, args.out.with_suffix('.png'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
