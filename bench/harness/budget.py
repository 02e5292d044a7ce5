"""What a benchmark run costs in wall time, added up from its shapes before it is measured.

Each family sums its scenarios from its own constants and the parts its stack takes, measured on
the 2-core machine (bench.placement.budget, bench.rebalance.budget; docs/benchmarks.md says where
each figure was measured). This module holds what they share: the budget of a `--quick` run, the
part every command pays in a fresh clone, and the table that `--help` and the docs print.
"""

from __future__ import annotations

from dataclasses import dataclass

QUICK_BUDGET = 15 * 60.0  # seconds: a `--quick` run of each benchmark, make included
# `make venv` and the bench extra, pip's cache warm: paid by the first target in a fresh clone.
FRESH_VENV = 61.0


@dataclass(frozen=True)
class Part:
    """One line of an estimate: a scenario's runs, or a part of the command around them."""

    what: str
    seconds: float
    how: str  # the sum, in words and seconds


def total(parts: list[Part]) -> float:
    return sum(p.seconds for p in parts)


def table(parts: list[Part], budget: float = QUICK_BUDGET) -> str:
    """A Markdown table of the parts and their total against the budget (est. throughout)."""
    rows = ["| part | estimated | from |", "| --- | --- | --- |"]
    rows += [f"| {p.what} | {p.seconds:.0f} s | {p.how} |" for p in parts]
    sum_ = total(parts)
    rows.append(f"| total | {sum_:.0f} s ({sum_ / 60:.1f} min) | budget {budget / 60:g} min |")
    return "\n".join(rows) + "\n"


def seconds(value: float) -> str:
    """A figure of a `how`: whole seconds, one decimal under ten."""
    return f"{value:.1f}" if 0 < value < 10 else f"{value:.0f}"
