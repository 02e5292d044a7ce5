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

from bench.harness.common import color_of, draw_scenarios, new_figure, save


def plot_all(doc: dict[str, Any], folder: Path, prefix: str = "placement") -> list[Path]:
    return draw_scenarios(doc, folder, prefix, _plot_scenario)


def _plot_scenario(scenario: str, setup: dict[str, Any], runs: list[dict], path: Path) -> Path:
    contenders = [c for c in setup["contenders"] if c in runs[0]["contenders"]]
    target = setup["target"]
    fig, (left, right) = new_figure(13, 4.8, ncols=2, width_ratios=(1, 1.3))
    finals = [[x for r in runs for x in r["contenders"][c]["final_cpu"]] for c in contenders]
    left.boxplot(finals, showfliers=False, widths=0.55)
    jitter = random.Random(0)
    for i, (c, values) in enumerate(zip(contenders, finals, strict=True), start=1):
        xs = [i + jitter.uniform(-0.18, 0.18) for _ in values]
        left.scatter(xs, values, s=7, alpha=0.45, color=color_of(c), zorder=3)
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
        color = color_of(c)
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
    return save(fig, path, None, f"{scenario}: {setup['scenarios'].get(scenario, '')}")


def _short(contender: str) -> str:
    return {
        "ballast-tlp": "Ballast\nTLP",
        "ballast-lvrb": "Ballast\nLVRB",
        "trimaran-tlp": "Trimaran\nTLP",
        "trimaran-lvrb": "Trimaran\nLVRB",
        "kube-scheduler": "kube-\nscheduler",
    }.get(contender, contender)
