"""The study's picture: violation rate against savings per predictor, one panel per horizon,
under first-fit placement; the 1 % line, the best of the paper's set and the chosen predictor
marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.peaks import study  # noqa: E402

COLOURS = {
    "requests": "black",
    "window-mean": "tab:gray",
    "node-percentile": "tab:brown",
    "node-peaks": "tab:pink",
    "n-sigma": "tab:blue",
    "rc-like": "tab:orange",
    "max(n-sigma, rc-like)": "tab:purple",
    "workload-sigma": "tab:green",
    "pod-sigma": "tab:olive",
    "rc-peaks": "tab:red",
    "workload-excess": "tab:cyan",
    "max(rc-like, node-peak)": "gold",
    "recommended, one pod new": "black",
    "workload-excess-peaks": "darkcyan",
}


def mark(ax: Any, score: dict[str, float], **style: Any) -> None:
    ax.scatter([100 * score["violations"]], [100 * score["savings"]], **style)


def draw(doc: dict[str, Any], path: Path, rule: str = "first-fit") -> Path:
    metrics = doc["metrics"][rule]
    horizons = list(study.HORIZONS)
    fig, grid = plt.subplots(2, 2, figsize=(12, 10), sharey=True)
    axes = list(grid.flat)
    chosen = (doc.get("chosen") or {}).get("predictor")
    paper_pick = (doc.get("chosen_paper") or {}).get("predictor")
    recommended = (doc.get("recommended") or {}).get("predictor")
    for ax, h in zip(axes, horizons, strict=True):
        for family, colour in COLOURS.items():
            pts = [
                (100 * m[h]["all"]["violations"], 100 * m[h]["all"]["savings"])
                for name, m in metrics.items()
                if study.family_of(name) == family
            ]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.scatter(xs, ys, s=12, color=colour, label=family, alpha=0.75)
        ax.axvline(100 * doc["setup"]["max_violations"], color="red", lw=0.8, ls="--")
        paper = doc["summary"][rule][h]["best_paper"]
        if paper:
            mark(ax, paper, s=90, facecolors="none", edgecolors="purple", linewidths=1.5)
        if paper_pick:
            mark(ax, metrics[paper_pick][h]["all"], s=70, marker="D", facecolors="none",
                 edgecolors="black", label=f"paper's, one for all: {paper_pick}")  # fmt: skip
        if recommended:
            mark(ax, metrics[recommended][h]["all"], s=110, marker="P", color="black",
                 label=f"recommended: {recommended}")  # fmt: skip
        if chosen:
            mark(ax, metrics[chosen][h]["all"], s=140, marker="*", color="red",
                 label=f"chosen: {chosen}")  # fmt: skip
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(0, 100)
        # requests (0 violations, 0 savings) sit below: the chart shows where predictors differ
        ax.set_ylim(50, 95)
        ax.set_title(f"horizon {h}")
        ax.set_xlabel("violations, % of node-times (symlog)")
        ax.grid(alpha=0.3)
    for ax in axes[::2]:
        ax.set_ylabel("savings, % of the node's requests")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle(
        f"Peak predictors on the Bitbrains trace, {rule} placement\n(circle: the paper's set's "
        "best at <= 1 % at that horizon; dashed: 1 % violations; requests: 0 / 0, below)"
    )
    fig.tight_layout(rect=(0, 0.1, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
