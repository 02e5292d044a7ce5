"""CPU per preempting pod, round by round, from bench.scheduler.perf result files: one group of
bars per run, Ballast stacked by thread where the run recorded it, kube-scheduler beside it.

`python -m bench.scheduler.preemption_plot --out FILE.png LABEL=RESULT.json ...` (the
PreemptionAsync workload of each file; matplotlib, `pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.harness.common import new_figure, save

WORKLOAD = "PreemptionAsync"
# Ballast's threads in the order they are stacked; the rest go to "other"
THREADS = ("scheduling-loop", "reflector-pods", "preempt-victim", "preempt", "events", "bind")


def rounds_of(doc: dict[str, Any]) -> list[dict[str, dict[str, Any]]]:
    """Per round, contender -> its preemption figures (rounds without them left out)."""
    for workload in doc.get("workloads", []):
        if workload.get("case", "").startswith(WORKLOAD) or workload.get("name") == WORKLOAD:
            out = []
            for one in workload.get("per_round", []):
                figures = {
                    name: run["preemption"]
                    for name, run in one.items()
                    if isinstance(run, dict) and isinstance(run.get("preemption"), dict)
                }
                if "ballast" in figures and "kube-scheduler" in figures:
                    out.append(figures)
            return out
    return []


def split(figures: dict[str, Any]) -> dict[str, float]:
    """Ballast's CPU per preemptor by thread (THREADS, then "other"); all "other" when the run
    did not record threads (runs before 24d1015 recorded them only under --profile)."""
    total = float(figures.get("cpu_ms_per_preemptor") or 0.0)
    by_thread = figures.get("cpu_ms_per_preemptor_by_thread") or {}
    parts = {name: float(by_thread.get(name, 0.0)) for name in THREADS}
    parts["other"] = max(0.0, total - sum(parts.values()))
    return parts


def plot(runs: list[tuple[str, dict[str, Any]]], out: Path) -> Path:
    fig, ax = new_figure(15, 5.5)
    x, ticks, labels, groups = 0.0, [], [], []
    legend_done = False
    colours = [f"C{j}" for j in range(10)]  # matplotlib's default cycle, tab10
    for label, doc in runs:
        first = x
        for i, figures in enumerate(rounds_of(doc)):
            bottom = 0.0
            for j, (name, value) in enumerate(split(figures["ballast"]).items()):
                ax.bar(
                    x,
                    value,
                    0.4,
                    bottom=bottom,
                    color=colours[j % 10],
                    label=None if legend_done else f"Ballast: {name}",
                )
                bottom += value
            kube = float(figures["kube-scheduler"].get("cpu_ms_per_preemptor") or 0.0)
            ax.bar(
                x + 0.42,
                kube,
                0.4,
                color="0.55",
                label=None if legend_done else "kube-scheduler v1.34",
            )
            legend_done = True
            ticks.append(x + 0.21)
            labels.append(f"r{i + 1}")
            x += 1.2
        groups.append(((first + x - 1.2) / 2 + 0.21, label))
        x += 0.6
    ax.set_xticks(ticks, labels, fontsize=8)
    for centre, label in groups:  # the run under its rounds
        ax.annotate(
            label,
            (centre, 0),
            xycoords=("data", "axes fraction"),
            xytext=(0, -24),
            textcoords="offset points",
            ha="center",
            fontsize=9,
        )
    ax.set_ylabel("CPU ms per preempting pod")
    ax.set_title(
        f"{WORKLOAD}, 500 nodes: CPU per preempting pod, Ballast (by thread) and "
        "kube-scheduler, round by round"
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, out, legend=None, dpi=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="LABEL=RESULT.json, in the order to draw")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    runs = []
    for item in args.runs:
        label, _, path = item.partition("=")
        if not path:
            parser.error(f"{item!r}: want LABEL=RESULT.json")
        runs.append((label, json.loads(Path(path).read_text())))
    print(plot(runs, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
