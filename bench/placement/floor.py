"""`python -m bench.placement.floor RESULT`: the node-seconds over 100 % no placement avoids.

In the simulator a pod's demand comes from the trace and does not depend on where it runs, and a
node's CPU is its background plus its pods' use, unclamped (sandbox.load.simulator.node_loads).
So each second the pool's total demand is fixed by which pods run, not by where. When it passes
the pool's total CPU, at least one node is over 100 %, whatever the placement: the sum of the
nodes' loads is the total, and not all of them can be at or under their capacity. That is all
the pool's total proves. It proves no second node: a node's load has no ceiling, so one node
can take the whole excess. A floor of several nodes would need the pods' sizes (bin packing),
which this leaves alone; the floor is therefore low, never high.

The floor counts, per second of the measured series (the result's own grid: one sample a wall
second from the replay's start, `trace.started_at`), one node-second when the total demand
passes the pool's CPU. Demand is what the simulator computes: each node's background with its
wobble (`true_cpu` with no pod) and each pod's use (`pod_use`, the trace player's figure with its
ramp), every pod taken as bound `--slack` seconds after its wave was created (default 0: the
instant it was created, the most demand any contender's pool can carry). A pod bound later uses
less, so the floor holds for a contender that bound every pod within the slack, and a floor of 0
is 0 for every contender however late it bound. The pods a contender left pending at the end are
taken out as the largest ones each second, which keeps it a floor for them too. Each pool's
pods are replayed with their own noise (it is keyed by the pod's name), so the floor is computed
per contender.

Beside the floor, a placement made in hindsight (`hindsight`): knowing every pod's use over the
whole window, pods go largest peak first each to the node where they add the fewest
node-seconds over 100 % (then the least demand above 90 %, then the first node), among the nodes
their requests fit (as NodeResourcesFit allows), with the same demand as the floor. Its
node-seconds are what one placement reached, so the best placement has at most that many; with
every pod placed, a window's best figure lies between the floor and it. Also printed: the
seconds in which the pool's total demand passed 90 % of its CPU. It reads a result and the
trace; nothing runs against a cluster and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.placement import run as pl
from bench.placement import trace as pt
from sandbox.load.simulator import PodUse, pod_use
from sandbox.load.trace import DEFAULT_PATH, load

# Wall seconds from a wave's creation to its pods' binding that the floor allows. 0 gives the
# most demand; Ballast's records in the full run at 9ba285c bound within 0.03-15.5 s of the wave.
BIND_SLACK = 0.0


@dataclass(frozen=True)
class Floor:
    """One pool over one window, per second of the result's series."""

    seconds: int  # seconds in the series
    over_100: int  # seconds the total demand passed the pool's CPU: node-seconds none avoids
    over_90: int  # seconds the total demand passed 90 % of it
    peak: float  # the highest total demand, % of the pool's CPU

    @property
    def over_90_share(self) -> float:
        return self.over_90 / self.seconds if self.seconds else 0.0


def floor(
    capacity_m: float,
    background_m: Sequence[float],
    pod_use_m: Sequence[Sequence[float]],
    pending: int = 0,
) -> Floor:
    """The floor from each second's total background (millicores) and each pod's use that
    second; `pending` pods, taken as the largest each second, are left out."""
    if len(background_m) != len(pod_use_m):
        raise ValueError(f"{len(background_m)} backgrounds for {len(pod_use_m)} seconds")
    over_100 = over_90 = 0
    peak = 0.0
    for background, uses in zip(background_m, pod_use_m, strict=True):
        kept = sorted(uses)[: max(0, len(uses) - pending)]
        demand = background + sum(kept)
        over_100 += demand > capacity_m
        over_90 += demand > 0.9 * capacity_m
        peak = max(peak, 100.0 * demand / capacity_m)
    return Floor(len(background_m), over_100, over_90, peak)


@dataclass(frozen=True)
class Hindsight:
    """The placement found knowing the whole window."""

    over_100: int  # its node-seconds over 100 %
    hottest: float  # its hottest node-second, %
    unplaced: int  # pods whose requests fit no node when their turn came
    node_of: tuple[int, ...] = ()  # per pod, its node (-1: unplaced)


def hindsight(
    allocatable: Sequence[tuple[float, float]],
    background_m: Sequence[Sequence[float]],
    use_m: Sequence[Sequence[float]],
    requests: Sequence[tuple[float, float]],
) -> Hindsight:
    """A placement knowing every second's use: `allocatable` (CPU m, memory bytes) per node,
    `background_m` per second and node, `use_m` per second and pod, `requests` per pod."""
    cap = np.array([a[0] for a in allocatable], dtype=float)[:, None]
    room = np.array(allocatable, dtype=float)
    load = np.array(background_m, dtype=float).T  # node x second
    uses = np.array(use_m, dtype=float).reshape(len(use_m), len(requests)).T  # pod x second
    unplaced = 0
    node_of = [-1] * len(requests)
    for p in np.argsort(-uses.max(axis=1), kind="stable"):
        fits = np.all(room >= np.array(requests[p]), axis=1)
        if not fits.any():
            unplaced += 1
            continue
        after = load + uses[p]
        # fewest node-seconds over 100 % on the node, then the least excess over 90 %
        over = (after > cap).sum(axis=1) - (load > cap).sum(axis=1)
        excess = np.maximum(after - 0.9 * cap, 0.0).sum(axis=1)
        order = np.lexsort((excess, over))
        node = next(int(i) for i in order if fits[i])
        load[node] = after[node]
        room[node] -= requests[p]
        node_of[p] = node
    hottest = float((load / cap).max() * 100.0) if load.size else 0.0
    return Hindsight(int((load > cap).sum()), hottest, unplaced, tuple(node_of))


