"""What `python -m bench.rebalance` costs in wall time, quick and full, from its shapes.

One seed of a synthetic scenario: the stack's start and stop, the paired placement (the first
pool placed by Ballast's scheduler, every other pool bound to the same node indexes), then the
scenario's own settle, its rounds before the change and its observation. The trace scenario:
the same, its placement longer (a pool is the trace's Deployments, more pods than the synthetic
pools' 24, created by their controllers), and no rounds before the replay. The stack's and the
placement's figures are measured on the 2-core machine (docs/benchmarks.md says where); the rest
are the scenarios' constants.
"""

from __future__ import annotations

from collections.abc import Mapping

from bench.harness import budget
from bench.harness.budget import Part, seconds
from bench.rebalance import run as rb

STACK = 13.0  # s: the sandbox with its controllers, Prometheus, the watcher, the scheduler
STACK_PER_POOL = 2.0  # s a pool: its nodes, its rebalancer started and stopped
PLACE_PER_POOL = 3.6  # s a pool of the synthetic scenarios' Deployments
PLACE_TRACE_PER_POOL = 20.0  # s a pool of the trace's Deployments
COMMAND = 20.0  # s: make with the peers built, the interpreter, the trace read, the pictures
# Issue 44: the full run within 150 minutes on 2 cores; its shapes are cut to about 130 by this
# arithmetic with seven pools, 133 with koord-descheduler-migration's eighth; the rest (at
# least 15 minutes, a tenth of the budget) a margin for a loaded machine.
FULL_BUDGET = 150 * 60.0
FULL_TARGET = 135 * 60.0
# The trace subset's days a window can start on (sandbox.load.trace_player.windows: 7 days, the
# first one what comes before every window).
TRACE_WINDOWS = 6


def seed_seconds(scenario: rb.Scenario, pools: int) -> tuple[float, str]:
    """One seed of a scenario: (seconds, the sum in words)."""
    trace = scenario.name == "trace"
    parts = {
        "stack": STACK + STACK_PER_POOL * pools,
        "placement": (PLACE_TRACE_PER_POOL if trace else PLACE_PER_POOL) * pools,
        "settle": scenario.settle,
        "before": 0.0 if trace else scenario.before,
        "observe": scenario.observe,
    }
    return sum(parts.values()), " + ".join(f"{k} {seconds(v)}" for k, v in parts.items() if v)


def estimate(
    shapes: Mapping[str, rb.Scenario],
    pools: int,
    seeds: int = 1,
    windows: int = 1,
    fresh_clone: bool = True,
) -> list[Part]:
    """Every scenario's runs and the command around them."""
    parts = []
    for name, scenario in shapes.items():
        each, how = seed_seconds(scenario, pools)
        runs = windows if name == "trace" else seeds
        parts.append(Part(name, runs * each, how if runs == 1 else f"{runs} x ({how})"))
    parts.append(Part("the command", COMMAND, "make (peers built), trace read, pictures"))
    if fresh_clone:
        parts.append(Part("the venv", budget.FRESH_VENV, "a fresh clone's first target"))
    return parts


def quick() -> list[Part]:
    """`--quick` with its own contenders, in a fresh clone."""
    return estimate(rb.QUICK, len(rb.QUICK_CONTENDERS))


def full() -> list[Part]:
    """The full run: every scenario's seeds, the trace's windows, the default contenders."""
    return estimate(
        rb.SCENARIOS, len(rb.DEFAULT_CONTENDERS), seeds=len(rb.SEEDS), windows=TRACE_WINDOWS
    )


def help_text() -> str:
    """What `--help` prints below the options."""
    return (
        "--quick, estimated from its shapes before it is measured (seconds; docs/benchmarks.md):\n"
        + budget.table(quick())
        + "\nThe full run, estimated the same way:\n"
        + budget.table(full(), FULL_BUDGET)
    )
