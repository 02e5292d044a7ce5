"""`--quick` of both benchmarks: every scenario in a shorter shape that keeps what it is about,
while the full runs' shapes stay exactly what main's full runs measured (the rebalancing run's
as issue 44's 150-minute budget cut them)."""

from __future__ import annotations

import re
from dataclasses import astuple, replace
from pathlib import Path

from bench.harness import budget
from bench.placement import budget as placement_budget
from bench.placement import run as pl
from bench.placement import trace as pt
from bench.rebalance import budget as rebalance_budget
from bench.rebalance import run as rb
from sandbox.load.simulator import SimulatorConfig

ROOT = Path(__file__).resolve().parents[2]


def test_the_full_shapes_are_unchanged() -> None:
    # (waves, per_wave, gap, node_cpus, hot_fraction, misleading, deployments, idle)
    assert {n: astuple(s)[2:] for n, s in pl.SCENARIOS.items()} == {
        "steady": (4, 50, 20.0, (4,), 0.0, False, 0, False),
        "burst": (1, 200, 20.0, (4,), 0.0, False, 0, False),
        "heterogeneous": (4, 50, 20.0, (2, 4, 8, 16), 0.0, False, 0, False),
        "misleading": (4, 35, 20.0, (4,), 0.0, True, 0, False),
        "learnable": (4, 32, 40.0, (4,), 0.0, True, 16, False),
        "hot-nodes": (4, 50, 20.0, (4,), 0.2, False, 0, False),
        "idle-scale-out": (2, 12, 40.0, (4,), 0.0, False, 1, True),
        "trace": (4, 50, 20.0, (4,), 0.0, False, 0, False),
    }
    assert pl.SCENARIOS["steady"].about == "4 waves of 50 pods, 20 s apart, 4-CPU nodes"
    assert (pl.NODES_PER_POOL, pl.SEEDS, pl.RAMP_SECONDS) == (50, (1, 2, 3, 4, 5), 10.0)
    assert (pl.BIND_DEADLINE, pl.BIND_QUIET) == (90.0, 30.0)
    assert list(pl.CONTENDERS) == [
        "ballast-tlp", "ballast-lvrb", "trimaran-tlp", "trimaran-lvrb", "kube-scheduler",
        "koordinator", "koordinator-agg", "ballast-lvrb-aa", "ballast-peak", "ballast-peak-recent",
    ]  # fmt: skip
    assert pt.FULL == pt.Shape(waves=4, gap=30.0, after=120.0) and pt.FULL.length == 210.0
    assert (pt.NODES, pt.NODE_CPU, pt.FILL, pt.PLAYER.step_seconds) == (10, 4, 0.9, 5.0)
    # stable 600 s and the trace's settle 45 s until issue 44's budget (docs/rebalancer.md)
    assert {n: (s.observe, s.settle, s.before) for n, s in rb.SCENARIOS.items()} == {
        "drift": (180.0, 45.0, 30.0),
        "hot-start": (180.0, 45.0, 30.0),
        "stable": (150.0, 45.0, 30.0),
        "trace": (360.0, 13.0, 30.0),
    }
    # eight pools since koord-descheduler-migration joined the full run
    assert rb.SEEDS == (1, 2, 3, 4, 5) and len(rb.DEFAULT_CONTENDERS) == 8
    assert rebalance_budget.TRACE_WINDOWS == 6


def test_quick_covers_every_scenario_with_every_pair_the_goals_compare() -> None:
    assert list(pl.QUICK) == list(pl.SCENARIOS)
    assert set(pl.QUICK_CONTENDERS) < set(pl.CONTENDERS)
    paired = {*pl.COUNTERPART, *pl.COUNTERPART.values(), "kube-scheduler", "koordinator"}
    assert paired | {pl.DEFAULT_PROFILE, pl.AA} <= set(pl.QUICK_CONTENDERS)


