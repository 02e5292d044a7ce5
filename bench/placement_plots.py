"""The placement benchmark's pictures: one PNG per scenario, made with matplotlib.

Left: final node CPU % (true demand) of every node of every seed, per scheduler, as a box with
the nodes as dots, and the target line. Right: the hottest node's CPU % each second after the
first wave, per scheduler (median over seeds, the band spans min..max), the hot spot forming or
not. `pip install -e '.[bench]'` brings matplotlib; `make bench-placement` does it.
"""

from __future__ import annotations

import random
import statistics
from pathlib import Path
from typing import Any

COLORS = {
    "ballast-tlp": "#1b7837",
    "ballast-lvrb": "#5aae61",
    "ballast-tlp-always": "#762a83",
    "ballast-lvrb-always": "#af8dc3",
    "trimaran-tlp": "#c51b7d",
    "trimaran-lvrb": "#e9a3c9",
    "kube-scheduler": "#4575b4",
    "koordinator": "#e08214",
    "koordinator-agg": "#fdb863",
}


def plot_all(doc: dict[str, Any], folder: Path, prefix: str = "placement") -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a CI machine
    paths = []
    scenarios = list(dict.fromkeys(run["scenario"] for run in doc["runs"]))
    for scenario in scenarios:
        runs = [r for r in doc["runs"] if r["scenario"] == scenario]
        path = folder / f"{prefix}-{scenario}.png"
        _plot_scenario(scenario, doc["setup"], runs, path)
        paths.append(path)
    return paths


def _plot_scenario(scenario: str, setup: dict[str, Any], runs: list[dict], path: Path) -> None:
    import matplotlib.pyplot as plt

    contenders = [c for c in setup["contenders"] if c in runs[0]["contenders"]]
    target = setup["target"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), width_ratios=(1, 1.3))
    finals = [[x for r in runs for x in r["contenders"][c]["final_cpu"]] for c in contenders]
    left.boxplot(finals, showfliers=False, widths=0.55)
    jitter = random.Random(0)
    for i, (c, values) in enumerate(zip(contenders, finals, strict=True), start=1):
        xs = [i + jitter.uniform(-0.18, 0.18) for _ in values]
        left.scatter(xs, values, s=7, alpha=0.45, color=COLORS.get(c, "grey"), zorder=3)
    for level, style, label in ((target, "--", f"target {target} %"), (100, ":", "100 %")):
        left.axhline(level, color="black", linestyle=style, linewidth=1, label=label)
    left.set_xticks(range(1, len(contenders) + 1), [_short(c) for c in contenders])
    left.set_ylabel("node CPU % (true demand, after settling)")
    left.set_title("final node CPU, every node of every seed")
    left.legend(loc="upper left", fontsize=8)

    for c in contenders:
        series = [r["contenders"][c]["max_cpu_over_time"] for r in runs]
        length = min(len(s) for s in series)
        median = [statistics.median(s[t] for s in series) for t in range(length)]
        low = [min(s[t] for s in series) for t in range(length)]
        high = [max(s[t] for s in series) for t in range(length)]
        color = COLORS.get(c, "grey")
        right.plot(range(length), median, color=color, label=_short(c), linewidth=1.8)
        if len(series) > 1:
            right.fill_between(range(length), low, high, color=color, alpha=0.12)
    right.axhline(100, color="black", linestyle=":", linewidth=1)
    right.axhline(target, color="black", linestyle="--", linewidth=1)
    right.set_xlabel("seconds after the first pods were created")
    right.set_ylabel("hottest node CPU %")
    seeds = len(runs)
    right.set_title(f"hottest node over time ({'median of ' if seeds > 1 else ''}{seeds} seed(s))")
    right.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"{scenario}: {setup['scenarios'].get(scenario, '')}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _short(contender: str) -> str:
    return {
        "ballast-tlp": "Ballast\nTLP",
        "ballast-lvrb": "Ballast\nLVRB",
        "trimaran-tlp": "Trimaran\nTLP",
        "trimaran-lvrb": "Trimaran\nLVRB",
        "kube-scheduler": "kube-\nscheduler",
    }.get(contender, contender)
