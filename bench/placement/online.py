"""`python -m bench.placement.online RESULT`: online placement policies replayed offline on a
placement result's trace windows, with only what a deployed scheduler could know (issue 45).

floor.py shows that a placement made in hindsight has no node-second over 100 % in any window of
the full run at 9ba285c; this asks how close a placement made as the pods arrive can come. Each
trace window of RESULT is replayed deterministically, without a cluster: the same nodes, pods,
requests and waves, the simulator's own demand (floor.demand: each node's background with its
wobble, each pod's use from the trace player, ramped from the second it is bound). Pods arrive
when their wave was created; each is offered, at that second and every second after while it
stays pending, to a policy (bench/placement/policies.py) that sees a `Known`: samples strictly
before now of each node's CPU and of each bound pod's use (what the watcher's window, its node
maxima and its per-pod statistics hold), each workload's most one replica used per trace hour
of the day before the window (what warm_history.py seeds the watcher with), the pods' requests
and which pods are bound where. It never sees a pod that has not arrived or a sample to come.
The node must fit the pod's requests (NodeResourcesFit); among the nodes the policy allows, the
best score wins, ties broken by a seeded draw as the cycle breaks them. A pod no node takes waits.

Counted on the result's own grid, as the benchmark counts (bench.placement.trace's
measure_over_time): node-seconds over 100 % (100 x CPU / allocatable > 100, unclamped), one
sample a wall second from the replay's start for as many seconds as the result's series;
pods pending at the end, and pod-seconds pending (from arrival to binding, or to the end).

Each policy runs on every contender's pool of the window (pod and node names key the noise of a
pod's use and a node's wobble, so the pools differ as the contenders' did), with `--draws`
tie-break seeds each; the table gives per window the mean over pools and draws. A policy named
after a contender (bench/placement/policies.py's IMITATES) is also given on its own pool beside
the contender's measured figure: the calibration. Nothing runs against a cluster and nothing is
written; `--policies` narrows the set (names or shell patterns: `aligned-*`).
"""

from __future__ import annotations

import argparse
import fnmatch
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.placement import floor, policies
from bench.placement import run as pl
from bench.placement import trace as pt
from bench.placement.pool import PRE, Known, Policy, Pool, ramped
from sandbox.load.trace import DEFAULT_PATH, STEP_SECONDS, load
from watcher.rows import HOURS

DRAWS = 2  # tie-break seeds per pool


@dataclass(frozen=True)
class Outcome:
    over_100: int  # node-seconds over 100 %
    pending: int  # pods pending at the end
    pending_seconds: float  # pod-seconds pending
    hottest: float  # the hottest node-second, %
    node_of: np.ndarray  # per pod, its node (-1 pending)


def count(pool: Pool, load: np.ndarray) -> tuple[int, float]:
    """(node-seconds over 100 %, hottest %) of a node x second CPU series, on the result's
    grid: the measured seconds only, 100 x use / allocatable > 100 as the benchmark tests."""
    pct = 100.0 * load[:, pool.pre : pool.pre + pool.seconds] / pool.capacity[:, None]
    return int((pct > 100.0).sum()), float(pct.max()) if pct.size else 0.0


def replay(pool: Pool, policy: Policy, draw: int = 0) -> Outcome:
    """Every pod offered to `policy` from its arrival, each second while pending (see module)."""
    rng = random.Random(f"online:{draw}")
    n_pods = len(pool.arrival)
    load = pool.background.copy()
    pods = np.zeros_like(pool.use)
    node_of = np.full(n_pods, -1)
    bound_at = np.full(n_pods, np.nan)
    room = np.stack([pool.capacity, pool.memory], axis=1).astype(float)
    requests = np.zeros_like(pool.requests, dtype=float)
    workload = np.full(n_pods, -1)
    order = sorted(range(n_pods), key=lambda j: (pool.arrival[j], j))
    waiting: list[int] = []
    nxt = 0
    for now in range(pool.seconds):
        while nxt < n_pods and pool.arrival[order[nxt]] <= now:
            j = order[nxt]
            requests[j], workload[j] = pool.requests[j], pool.workload[j]
            waiting.append(j)
            nxt += 1
        still = []
        for j in waiting:
            past = pool.pre + now
            known = Known(now, pool.pre, pool.hour, pool.capacity, pool.memory, load[:, :past],
                          pods[:, :past], node_of, bound_at, requests, workload,
                          pool.history)  # fmt: skip
            scores, allowed = policy(known, j)
            ok = allowed & np.all(room >= pool.requests[j], axis=1)
            if not ok.any():
                still.append(j)
                continue
            best = np.flatnonzero(ok & (scores == scores[ok].max()))
            n = int(best[rng.randrange(len(best))]) if len(best) > 1 else int(best[0])
            pods[j] = ramped(pool.use[j], now, pool.pre, pool.ramp)
            load[n] += pods[j]
            node_of[j], bound_at[j] = n, now
            room[n] -= pool.requests[j]
        waiting = still
    over, hottest = count(pool, load)
    waited = np.where(np.isnan(bound_at), pool.seconds, bound_at) - pool.arrival
    return Outcome(over, len(waiting), float(np.maximum(waited, 0).sum()), hottest, node_of)