def test_quick_brings_the_full_runs_pods_in_fewer_waves_at_the_same_gaps() -> None:
    for name, quick in pl.QUICK.items():
        full = pl.SCENARIOS[name]
        if name == "trace":  # its own shape: bench.placement.trace.QUICK
            continue
        for waves, pods in re.findall(r"(\d+) waves of (\d+) pods", quick.about):
            assert (int(waves), int(pods)) == (quick.waves, quick.per_wave)
        assert quick.waves * quick.per_wave == full.waves * full.per_wave
        assert (quick.gap, quick.node_cpus, quick.hot_fraction) == (
            full.gap, full.node_cpus, full.hot_fraction
        )  # fmt: skip
        assert (quick.misleading, quick.deployments, quick.idle) == (
            full.misleading, full.deployments, full.idle
        )  # fmt: skip
        # the same nodes and pods as the full run's seed; more than one wave where it had more
        assert pl.plan(quick, 1, pl.NODES_PER_POOL) == pl.plan(full, 1, pl.NODES_PER_POOL)
        assert quick.waves >= min(2, full.waves) and quick.waves <= full.waves
        if quick.deployments:  # every wave holds replicas of every Deployment
            assert quick.per_wave % quick.deployments == 0


def test_the_quick_trace_window_is_shorter_at_the_same_speed() -> None:
    assert pt.QUICK.length < pt.FULL.length and pt.QUICK.waves >= pt.MAX_REPLICAS
    steps = pt.QUICK.length / pt.PLAYER.step_seconds  # one every STEP_WALL s, as in the full run
    minutes = f"{steps * 5:g} trace minutes"
    assert (
        f"{pt.QUICK.waves} waves" in pl.QUICK["trace"].about and minutes in pl.QUICK["trace"].about
    )


def test_a_result_says_which_window_it_played() -> None:
    written = {"waves": 3, "gap_seconds": 20.0, "after_seconds": 40.0}
    assert pt.shape_of({"setup": {"trace": written}}) == pt.QUICK
    assert pt.shape_of({"setup": {}}) == pt.FULL  # written before the shape was recorded


def test_quick_placement_is_estimated_within_15_minutes_even_if_every_seed_waits() -> None:
    parts = placement_budget.quick()
    assert [p.what for p in parts[: len(pl.QUICK)]] == list(pl.QUICK)
    assert budget.total(parts) < budget.QUICK_BUDGET
    # every synthetic seed waiting out BIND_QUIET, the venv made too: still within the budget
    assert budget.total(placement_budget.every_seed_pending()) < budget.QUICK_BUDGET


def test_the_full_placement_is_estimated_within_its_budget_with_a_margin() -> None:
    # ten pools since ballast-peak-recent joined (issue 45): one more pool than the 105 measured
    # minutes at 9ba285c had, still under the 112 that would have meant replacing ballast-peak
    parts = placement_budget.full()
    assert [p.what for p in parts[: len(pl.SCENARIOS)]] == list(pl.SCENARIOS)
    total = budget.total(parts)
    assert total <= placement_budget.FULL_TARGET < placement_budget.FULL_BUDGET == 120 * 60.0
    runs = {p.what: p.how.split(" x ")[0] for p in parts[: len(pl.SCENARIOS)]}
    assert set(runs.values()) == {"5", "6"} and runs["trace"] == "6"
    # every seed of the scenarios Koordinator's p95 mode left pods pending in waits them out
    assert all("wait (a pod pending)" in parts[i].how for i, n in enumerate(pl.SCENARIOS)
               if n in placement_budget.FULL_PENDING)  # fmt: skip
    assert set(placement_budget.FULL_PENDING) == set(pl.SCENARIOS) - {"trace", "heterogeneous"}


def test_quick_rebalance_is_estimated_within_15_minutes() -> None:
    parts = rebalance_budget.quick()
    assert [p.what for p in parts[: len(rb.QUICK)]] == list(rb.SCENARIOS)
    assert budget.total(parts) < budget.QUICK_BUDGET


def test_the_full_rebalance_is_estimated_within_its_budget_with_a_margin() -> None:
    parts = rebalance_budget.full()
    assert [p.what for p in parts[: len(rb.SCENARIOS)]] == list(rb.SCENARIOS)
    assert budget.total(parts) <= rebalance_budget.FULL_TARGET < rebalance_budget.FULL_BUDGET
    assert rebalance_budget.FULL_BUDGET == 150 * 60.0  # issue 44's "Done when"
    # every seed of every synthetic scenario and every window of the trace is counted
    runs = {p.what: p.how.split(" x ")[0] for p in parts[: len(rb.SCENARIOS)]}
    assert runs == {"drift": "5", "hot-start": "5", "stable": "5", "trace": "6"}


