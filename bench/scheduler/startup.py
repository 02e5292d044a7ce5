"""`python -m bench.scheduler.startup`: the scheduler's start-up CPU, and how much of it imports.

Each figure is the CPU (user + system, from the kernel) of a fresh `ballast scheduler` process;
every version named by `--source` is measured in turn, rotated, in one run:
- imports: `ballast scheduler --config MISSING` imports what a start imports (the CLI, then the
  runtime, config, plugins and the kubernetes client) and exits at the missing file: its whole
  CPU is the interpreter's start and the imports. Under each `--bytecode` condition: `env`, this
  environment as it is (here PYTHONDONTWRITEBYTECODE=1 and an editable install, so the project's
  own modules are compiled from source at every start, site-packages and the stdlib are not);
  `cached`, every module read from bytecode compiled beforehand (a PYTHONPYCACHEPREFIX filled by
  one start); `none`, every module compiled at every start (an empty prefix), as in an image
  without .pyc files.
- start, with `--nodes N`: a fresh sandbox with N kwok nodes and no pods, then `--starts` starts
  of each version as bench/scheduler/perf.py starts Ballast (bench.harness.common.start_ballast),
  its CPU from /proc when /healthz answers, as scheduler_perf's `cpu_startup_s`; with
  `--kube-scheduler`, kube-scheduler v1.34 started as many times between them.

`--source NAME=DIR` runs the packages of DIR (through PYTHONPATH), e.g. the commit before a
change unpacked with `git archive`; `.` is this checkout. Results in `--out` (JSON): per version
and condition every sample, median, min and max.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.harness import runguard
from bench.harness.provenance import write_result

BALLAST = Path(sys.executable).with_name("ballast")
CONDITIONS = ("env", "cached", "none")


def _summary(samples: list[float]) -> dict[str, Any]:
    return {
        "median": round(statistics.median(samples), 3),
        "min": round(min(samples), 3),
        "max": round(max(samples), 3),
        "samples": [round(s, 3) for s in samples],
    }


def child_env(source: Path, bytecode: str, prefixes: dict[str, Path]) -> dict[str, str]:
    env = dict(os.environ)
    if source.resolve() != Path.cwd().resolve():
        env["PYTHONPATH"] = str(source)
    if bytecode == "cached":
        env["PYTHONPYCACHEPREFIX"] = str(prefixes["cached"])
    elif bytecode == "none":
        env["PYTHONPYCACHEPREFIX"] = str(prefixes["none"])  # stays empty
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def imports_cpu(env: dict[str, str]) -> float:
    """CPU seconds of one `ballast scheduler` that imports everything and stops."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [str(BALLAST), "scheduler", "--config", "/nonexistent/ballast.yaml"],
        env=env,
        capture_output=True,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 2 or b"bad config" not in proc.stderr:
        raise RuntimeError(f"unexpected exit {proc.returncode}: {proc.stderr[-500:]!r}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def precompile(sources: dict[str, Path], prefixes: dict[str, Path]) -> None:
    """Fill the `cached` prefix: one start per version writes the bytecode of all it imports."""
    for source in sources.values():
        env = child_env(source, "cached", prefixes)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        imports_cpu(env)


@contextmanager
def environ(env: dict[str, str]) -> Iterator[None]:
    """start_ballast spawns with this process's environment."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def measure_starts(
    args: argparse.Namespace, sources: dict[str, Path], prefixes: dict[str, Path]
) -> dict[str, Any]:
    from bench.harness.common import make_nodes, start_ballast, start_kube_scheduler, start_sandbox

    work, plane, api = start_sandbox("ballast-startup-")
    samples: dict[str, list[float]] = {}
    try:
        make_nodes(api, args.nodes)
        names = [*sources, *(["kube-scheduler"] if args.kube_scheduler else [])]
        for r in range(args.starts):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                for bytecode in args.bytecode if name in sources else ["-"]:
                    if name in sources:
                        with environ(child_env(sources[name], bytecode, prefixes)):
                            contender = start_ballast(plane, work)
                    else:
                        contender = start_kube_scheduler(plane, work)
                    cpu = contender.cpu()
                    contender.stop()
                    key = name if bytecode == "-" else f"{name}/{bytecode}"
                    samples.setdefault(key, []).append(cpu or 0.0)
                    print(f"start {r + 1} {key}: {cpu:.2f} s CPU to /healthz", flush=True)
    finally:
        plane.stop()
    return {key: _summary(values) for key, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--bytecode", nargs="+", choices=CONDITIONS, default=["env"])
    parser.add_argument("--runs", type=int, default=7, help="import runs per version/condition")
    parser.add_argument("--nodes", type=int, default=0, help="kwok nodes (0: imports only)")
    parser.add_argument("--starts", type=int, default=3, help="starts per version")
    parser.add_argument("--kube-scheduler", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("bench/results/scheduler-startup.json"))
    parser.add_argument("--note", default="", help="what the versions are, for the JSON")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    runguard.start_run(parser, args.allow_dirty)
    sources = dict(s.split("=", 1) for s in args.source or ["current=."])
    paths = {name: Path(d) for name, d in sources.items()}
    with tempfile.TemporaryDirectory(prefix="ballast-pyc-") as tmp:
        prefixes = {"cached": Path(tmp) / "cached", "none": Path(tmp) / "none"}
        prefixes["none"].mkdir()
        if "cached" in args.bytecode:
            precompile(paths, prefixes)
        imports: dict[str, list[float]] = {}
        for i in range(args.runs):
            for name in list(paths)[i % len(paths) :] + list(paths)[: i % len(paths)]:
                for bytecode in args.bytecode:
                    cpu = imports_cpu(child_env(paths[name], bytecode, prefixes))
                    imports.setdefault(f"{name}/{bytecode}", []).append(cpu)
        for key, values in imports.items():
            print(f"imports {key}: median {statistics.median(values):.3f} s CPU", flush=True)
        result: dict[str, Any] = {
            "benchmark": "scheduler-startup",
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average": os.getloadavg(),
            "sources": sources,
            "note": args.note,
            "imports_cpu_s": {key: _summary(values) for key, values in imports.items()},
        }
        if args.nodes:
            result["nodes"] = args.nodes
            result["startup_cpu_s"] = measure_starts(args, paths, prefixes)
    write_result(args.out, result)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
