"""The scheduling loop's CPU per pod without GPUs, source trees side by side (bench.loop_inprocess).

Issue 38's goal for GPU support: scheduling CPU per pod for pods without GPUs unchanged. The live
5,000-node benchmark takes a quarter of an hour and its figure moves with whatever else the
machine runs; this measures the loop thread's own CPU (process time over the loop, no
apiserver) in each tree's own code, one run after the other in turn (A, B, A, B, ...), so that
load from elsewhere falls on both alike. A variant may add arguments (`--gpu-load`: GpuLoad in
the profile, for trees that have it). Each run's placements digest is kept: equal digests mean
the trees took the very same decisions. `--module "bench.perf_inprocess topology"` measures one
of scheduler_perf's shapes instead (the filter and score passes alone; topology: a zone spread,
as the 5,000-node benchmark's `spread` workload has).

`python -m bench.loop_ab --variant before=/tmp/before --variant head=. --variant
head+gpu=.:--gpu-load --nodes 5000 --pods 1000 --rounds 4 --out bench/results/NAME.json`
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.provenance import write_result

LINE = re.compile(r"([\d.]+) ms CPU per pod(?:, \d+ preempted)?, digest (\w+)")
RUN_TIMEOUT = 1800.0  # one run at 5,000 nodes takes about a minute on 2 cores


def parse_line(text: str) -> tuple[float, str]:
    """(ms CPU per pod, digest) from bench.loop_inprocess's output; ValueError without it."""
    match = LINE.search(text)
    if match is None:
        raise ValueError(f"no 'ms CPU per pod' line in: {text[-500:]!r}")
    return float(match.group(1)), match.group(2)


def parse_variant(text: str) -> tuple[str, Path, list[str]]:
    """`name=path[:arg,arg...]` -> (name, tree, extra arguments)."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH[:ARGS], got {text!r}")
    path, _, args = rest.partition(":")
    return name, Path(path).resolve(), [a for a in args.split(",") if a]


def summarize(runs: dict[str, list[float]], baseline: str) -> dict[str, Any]:
    """Per variant: the runs, median, min, max, and the median's ratio to the baseline's."""
    base = statistics.median(runs[baseline])
    return {
        name: {
            "ms_per_pod": values,
            "median": round(statistics.median(values), 3),
            "min": min(values),
            "max": max(values),
            "vs_" + baseline: round(statistics.median(values) / base, 3),
        }
        for name, values in runs.items()
    }


def tree_commit(tree: Path) -> str | None:
    """The commit a tree has checked out (None when git cannot say)."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                              text=True, timeout=10, check=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def run_once(
    tree: Path, module: list[str], extra: list[str], nodes: int, pods: int
) -> tuple[float, str]:
    argv = [sys.executable, "-m", *module, "--nodes", str(nodes)]
    argv += ["--pods", str(pods), *extra]
    done = subprocess.run(
        argv, cwd=tree, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {' '.join(argv)} failed: {done.stderr[-1500:]}")
    return parse_line(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant",
        action="append",
        type=parse_variant,
        required=True,
        help="NAME=TREE[:ARG,...], two or more; the first is the baseline",
    )
    parser.add_argument(
        "--module",
        default="bench.loop_inprocess",
        help="what runs, with its leading arguments (default %(default)s)",
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if len(args.variant) < 2 or args.rounds < 1:
        parser.error("two variants or more, one round or more")
    module = shlex.split(args.module)
    runs: dict[str, list[float]] = {name: [] for name, _, _ in args.variant}
    digests: dict[str, set[str]] = {name: set() for name, _, _ in args.variant}
    for round_ in range(args.rounds):
        for name, tree, extra in args.variant:
            ms, digest = run_once(tree, module, extra, args.nodes, args.pods)
            runs[name].append(ms)
            digests[name].add(digest)
            print(
                f"round {round_ + 1} {name}: {ms:.3f} ms CPU per pod, digest {digest}", flush=True
            )
    baseline = args.variant[0][0]
    doc = {
        "what": f"{args.module}: CPU per pod (pods without GPUs), {args.nodes} nodes, "
        f"{args.pods} pods a run, the variants run in turn, {args.rounds} rounds",
        "module": args.module,
        "nodes": args.nodes,
        "pods": args.pods,
        "rounds": args.rounds,
        "variants": {
            name: {"tree": str(tree), "commit": tree_commit(tree), "args": extra}
            for name, tree, extra in args.variant
        },
        "results": summarize(runs, baseline),
        "digests": {name: sorted(d) for name, d in digests.items()},
        "same_decisions": len({d for ds in digests.values() for d in ds}) == 1,
    }
    write_result(args.out, doc)
    for name, result in doc["results"].items():
        print(f"{name}: median {result['median']} ms per pod ({result['vs_' + baseline]}x)")
    print(f"same decisions in every run: {doc['same_decisions']}; written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