def test_the_trace_settles_until_every_rebalancer_reads_ramped_load() -> None:
    # the ramp, then the watcher's window over its rate range (the longest look-back read)
    assert rb.SCENARIOS["trace"].settle == 5.0 + 3.0 + 5.0 == rb.trace_settle()
    assert rb.trace_settle() < rb.SETTLE_SECONDS


def test_the_synthetic_times_hold_what_the_scenarios_test() -> None:
    # docs/rebalancer.md, "Why these times": the watcher's window holds only ramped load when
    # drift and hot-start change, and stable's rebalancers see two wobble periods and a 3-round
    # streak of steady inputs
    ramped = rb.RAMP_SECONDS + float(rb.WATCHER_ENV["BALLAST_WINDOW"])
    for name in ("drift", "hot-start"):
        assert rb.SCENARIOS[name].settle + rb.SCENARIOS[name].before >= ramped
    stable = rb.SCENARIOS["stable"]
    steady = stable.settle + stable.before + stable.observe - ramped
    assert steady >= 2 * SimulatorConfig().wobble_period + 3 * rb.INTERVAL


def test_a_rebalance_result_records_each_scenarios_times() -> None:
    # what a figure means depends on them (stable's evictions are per 180 s of rounds since
    # issue 44's budget), so the setup carries them beside the figures
    setup = rb.document([], [1], list(rb.SCENARIOS), ["none"], 0)["setup"]
    assert setup["observe_seconds"] == {n: s.observe for n, s in rb.SCENARIOS.items()}
    assert setup["settle_seconds"] == {n: s.settle for n, s in rb.SCENARIOS.items()}
    # the trace has no rounds before its replay
    assert setup["before_seconds"] == {n: s.before for n, s in rb.SCENARIOS.items() if n != "trace"}


def test_the_estimates_follow_the_shapes() -> None:
    steady, n = pl.QUICK["steady"], len(pl.QUICK_CONTENDERS)
    base, how = placement_budget.seed_seconds(steady, n, pending=False)
    longer, _ = placement_budget.seed_seconds(replace(steady, gap=40.0), n, pending=False)
    waiting, _ = placement_budget.seed_seconds(steady, n, pending=True)
    assert longer - base == (steady.waves - 1) * 20.0 and "waves 20" in how
    assert waiting - base == pl.BIND_QUIET - (pl.RAMP_SECONDS + 1)
    full, _ = placement_budget.window_seconds(pt.FULL, n)
    quick, _ = placement_budget.window_seconds(pt.QUICK, n)
    saved = (pt.FULL.length - pt.QUICK.length) * (1 + placement_budget.MEASURE_TRACE)
    assert abs(full - quick - saved) < 1e-9
    drift, pools = rb.QUICK["drift"], len(rb.QUICK_CONTENDERS)
    a, _ = rebalance_budget.seed_seconds(drift, pools)
    b, _ = rebalance_budget.seed_seconds(replace(drift, observe=drift.observe + 20), pools)
    assert b - a == 20.0


def test_the_docs_and_help_give_the_estimates_the_code_makes() -> None:
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    placement, rebalance = placement_budget.quick(), rebalance_budget.quick()
    for parts, module in ((placement, placement_budget), (rebalance, rebalance_budget)):
        assert budget.table(parts) in docs and budget.table(parts) in module.help_text()
    full = budget.table(rebalance_budget.full(), rebalance_budget.FULL_BUDGET)
    assert full in docs and full in rebalance_budget.help_text()
    full = budget.table(placement_budget.full(), placement_budget.FULL_BUDGET)
    assert full in docs and full in placement_budget.help_text()
    worst = budget.total(placement_budget.every_seed_pending())
    assert f"If every seed left a pod pending: {worst:.0f} s" in docs
    minutes = {"placement": round(budget.total(placement) / 60),
               "rebalance": round(budget.total(rebalance) / 60)}  # fmt: skip
    rows = {r.split("`")[1]: r for r in docs.splitlines() if r.startswith("| `make bench-")}
    for name, m in minutes.items():
        assert f"| about {m} min (est." in rows[f"make bench-{name}"]
    assert f"about {minutes['placement']} minutes" in (ROOT / "docs" / "placement.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert f"seven contenders (about {minutes['placement']}\n" in makefile
    assert f"five contenders (about {minutes['rebalance']} minutes" in makefile
    assert len(pl.QUICK_CONTENDERS) == 7 and len(rb.QUICK_CONTENDERS) == 5