def demand(
    setup: pt.Setup,
    contender: str,
    start: float,
    seconds: int,
    slack: float = BIND_SLACK,
    first: int = 0,
) -> tuple[list[list[float]], list[list[float]]]:
    """(each node's background, each pod's use) in millicores, each second from `start + first`
    to `start + seconds` (`start`: the replay's start, wall time; `first` < 0 reaches before
    it), with the simulator's own functions; the player starts at `start`."""
    setup.player.start(start)
    uses = [
        PodUse(
            f"{pl.NAMESPACE}/{pl.pod_name(contender, j)}",
            pl.node_name(contender, 0),  # pod_use does not look at the node
            p.cpu_m,
            256 * 1024**2,
            start + setup.waves[j] * setup.shape.gap + slack,
        )
        for j, p in enumerate(setup.pods)
    ]
    background, pods = [], []
    for s in range(first, seconds):
        at = start + s
        idle = pl.true_cpu(contender, setup.nodes, setup.pods, {}, setup.config, at)
        background.append([c * n.cpu * 10.0 for c, n in zip(idle, setup.nodes, strict=True)])
        pods.append([pod_use(u, at, setup.config)[0] for u in uses])
    return background, pods


def window(
    run: dict[str, Any], setup: pt.Setup, slack: float = BIND_SLACK
) -> dict[str, tuple[Floor, Hindsight]]:
    """Each contender's floor and placement in hindsight in one trace window of a result."""
    start = run["trace"]["started_at"]
    capacity = sum(n.cpu * 1000 for n in setup.nodes)
    # as the benchmark makes its nodes (bench/placement/trace.py: memory 4 GiB a core)
    allocatable = [(n.cpu * 1000.0, n.cpu * 4.0 * 1024**3) for n in setup.nodes]
    requests = [(p.cpu_m, setup.player.requests(setup.chosen[p.deployment][0])[1])
                for p in setup.pods]  # fmt: skip
    out = {}
    for c, result in run["contenders"].items():
        background, pods = demand(setup, c, start, len(result["max_cpu_over_time"]), slack)
        totals = [sum(b) for b in background]
        out[c] = (
            floor(capacity, totals, pods, result.get("pending", 0)),
            hindsight(allocatable, background, pods, requests),
        )
    return out


def trace_runs(parser: argparse.ArgumentParser, path: Path) -> tuple[dict[str, Any], list[dict]]:
    """(the result, its trace windows); the parser's error when none has its replay's start."""
    doc = json.loads(path.read_text())
    runs = [r for r in doc["runs"] if r["scenario"] == "trace"]
    if not runs or not all("started_at" in r["trace"] for r in runs):
        parser.error(f"{path}: no trace windows with their replay's start recorded")
    return doc, runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.placement.floor", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("result", type=Path, help="a placement result with trace windows")
    parser.add_argument("--trace", type=Path, default=DEFAULT_PATH, help="the trace it replayed")
    parser.add_argument(
        "--slack", type=float, default=BIND_SLACK,
        help=f"wall seconds a pod may take to bind after its wave (default {BIND_SLACK:g})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    doc, runs = trace_runs(parser, args.result)
    trace = load(args.trace)
    shape = pt.shape_of(doc)
    for run in runs:
        setup = pt.setup_window(trace, run["seed"], list(run["contenders"]), shape)
        floors = window(run, setup, args.slack)
        figures = {c: r["node_seconds_over_100"] for c, r in run["contenders"].items()}
        print(
            f"window {run['seed']} (first step {run['trace']['first_step']}): node-s > 100 %, "
            "the floor no placement avoids, seconds the pool's demand passed 90 %, its peak, "
            "a placement in hindsight"
        )
        for c, (f, h) in floors.items():
            unplaced = f", {h.unplaced} pods unplaced" if h.unplaced else ""
            print(f"  {c:<16} {figures[c]:>5}  floor {f.over_100:>4}  pool > 90 % "
                  f"{f.over_90:>4} of {f.seconds} s ({100 * f.over_90_share:.0f} %), "
                  f"pool's peak {f.peak:.1f} %; in hindsight {h.over_100:>4}, hottest "
                  f"{h.hottest:.1f} %{unplaced}")  # fmt: skip
        peers = [c for c in figures if not c.startswith("ballast")]
        for label, among in (("best contender", list(figures)), ("best peer", peers)):
            if not among:
                continue
            best = min(among, key=lambda c: figures[c])
            least = floors[best][0].over_100
            share = least / figures[best] if figures[best] else None
            said = "no node-second to share" if share is None else f"{100 * share:.0f} % of it"
            print(f"  {label} {best}: {figures[best]}; its floor {least}, {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