def placed_load(pool: Pool, node_of: Sequence[int], bound_at: Sequence[float]) -> np.ndarray:
    """The node x second CPU of a given placement (pods with node -1 left out)."""
    load = pool.background.copy()
    for j, (n, at) in enumerate(zip(node_of, bound_at, strict=True)):
        if n >= 0:
            load[n] += ramped(pool.use[j], at, pool.pre, pool.ramp)
    return load


def history(setup: pt.Setup, contender: str) -> np.ndarray:
    """Per workload of the window, the most one of its replicas in `contender`'s pool used at
    each trace step of the day before it (what warm_history.py seeds, before its buckets)."""
    first = setup.player.first_step
    steps = np.arange(first - HOURS * round(3600 / STEP_SECONDS), first)
    out = np.zeros((len(setup.chosen), len(steps)))
    for j, p in enumerate(setup.pods):
        found = setup.player.step_use(f"{pl.NAMESPACE}/{pl.pod_name(contender, j)}", steps)
        if found is not None:
            out[p.deployment] = np.maximum(out[p.deployment], found[0])
    return out


def pool_of(run: dict[str, Any], setup: pt.Setup, contender: str) -> Pool:
    """`contender`'s pool in one trace window of a result."""
    start = run["trace"]["started_at"]
    seconds = len(run["contenders"][contender]["max_cpu_over_time"])
    # every pod as if bound long before: its use unramped (ramped() applies the ramp)
    background, use = floor.demand(setup, contender, start, seconds, -1e9, first=-PRE)
    memory = [setup.player.requests(setup.chosen[p.deployment][0])[1] for p in setup.pods]
    return Pool(
        capacity=np.array([n.cpu * 1000.0 for n in setup.nodes]),
        memory=np.array([n.cpu * 4.0 * 1024**3 for n in setup.nodes]),  # as trace.py makes them
        background=np.array(background, dtype=float).T,
        use=np.array(use, dtype=float).T,
        requests=np.array(
            [(p.cpu_m, m) for p, m in zip(setup.pods, memory, strict=True)], dtype=float
        ),  # fmt: skip
        arrival=np.array([w * setup.shape.gap for w in setup.waves], dtype=float),
        workload=np.array([p.deployment for p in setup.pods]),
        history=history(setup, contender),
        seconds=seconds,
        ramp=setup.config.ramp_seconds,
        hour=3600 / setup.player.config.compression,
    )


def recorded_placement(
    run: dict[str, Any], contender: str, pool: Pool
) -> tuple[list[int], list[float]] | None:
    """(each pod's node, -1 for none; the second of its decision from the replay's start) from
    the contender's decision records (Ballast's contenders keep them), or None without any."""
    records = (run["contenders"][contender].get("decisions") or {}).get("records")
    if not records:
        return None
    start = run["trace"]["started_at"]
    index = {pl.pod_name(contender, j): j for j in range(len(pool.arrival))}
    nodes = {pl.node_name(contender, i): i for i in range(len(pool.capacity))}
    node_of, bound_at = [-1] * len(pool.arrival), [0.0] * len(pool.arrival)
    for r in records:
        if r["pod"] in index and r["node"] in nodes:
            node_of[index[r["pod"]]] = nodes[r["node"]]
            bound_at[index[r["pod"]]] = r["time"] - start
    return node_of, bound_at


def recorded(run: dict[str, Any], contender: str, pool: Pool) -> Outcome | None:
    """The contender's own placement from its decision records (Ballast's contenders), counted
    here: how closely this replay's counting matches the benchmark's."""
    found = recorded_placement(run, contender, pool)
    if found is None:
        return None
    node_of, bound_at = found
    over, hottest = count(pool, placed_load(pool, node_of, bound_at))
    return Outcome(over, node_of.count(-1), 0.0, hottest, np.array(node_of))


