"""The rebalancing benchmark's pictures: one PNG per scenario (matplotlib).

One panel per contender: the hottest node's true CPU % each second (one line per seed), the
high threshold and 100 %, the moment of the change, and a tick at the bottom for every
eviction. `pip install -e '.[bench]'` brings matplotlib; `make bench-rebalance` does it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.harness.common import color_of, draw_scenarios, new_figure, save


def plot_all(doc: dict[str, Any], folder: Path, prefix: str = "rebalance") -> list[Path]:
    return draw_scenarios(doc, folder, prefix, _plot)


def _plot(scenario: str, setup: dict[str, Any], runs: list[dict], path: Path) -> Path:
    contenders = [c for c in setup["contenders"] if c in runs[0]["contenders"]]
    fig, axes = new_figure(5 * len(contenders), 4, ncols=len(contenders), sharey=True)
    axes = list(axes) if len(contenders) > 1 else [axes]
    for ax, c in zip(axes, contenders, strict=True):
        color = color_of(c)
        for i, run in enumerate(runs):
            r = run["contenders"][c]
            xs = [t for t, _ in r["hottest_over_time"]]
            ys = [y for _, y in r["hottest_over_time"]]
            ax.plot(xs, ys, color=color, alpha=0.9 if i == 0 else 0.45, linewidth=1.2,
                    label=f"seed {run['seed']}")  # fmt: skip
            marks = r["eviction_times"]
            ax.scatter(marks, [2 + 3 * i] * len(marks), marker="|", s=80, color=color)
        ax.axhline(setup["high"], color="black", linestyle="--", linewidth=1, label="high")
        ax.axhline(100, color="black", linestyle=":", linewidth=1, label="100 %")
        ax.axvline(0, color="grey", linewidth=1)
        ax.set_title(f"{c}: {sum(len(r['contenders'][c]['eviction_times']) for r in runs)} "
                     "evictions (ticks)", fontsize=10)  # fmt: skip
        ax.set_xlabel("seconds after the change")
        ax.set_ylim(0, max(130, ax.get_ylim()[1]))
    axes[0].set_ylabel("hottest node CPU % (true demand)")
    axes[0].legend(loc="upper left", fontsize=7)
    return save(fig, path, None, f"rebalance, {scenario}: {setup['scenarios'][scenario]}")
