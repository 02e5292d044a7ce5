"""What one rebalancer round costs at 1,000 to 5,000 nodes, and how often the judge's prediction
of where a replacement lands is where the scheduler's cycle puts it.

In process, on synthetic clusters (bench/rebalance/clusters.py: pods per node as the chart's
sizing assumes, a share of hot nodes): no API server, Redis or watcher. A round here is what
the leader's round computes once the watcher's loads are in (scheduler/rebalancer/rounds.py):
classify every node, then the judge's plan for the confirmed hot nodes (every candidate judged
on the whole cluster, the set chosen, the landing checked), with the chart's scheduler profile
and rebalancer settings (charts/ballast/values.yaml) and percentageOfNodesToScore at the chart's
0 (upstream's adaptive sample) and at 100 (every node). CPU is the process's
(time.process_time), per round (every hot node confirmed, the round's limits as configured)
and per hot node (one node planned alone), over several repeats, the two settings taking turns.
Landings: bench/rebalance/landings.py. `python -m bench.rebalance.rounds [--quick]`;
`make bench-rebalance-rounds`.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import chart, runguard
from bench.harness.common import new_figure, redraw, redraw_option, save, sized, spread
from bench.harness.provenance import REPO, write_result
from bench.rebalance import clusters, landings
from scheduler.config.profiles import build_profiles
from scheduler.framework import Snapshot
from scheduler.framework.profile import Profile
from scheduler.framework.sampling import nodes_to_find
from scheduler.rebalancer import limits, settings
from scheduler.rebalancer.classify import Classification, classify
from scheduler.rebalancer.judge import Judge, Plan
from scheduler.rebalancer.settings import RebalancerSettings
from scheduler.rebalancer.victims import Estimator, Workload, workload_ineligible

RESULTS = REPO / "bench" / "results"
PERCENTAGES = (0, 100)  # the chart's adaptive sample, and every node scored
# The landing clusters' loads: (share of hot nodes, share of cold ones).
MIXES = {"calm": (0.02, 0.30), "busy": (0.10, 0.05)}


def chart_judging(values: Path = chart.VALUES) -> tuple[Profile, RebalancerSettings, Estimator]:
    """The judging profile, the rebalancer's settings and its estimator, as the chart deploys
    them (bench.harness.chart)."""
    cfg = settings.parse(chart.rebalancer_file(values))
    profile = build_profiles(cfg.scheduler)[cfg.rebalancer.profile]
    return profile, cfg.rebalancer, Estimator.for_profile(profile)


class CountingJudge(Judge):
    """The judge, counting its views: each filters every node and scores the feasible ones."""

    views = 0

    def _view(self, *args: Any, **kwargs: Any) -> Any:
        self.views += 1
        return super()._view(*args, **kwargs)


def judge_for(
    profile: Profile, s: RebalancerSettings, est: Estimator, snap: Snapshot, percentage: int
) -> CountingJudge:
    """A judge whose workload check is the round's (rounds.Rounds._busy), on the snapshot's
    index, with nothing of ours in flight and nothing set aside."""
    in_flight = limits.InFlight()

    def busy(workload: Workload) -> bool:
        index = snap.cluster
        return bool(
            workload_ineligible(workload, index, s)
            or limits.budget_at_limit(workload, index)
            or limits.workload_busy(workload, index, in_flight)
        )

    return CountingJudge(profile, s, est, busy, percentage=percentage)


def timed(step: Callable[[], Any]) -> tuple[float, Any]:
    """CPU seconds of the process for one call, garbage from before collected first."""
    gc.collect()
    start = time.process_time()
    out = step()
    return time.process_time() - start, out


def one_round(judge: Judge, snap: Snapshot, hot: list[str], s: RebalancerSettings) -> Plan:
    view = classify(list(snap.nodes), snap.loads, s.rules, s.threshold_mode)
    return judge.plan(view, hot, snap)


def planned_hot(plan: Plan, hot: list[str]) -> int:
    """The hot nodes the round got to (a move or a skip of theirs) before its limits ran out."""
    touched = {m.source for m in plan.moves} | {k.node for k in plan.skips}
    return len(touched & set(hot))


def measure_cost(nodes: int, args: argparse.Namespace, judging: tuple, say: Callable) -> list:
    profile, s, est = judging
    built, cluster = timed(
        lambda: clusters.build(nodes, 1, args.pods_per_node, args.hot_share, args.cold_share)
    )
    snap, hot = cluster.snap, cluster.hot
    say(f"{nodes} nodes, {cluster.pods} pods, {len(hot)} hot: built in {built:.1f} s of CPU")
    view = classify(list(snap.nodes), snap.loads, s.rules, s.threshold_mode)
    order = sorted(hot, key=lambda n: -max(view.excess(n).values()))[: args.per_node]
    judges = {p: judge_for(profile, s, est, snap, p) for p in PERCENTAGES}
    rounds: dict[int, list[float]] = {p: [] for p in PERCENTAGES}
    plans: dict[int, Plan] = {}
    views: dict[int, int] = {}
    alone: dict[int, list[float]] = {p: [] for p in PERCENTAGES}
    alone_views: dict[int, list[int]] = {p: [] for p in PERCENTAGES}
    # The settings take turns, so a change in what else the machine does falls on both.
    for _ in range(args.repeats):
        for p, judge in judges.items():
            judge.views = 0
            cpu, plans[p] = timed(lambda j=judge: one_round(j, snap, hot, s))
            rounds[p].append(cpu)
            views[p] = judge.views
    for name in order:
        for p, judge in judges.items():
            judge.views = 0
            cpu, _ = timed(lambda j=judge, n=name: one_round(j, snap, [n], s))
            alone[p].append(cpu)
            alone_views[p].append(judge.views)
    out = []
    for p in PERCENTAGES:
        row = {
            "nodes": nodes,
            "pods": cluster.pods,
            "hot": len(hot),
            "percentage": p,
            "sample": nodes_to_find(nodes, p),
            "round": {
                "cpu_s": spread(rounds[p]),
                "repeats": len(rounds[p]),
                "views": views[p],
                "moves": len(plans[p].moves),
                "hot_planned": planned_hot(plans[p], hot),
            },
            "hot_node": {
                "cpu_s": spread(alone[p]),
                "views": spread(alone_views[p]),
                "timed": len(alone[p]),
            },
            "view_ms": round(1000 * statistics.median(rounds[p]) / max(1, views[p]), 2),
        }
        r, h = row["round"], row["hot_node"]
        say(
            f"  percentage {p}: round {r['cpu_s']['median']:.3f} s ({r['cpu_s']['min']:.3f}.."
            f"{r['cpu_s']['max']:.3f}), {r['views']} views, {r['moves']} moves, "
            f"{r['hot_planned']} hot nodes planned; one hot node {h['cpu_s']['median']:.3f} s "
            f"({h['cpu_s']['min']:.3f}..{h['cpu_s']['max']:.3f})"
        )
        out.append(row)
    return out


def measure_landing(
    nodes: int, mix: str, args: argparse.Namespace, judging: tuple, say: Callable
) -> list:
    profile, s, est = judging
    hot_share, cold_share = MIXES[mix]
    found: dict[int, list[landings.Landing]] = {p: [] for p in PERCENTAGES}
    moves = {p: 0 for p in PERCENTAGES}
    all_safe = {p: 0 for p in PERCENTAGES}
    for seed in range(1, args.seeds + 1):
        cluster = clusters.build(nodes, 1000 + seed, args.pods_per_node, hot_share, cold_share)
        snap = cluster.snap
        for percentage in PERCENTAGES:
            view: Classification = classify(list(snap.nodes), snap.loads, s.rules, s.threshold_mode)
            plan = judge_for(profile, s, est, snap, percentage).plan(view, cluster.hot, snap)
            rng = random.Random(seed * 1000 + percentage)
            replays = landings.replay(
                profile, est, view, snap, plan.moves, percentage, args.starts, rng
            )
            for got in replays:
                found[percentage] += got
                moves[percentage] += 1
                all_safe[percentage] += all(x.safe for x in got)
    out = []
    for percentage in PERCENTAGES:
        row = {
            "mix": mix,
            "nodes": nodes,
            "percentage": percentage,
            "sample": nodes_to_find(nodes, percentage),
            "clusters": args.seeds,
            "moves": moves[percentage],
            "moves_safe_every_start": all_safe[percentage],
            **landings.rates(found[percentage]),
        }
        say(
            f"  landings, {mix}, {nodes} nodes, percentage {percentage}: {row['moves']} moves, "
            + ", ".join(f"{c} {row[c]:.1%}" for c in landings.CHECKS)
        )
        out.append(row)
    return out


def markdown(doc: dict[str, Any]) -> str:
    """The result as two tables for the docs: the cost per size and setting, the landings per
    mix, size and setting."""

    def cpu(block: dict[str, Any]) -> str:
        c = block["cpu_s"]
        return f"{c['median']:.3f} ({c['min']:.3f}..{c['max']:.3f})"

    lines = [
        "| nodes | pods | hot | percentageOfNodesToScore (sample) | a round: CPU s | views | "
        "moves | hot nodes planned | one hot node: CPU s | its views | ms a view |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in doc["cost"]:
        lines.append(
            f"| {r['nodes']:,} | {r['pods']:,} | {r['hot']} | {r['percentage']} ({r['sample']:,}) "
            f"| {cpu(r['round'])} | {r['round']['views']} | {r['round']['moves']} "
            f"| {r['round']['hot_planned']} | {cpu(r['hot_node'])} "
            f"| {r['hot_node']['views']['median']} | {r['view_ms']} |"
        )
    lines += [
        "",
        "| mix | nodes | percentageOfNodesToScore (sample) | moves | picks | "
        + " | ".join(landings.CHECKS)
        + " | moves safe from every start |",
        "| --- | --- | --- | --- | --- | "
        + " | ".join("---" for _ in landings.CHECKS)
        + " | --- |",
    ]
    for r in doc["landing"]:
        shares = " | ".join(f"{100 * r[c]:.1f} %" for c in landings.CHECKS)
        lines.append(
            f"| {r['mix']} | {r['nodes']:,} | {r['percentage']} ({r['sample']:,}) | {r['moves']} "
            f"| {r['replays']} | {shares} | {r['moves_safe_every_start']} of {r['moves']} |"
        )
    return "\n".join(lines)


def plot(doc: dict[str, Any], folder: Path, prefix: str = "rebalance-rounds") -> list[Path]:
    """CPU per round and per hot node against nodes; the landing checks per cluster."""
    fig, (cost, land) = new_figure(13, 4.5, ncols=2, width_ratios=(1, 1.4))
    for percentage, style in zip(PERCENTAGES, ("-", "--"), strict=True):
        rows = [r for r in doc["cost"] if r["percentage"] == percentage]
        label = "sampling (0: adaptive)" if percentage == 0 else "every node (100)"
        for key, color, what in (
            ("round", "#1b7837", "a round"),
            ("hot_node", "#762a83", "one hot node"),
        ):
            xs = [r["nodes"] for r in rows]
            mid = [r[key]["cpu_s"]["median"] for r in rows]
            low = [m - r[key]["cpu_s"]["min"] for m, r in zip(mid, rows, strict=True)]
            high = [r[key]["cpu_s"]["max"] - m for m, r in zip(mid, rows, strict=True)]
            cost.errorbar(xs, mid, yerr=[low, high], linestyle=style, color=color, marker="o",
                          capsize=3, label=f"{what}, {label}")  # fmt: skip
    cost.set_xlabel("nodes")
    cost.set_ylabel("CPU seconds (median, min..max)")
    cost.set_title("the round's planning, every hot node confirmed", fontsize=10)
    cost.legend(fontsize=7)
    groups = sorted(
        {(r["mix"], r["nodes"]) for r in doc["landing"]}, key=lambda g: (g[0] != "calm", g[1])
    )  # noqa: E501
    shown = ("exact", "tie", "predicted", "safe")
    colors = dict(zip(shown, ("#1b7837", "#7fbf7b", "#4575b4", "#c51b7d"), strict=True))
    width = 0.8 / (len(shown) * len(PERCENTAGES))
    for i, (check, percentage) in enumerate((c, p) for p in PERCENTAGES for c in shown):
        rows = {(r["mix"], r["nodes"]): r for r in doc["landing"] if r["percentage"] == percentage}
        xs = [g + (i + 0.5) * width - 0.4 for g in range(len(groups))]
        land.bar(xs, [100 * rows[g][check] for g in groups], width, color=colors[check],
                 alpha=1.0 if percentage == 0 else 0.45, hatch="" if percentage == 0 else "//",
                 label=f"{check}, percentage {percentage}")  # fmt: skip
    land.set_xticks(range(len(groups)), [f"{m}\n{n} nodes" for m, n in groups], fontsize=8)
    land.set_ylabel("% of the cycle's picks")
    land.set_ylim(0, 135)
    land.set_yticks(range(0, 101, 20))
    land.set_title("where the scheduler's cycle put each replacement", fontsize=10)
    land.legend(fontsize=7, ncols=4, loc="upper center")
    return [save(fig, folder / f"{prefix}.png", legend=None)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.rebalance.rounds", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="200 and 500 nodes, 2 repeats, 2 landing clusters (seconds)",
    )
    parser.add_argument("--sizes", help="comma-separated node counts of the cost (1000,2000,5000)")
    parser.add_argument("--repeats", type=int, help="rounds timed per size and setting (5)")
    parser.add_argument("--per-node", type=int, help="hot nodes timed alone per size (10)")
    parser.add_argument("--landing-sizes", help="node counts of the landing clusters (200,...)")
    parser.add_argument("--seeds", type=int, help="landing clusters per size (8)")
    parser.add_argument("--starts", type=int, help="cycle starts replayed per move (20)")
    parser.add_argument(
        "--pods-per-node", type=float, default=10.0, help="on average, DaemonSet pods too"
    )
    parser.add_argument("--hot-share", type=float, default=0.02, help="of the cost's nodes")
    parser.add_argument("--cold-share", type=float, default=0.3, help="of the cost's nodes")
    parser.add_argument("--out", type=Path)
    redraw_option(parser, "--plot", "only draw an earlier result's picture (beside it)")
    parser.add_argument("--table", type=Path, help="print a result JSON as markdown and exit")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    if args.plot is not None:
        return redraw(args.plot, plot)
    if args.table is not None:
        print(markdown(json.loads(args.table.read_text())))
        return 0
    sized(
        args,
        quick={"sizes": "200,500", "repeats": 2, "per_node": 3, "landing_sizes": "200",
               "seeds": 2, "starts": 5, "out": RESULTS / "rebalance-rounds-quick.json"},
        full={"sizes": "1000,2000,5000", "repeats": 5, "per_node": 10,
              "landing_sizes": "200,500,1000,2000", "seeds": 8, "starts": 20,
              "out": RESULTS / "rebalance-rounds.json"},
    )  # fmt: skip
    runguard.start_run(parser, args.allow_dirty)
    started = time.monotonic()

    def say(line: str) -> None:
        print(f"[{time.monotonic() - started:5.0f} s] {line}", flush=True)

    judging = chart_judging()
    profile, s, _ = judging
    cost = [row for n in _sizes(args.sizes) for row in measure_cost(n, args, judging, say)]
    land = [
        row
        for mix in MIXES
        for n in _sizes(args.landing_sizes)
        for row in measure_landing(n, mix, args, judging, say)
    ]
    doc = {
        "about": __doc__.split("\n\n")[0],
        "quick": args.quick,
        "seconds": round(time.monotonic() - started),
        "setup": {
            "sizes": _sizes(args.sizes),
            "repeats": args.repeats,
            "hot_nodes_alone": args.per_node,
            "landing_sizes": _sizes(args.landing_sizes),
            "landing_clusters_per_size": args.seeds,
            "starts_per_move": args.starts,
            "pods_per_node": args.pods_per_node,
            "hot_share": args.hot_share,
            "cold_share": args.cold_share,
            "landing_mixes": {m: {"hot_share": h, "cold_share": c} for m, (h, c) in MIXES.items()},
            "percentages": list(PERCENTAGES),
            "cluster": clusters.__doc__.split("\n\n")[1],
            "profile": {
                "filters": [p.name for p in profile.filters],
                "scores": {p.name: w for p, w in profile.scores},
            },
            "rebalancer": {
                "maxPerRound": s.max_per_round,
                "maxPerNode": s.max_per_node,
                "maxPerNamespace": s.max_per_namespace,
                "loadMargin": s.load_margin,
                "scoreMargin": s.score_margin,
                "minRelief": s.min_relief,
                "targetsMustBeCold": s.targets_must_be_cold,
            },
            "truth": landings.__doc__.split("\n\n")[1],
        },
        "cost": cost,
        "landing": land,
    }
    write_result(args.out, doc)  # before the picture: a failing plot never loses a run
    say(f"results: {args.out}")
    for path in plot(doc, args.out.parent, prefix=args.out.stem):
        print(f"plot: {path}")
    runguard.finish()
    return 0


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


if __name__ == "__main__":
    raise SystemExit(main())