def chosen(spec: str, every: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the policies `spec` names, in `every`'s order; the names and patterns it matches none
    of): comma-separated names or shell patterns (`aligned-*`)."""
    wanted = [p for p in spec.split(",") if p]
    names = [n for n in every if any(fnmatch.fnmatchcase(n, p) for p in wanted)]
    return names, [p for p in wanted if not fnmatch.filter(every, p)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.placement.online", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("result", type=Path, help="a placement result with trace windows")
    parser.add_argument("--trace", type=Path, default=DEFAULT_PATH, help="the trace it replayed")
    every = [*policies.POLICIES, *policies.ORACLES]
    parser.add_argument("--policies", default=",".join(every),
                        help="comma-separated names or shell patterns ('aligned-*'), of: "
                             + ", ".join(every))  # fmt: skip
    parser.add_argument("--draws", type=int, default=DRAWS, help="tie-break seeds per pool")
    parser.add_argument(
        "--pools",
        default="",
        help="comma-separated contenders whose pools to replay (default: all)",
    )
    args = parser.parse_args(argv)
    names, unknown = chosen(args.policies, every)
    if unknown:
        parser.error(f"unknown policies {unknown}; known: {every}")
    doc, runs = floor.trace_runs(parser, args.result)
    began = time.monotonic()
    trace = load(args.trace)
    shape = pt.shape_of(doc)
    table: dict[str, list[tuple[float, float, float]]] = {p: [] for p in names}
    own: dict[str, list[tuple[int, int]]] = {p: [] for p in names}
    for run in runs:
        pools = [c for c in (args.pools.split(",") if args.pools else run["contenders"]) if c]
        setup = pt.setup_window(trace, run["seed"], list(run["contenders"]), shape)
        built = {c: pool_of(run, setup, c) for c in pools}
        print(f"window {run['seed']} (first step {run['trace']['first_step']}, "
              f"{len(setup.pods)} pods): node-s > 100 % (mean over {len(pools)} pools x "
              f"{args.draws} draws), pods pending at the end, pod-s pending")  # fmt: skip
        for c, pool in built.items():
            found = recorded(run, c, pool)
            if found is not None:
                measured = run["contenders"][c]["node_seconds_over_100"]
                print(f"  recorded placement of {c:<16} counted here {found.over_100:>4}, "
                      f"the benchmark {measured:>4}")  # fmt: skip
        for name in names:
            make = policies.ORACLES.get(name, lambda _, n=name: policies.POLICIES[n])
            outs = {c: [replay(pool, make(pool), d) for d in range(args.draws)]
                    for c, pool in built.items()}  # fmt: skip
            flat = [o for found in outs.values() for o in found]
            row = (statistics.fmean(o.over_100 for o in flat),
                   statistics.fmean(o.pending for o in flat),
                   statistics.fmean(o.pending_seconds for o in flat))  # fmt: skip
            table[name].append(row)
            mine = policies.IMITATES.get(name)
            note = ""
            if mine in outs:
                here = statistics.fmean(o.over_100 for o in outs[mine])
                real = run["contenders"][mine]["node_seconds_over_100"]
                own[name].append((round(here), real))
                note = f"; on {mine}'s pool {here:.0f}, measured {real}"
            print(f"  {name:<22} {row[0]:>6.1f}  pending {row[1]:>4.1f}  pod-s {row[2]:>7.1f}"
                  f"  (worst pool {max(o.over_100 for o in flat)}){note}")  # fmt: skip
    print(f"\nmean over {len(runs)} windows (worst window), pods pending a window, pod-s pending:")
    for name, rows in table.items():
        over = [r[0] for r in rows]
        mine = own[name]
        note = ""
        if mine:
            note = (f"; on its contender's pool {statistics.fmean(h for h, _ in mine):.1f}, "
                    f"measured {statistics.fmean(r for _, r in mine):.1f}")  # fmt: skip
        print(f"  {name:<22} {statistics.fmean(over):>6.1f} ({max(over):.0f})  pending "
              f"{statistics.fmean(r[1] for r in rows):.1f}  pod-s "
              f"{statistics.fmean(r[2] for r in rows):.0f}{note}")  # fmt: skip
    print(f"({time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
