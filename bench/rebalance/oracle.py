"""`python -m bench.rebalance.oracle`: what any rebalancer could reach on the trace scenario,
offline (issue 46).

Issue 46 asks Ballast's rebalancer for at most half the best peer's node-seconds over 100 % on
`bench.rebalance --scenarios trace`. Before more live hours go to it, this asks what a rebalancer
could reach at all there. Each window is rebuilt without a cluster as bench/rebalance/trace.py
draws it: the same day (`day_start`), VMs and replicas (`select`, FILL of 8 x 2-CPU nodes' CPU in
requests), node backgrounds (its seeded draw, with the simulator's wobble), requests and per-pod
use (the trace player: VM series, the pod's own noise, interpolated between 5 s steps), one
sample a second for the 360 s the scenario observes, counted as `bench.rebalance.run.measure`
counts: 100 x CPU / allocatable > 100, unclamped.

Placement: the benchmark has Ballast's scheduler place every pod before the replay, with no
profile learned (the pods are new). Here the chart's profile is imitated as it reads then:
LoadVariationRiskBalancing (`lvrb` of bench/placement/policies.py, the online replay's imitation,
at one wave: the node window's mean plus every pod bound so far at its request, the window's
deviation) plus PodTopologySpread's system default (hostname, maxSkew 3, weight 2, upstream's
normalisation), NodeResourcesFit on CPU and memory requests, ties by a seeded draw. (bench.rebalance
may not import bench.placement: the import contract keeps the families apart.) The pods' names,
which seed their noise, are this module's own: the benchmark's are random.

Moves, every round (1 s, the trace's scaled interval) from the replay's start, under Ballast's
deployed limits as the benchmark runs them: maxPerNode, maxPerRound, maxPerNamespace (one
namespace a pool), evictionsPerMinute as a token bucket scaled to trace time as the benchmark
runs it (10 a trace minute, 600 a wall minute; burst maxPerRound; it binds nowhere below 2 a
round), minReplicas (a one-replica workload never moves), one pod of a workload at a time until
its replacement is bound. An evicted pod's use leaves its node from the next second (grace 0);
its replacement is bound BIND_DELAY s after the eviction and ramps to its use over the
simulator's ramp (5 s). The replacement replays the evicted pod's series, noise included (the
benchmark's new pod draws new noise, +-10 %). No rest after a move: the rest guards against a
lagging statistic these movers do not read.
- `clairvoyant`: knows every pod's use to the window's end; each round, greedily, the move that
  cuts the most node-seconds over 100 % from now to the end (source and target together, the
  rest of the pool as it will be with every move made so far), its replacement on the node
  where it adds the fewest (then the least excess); only moves cutting at least `min_gain`.
  Greedy over time: what foresight reached under these limits, not the optimum (no proof).
- `reactive`: knows each node's and pod's true use now, nothing to come: moves a pod off a node
  over the threshold (100 %, or `high`) that brings it under, else takes the most excess off,
  to the node least loaded now; none that makes that node cross. `delay` k: only off nodes whose
  every sample (one a second) of the last k trace steps was over the threshold (detection; the
  replay's samples only, as the rebalancers start with it).
- `floor`: per second, the nodes whose background and unmovable pods (minReplicas) alone pass
  100 %, or one when the pool's whole demand passes its CPU or a pod alone passes 100 % with
  the pool's least background (a saturating VM, hot wherever it runs): node-seconds no
  rebalancer under these rules avoids (a lower bound, and a loose one; the others are achieved
  figures).
- `best`: per window, the fewest of the movers within the benchmark's limits (and none):
  foresight knows which one to be.

Also: each mover's evictions, false ones and bounced ones by the benchmark's definitions
(`bench.rebalance.trace.false_evictions`, `bench.rebalance.run.measure`), and the hot spells of
the pool without a rebalancer: runs of seconds over 100 % per node, in trace steps (5 s).
Nothing runs against a cluster and nothing is written.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.harness import runguard
from bench.rebalance import run as rb
from bench.rebalance import trace as rt
from sandbox.load.simulator import SimulatorConfig, wobble_phase
from sandbox.load.trace import DEFAULT_PATH, Trace, load
from sandbox.load.trace_player import TracePlayer, day_start, select, workload_name
from scheduler.framework.resources import go_round_array

SECONDS = int(rb.SCENARIOS["trace"].observe)  # the measured replay: 72 steps, 360 s
STEP = rt.PLAYER.step_seconds  # wall seconds a trace step lasts
BIND_DELAY = 1.0  # s from an eviction to its replacement's binding (controller, scheduler)
ROUND = rt.TIMING.rounds or rb.INTERVAL  # s between rounds (1: a trace minute)
NODE_MEMORY = 16 * 1024**3  # bytes, as trace.py makes the nodes
POOL = "none"  # the pool whose names seed noise and wobble (any pool's would do)
SPREAD_WEIGHT = 2  # PodTopologySpread's weight in the default profile
SPREAD_SKEW = 3  # its system default on the hostname
LVRB_WINDOW = 5  # samples of the watcher's window at placement (5 s)
SPELL_BINS = (1, 2, 3, 6, 12)  # hot-spell lengths, trace steps: <= 1, <= 2, ... and longer
HORIZONS = (10, 30, 60, 120)  # s the clairvoyant's variants look ahead
DRAWS = 3  # placements per window (the tie-breaks' seeds): one is one scheduler's luck


@dataclass(frozen=True)
class Limits:
    """Ballast's per-round and rate limits (defaults: the chart's, as the benchmark runs them)."""

    per_node: int = rb.DEPLOYED.max_per_node
    per_round: int = min(rb.DEPLOYED.max_per_round, rb.DEPLOYED.max_per_namespace)
    # wall minutes, as the benchmark runs it: the chart's a trace minute
    per_minute: float = rt.TIMING.evictions_per_minute or rb.DEPLOYED.evictions_per_minute
    burst: int = rb.DEPLOYED.max_per_round
    min_replicas: int = rb.DEPLOYED.min_replicas


@dataclass
class Window:
    """One trace window's pool: nodes x seconds and pods x seconds in millicores, second 0 the
    replay's start."""

    seed: int
    first_step: int
    capacity: np.ndarray  # per node, CPU millicores
    background: np.ndarray  # node x second
    use: np.ndarray  # pod x second, each pod's use had it run all along (no ramp)
    cpu_m: np.ndarray  # per pod, CPU request
    memory: np.ndarray  # per pod, memory request (bytes)
    workload: np.ndarray  # per pod, its workload's index
    replicas: np.ndarray  # per pod, its workload's replicas
    node_memory: float = NODE_MEMORY

    @property
    def seconds(self) -> int:
        return self.use.shape[1]


def series(player: TracePlayer, key: str, seconds: int) -> np.ndarray:
    """The pod's CPU millicores at each second from the replay's start, as `TracePlayer.use`
    interpolates between steps."""
    steps = np.arange(player.first_step, player.first_step + math.ceil(seconds / STEP) + 1)
    steps = np.minimum(steps, player.trace.steps - 1)
    found = player.step_use(key, steps)
    if found is None:
        raise ValueError(f"{key}: no VM")
    at = np.minimum(np.arange(seconds) / STEP, len(steps) - 1)
    return np.interp(at, np.arange(len(steps)), found[0])


def window(trace: Trace, seed: int, seconds: int = SECONDS) -> Window:
    """The trace scenario's window for `seed`, as bench/rebalance/trace.py draws it."""
    first = day_start(trace, seed)
    chosen = select(trace, rt.FILL * rb.NODES * rb.NODE_CPU * 1000, rt.PLAYER, seed)
    player = TracePlayer(trace, {workload_name(vm): vm for vm, _ in chosen}, rt.PLAYER, first)
    rng = random.Random(f"rebalance:trace:{seed}")
    percent = [rng.uniform(*rb.BACKGROUND) for _ in range(rb.NODES)]
    config = SimulatorConfig()  # the wobble's size and period
    t = np.arange(seconds, dtype=float)
    capacity = np.full(rb.NODES, rb.NODE_CPU * 1000.0)
    background = np.array([
        p * capacity[i] / 100.0 * (1.0 + config.wobble * np.sin(
            2 * math.pi * t / config.wobble_period + wobble_phase(seed, rb.node_name(POOL, i))))
        for i, p in enumerate(percent)
    ])  # fmt: skip
    use, cpu_m, memory, workload, replicas = [], [], [], [], []
    for v, (vm, n) in enumerate(chosen):
        cpu, mem = player.requests(vm)
        for k in range(n):
            key = f"{rb.namespace(POOL)}/{workload_name(vm)}-oracle-{k}"
            use.append(series(player, key, seconds))
            cpu_m.append(cpu), memory.append(mem), workload.append(v), replicas.append(n)
    return Window(seed, first, capacity, background, np.array(use), np.array(cpu_m, float),
                  np.array(memory, float), np.array(workload), np.array(replicas))  # fmt: skip


# -- placement: the chart's profile as it reads before the replay ------------------------------
def spread_scores(siblings: np.ndarray, feasible: int) -> np.ndarray:
    """PodTopologySpread's system default on the hostname, normalised as upstream: per node the
    pod's siblings there, fewest best, 0..100."""
    raw = go_round_array(siblings * math.log(feasible + 2) + (SPREAD_SKEW - 1))
    high, low = raw.max(), raw.min()
    if high == 0:
        return np.full(len(raw), 100.0)
    return np.floor(100 * (high + low - raw) / high)


def place(w: Window, draw: int = 0) -> np.ndarray:
    """Each pod's node (-1: fits none), offered in the benchmark's creation order."""
    rng = random.Random(f"oracle:place:{w.seed}:{draw}")
    cap = w.capacity
    # the watcher's window before the replay: background only, the first step held
    bg = w.background[:, :LVRB_WINDOW]
    mean, sigma = bg.mean(axis=1), np.clip(bg.std(axis=1) / cap, 0.0, 1.0)
    requested = np.zeros(len(cap))
    memory = np.zeros(len(cap))
    node_of = np.full(len(w.cpu_m), -1)
    for j in range(len(w.cpu_m)):
        fits = (requested + w.cpu_m[j] <= cap) & (memory + w.memory[j] <= w.node_memory)
        if not fits.any():
            continue
        mu = np.minimum((mean + requested + w.cpu_m[j]) / cap, 1.0)
        lvrb = np.maximum(go_round_array((1.0 - (mu + sigma) / 2) * 100), 0.0)
        siblings = np.bincount(node_of[(w.workload == w.workload[j]) & (node_of >= 0)],
                               minlength=len(cap))  # fmt: skip
        spread = np.zeros(len(cap))
        spread[fits] = spread_scores(siblings[fits], int(fits.sum()))
        score = np.where(fits, lvrb + SPREAD_WEIGHT * spread, -np.inf)
        best = np.flatnonzero(score == score.max())
        n = int(best[rng.randrange(len(best))])
        node_of[j] = n
        requested[n] += w.cpu_m[j]
        memory[n] += w.memory[j]
    return node_of


# -- the replay with a mover -----------------------------------------------------------------
@dataclass
class State:
    """The pool as it will be, every move so far made: loads to the window's end."""

    w: Window
    node_of: np.ndarray  # per pod, its node now (-1: pending)
    load: np.ndarray  # node x second, millicores, ramps included
    ramp: np.ndarray  # pod x second, the factor its use counts with on its current node
    busy_until: dict[int, float] = field(default_factory=dict)  # workload -> its bind

    @classmethod
    def start(cls, w: Window, node_of: np.ndarray) -> State:
        ramp = np.where(node_of[:, None] >= 0, 1.0, 0.0) * np.ones(w.seconds)
        load = w.background.copy()
        for j, n in enumerate(node_of):
            if n >= 0:
                load[n] += w.use[j]
        return cls(w, node_of.copy(), load, ramp)

    def room(self) -> tuple[np.ndarray, np.ndarray]:
        """(CPU, memory) requests left per node."""
        placed = self.node_of >= 0
        n = len(self.w.capacity)
        cpu = np.bincount(self.node_of[placed], self.w.cpu_m[placed], n)
        mem = np.bincount(self.node_of[placed], self.w.memory[placed], n)
        return self.w.capacity - cpu, self.w.node_memory - mem

    def replacement(self, j: int, t: int) -> np.ndarray:
        """The ramp factor of pod j's replacement bound BIND_DELAY after an eviction at t."""
        s = np.arange(self.w.seconds, dtype=float)
        return np.clip((s - (t + BIND_DELAY)) / rt.RAMP, 0.0, 1.0)

    def move(self, j: int, target: int, t: int) -> None:
        """Evict pod j at round t (gone from t + 1), its replacement onto `target`."""
        source = self.node_of[j]
        gone = np.arange(self.w.seconds) > t
        self.load[source] -= np.where(gone, self.w.use[j] * self.ramp[j], 0.0)
        factor = self.replacement(j, t)
        self.load[target] += self.w.use[j] * factor
        self.ramp[j] = factor
        self.node_of[j] = target
        self.busy_until[int(self.w.workload[j])] = t + BIND_DELAY


@dataclass(frozen=True)
class Eviction:
    time: int  # the round's second
    pod: int
    source: int
    target: int


# A mover: (state, round second, pods it may move) -> (pod, target) or None.
Mover = Callable[[State, int, np.ndarray], tuple[int, int] | None]


def _over(load: np.ndarray, cap: np.ndarray | float, level: float = 100.0) -> np.ndarray:
    return 100.0 * load > level * cap


def clairvoyant(min_gain: int = 1, horizon: int | None = None) -> Mover:
    """The move that cuts the most node-seconds over 100 % from the next second to the end, or
    over the next `horizon` seconds (later moves can mend what comes after)."""

    def mover(state: State, t: int, movable: np.ndarray) -> tuple[int, int] | None:
        w = state.w
        pods = np.flatnonzero(movable)
        if not len(pods) or t + 1 >= w.seconds:
            return None
        h = slice(t + 1, w.seconds if horizon is None else min(w.seconds, t + 1 + horizon))
        cap = w.capacity
        src = state.node_of[pods]
        load = state.load[:, h]  # node x h
        here = w.use[pods, h] * state.ramp[pods, h]  # what each pod adds now
        before_src = load[src]  # pod x h
        after_src = before_src - here
        cap_src = cap[src][:, None]
        gain = (_over(before_src, cap_src).sum(1) - _over(after_src, cap_src).sum(1)).astype(float)
        relief = (np.maximum(before_src - cap_src, 0) - np.maximum(after_src - cap_src, 0)).sum(1)
        coming = (w.use[pods, h] * state.replacement(0, t)[h])[:, None, :]  # pod x 1 x h
        with_pod = load[None, :, :] + coming  # pod x node x h
        added = (_over(with_pod, cap[None, :, None]).sum(2)
                 - _over(load, cap[:, None]).sum(1)[None, :]).astype(float)  # fmt: skip
        excess = (np.maximum(with_pod - cap[None, :, None], 0).sum(2)
                  - np.maximum(load - cap[:, None], 0).sum(1)[None, :])  # fmt: skip
        cpu_room, mem_room = state.room()
        fits = (w.cpu_m[pods][:, None] <= cpu_room[None, :]) & (
            w.memory[pods][:, None] <= mem_room[None, :]
        )
        fits[np.arange(len(pods)), src] = False
        if not fits.any():
            return None
        # the target: fewest node-seconds added, then the least excess
        key = np.where(fits, added * 1e9 + excess, np.inf)
        target = key.argmin(axis=1)
        rows = np.arange(len(pods))
        total = gain - added[rows, target]
        second = relief - excess[rows, target]
        total = np.where(fits.any(axis=1), total, -np.inf)
        best = max(range(len(pods)), key=lambda i: (total[i], second[i], -i))
        if total[best] < min_gain:
            return None
        return int(pods[best]), int(target[best])

    return mover


def reactive(level: float = 100.0, delay_steps: int = 0) -> Mover:
    """Present knowledge only: off a node over `level` for the last `delay_steps` trace steps,
    the move that best takes it under (the least loaded node now as target)."""
    look = int(delay_steps * STEP)

    def mover(state: State, t: int, movable: np.ndarray) -> tuple[int, int] | None:
        w = state.w
        cap = w.capacity
        if t < look:  # the rebalancer starts with the replay: no evidence before it
            return None
        past = state.load[:, t - look : t + 1]
        hot = _over(past, cap[:, None], level).all(axis=1)
        now = state.load[:, t]
        cpu_room, mem_room = state.room()
        best, choice = None, None
        for j in np.flatnonzero(movable & (state.node_of >= 0)):
            a = state.node_of[j]
            if not hot[a]:
                continue
            u = w.use[j, t] * state.ramp[j, t]
            fits = (w.cpu_m[j] <= cpu_room) & (w.memory[j] <= mem_room)
            fits[a] = False
            if not fits.any() or u <= 0:
                continue
            b = int(np.argmin(np.where(fits, now + u, np.inf)))
            line = level * cap / 100.0
            gain = int(now[a] > line[a]) - int(now[a] - u > line[a])
            gain -= int(now[b] + u > line[b]) - int(now[b] > line[b])
            second = (max(now[a] - line[a], 0) - max(now[a] - u - line[a], 0)
                      - max(now[b] + u - line[b], 0) + max(now[b] - line[b], 0))  # fmt: skip
            key = (gain, round(second, 6), -u)
            if (gain > 0 or (gain == 0 and second > 0)) and (best is None or key > best):
                best, choice = key, (int(j), b)
        return choice

    return mover


@dataclass(frozen=True)
class Outcome:
    over_100: int
    evictions: list[Eviction]
    false_evictions: int
    bounced: int
    load: np.ndarray


def replay(w: Window, node_of: np.ndarray, mover: Mover | None, limits: Limits = Limits()
           ) -> Outcome:  # fmt: skip
    """The window with `mover` making moves each round under `limits`."""
    state = State.start(w, node_of)
    movable = w.replicas >= limits.min_replicas
    evictions: list[Eviction] = []
    tokens = float(limits.burst)
    t = 0
    while mover is not None and t < w.seconds - 1:
        tokens = min(float(limits.burst), tokens + ROUND * limits.per_minute / 60.0)
        used: set[int] = set()
        made = 0
        while made < limits.per_round and tokens >= 1.0:
            free = np.array([state.busy_until.get(int(v), -1.0) <= t for v in w.workload])
            on_free = np.array([n >= 0 and n not in used for n in state.node_of])
            found = mover(state, t, movable & free & on_free)
            if found is None:
                break
            j, target = found
            evictions.append(Eviction(t, j, int(state.node_of[j]), target))
            used.add(int(state.node_of[j]))
            state.move(j, target, t)
            tokens -= 1.0
            made += 1
        t += int(ROUND)
    over = int(_over(state.load, w.capacity[:, None]).sum())
    false, bounced = judged(w, state.load, evictions)
    return Outcome(over, evictions, false, bounced, state.load)


def judged(w: Window, load: np.ndarray, evictions: list[Eviction]) -> tuple[int, int]:
    """(false evictions, bounced) by the benchmark's definitions: the source with the pod's use
    added back not above `high` throughout the watcher's window after the eviction; the
    replacement's node above `high` within 60 s of its binding."""
    pct = 100.0 * load / w.capacity[:, None]
    false = bounced = 0
    for e in evictions:
        s = np.arange(e.time, min(w.seconds, e.time + int(rt.WINDOW) + 1))
        back = np.where(s > e.time, w.use[e.pod, s], 0.0)
        without = pct[e.source, s] + 100.0 * back / w.capacity[e.source]
        if not len(without) or without.min() < rb.HIGH:
            false += 1
        bind = math.ceil(e.time + BIND_DELAY)
        after = pct[e.target, bind : bind + 61]
        if len(after) and after.max() > rb.HIGH:
            bounced += 1
    return false, bounced


def floor(w: Window, node_of: np.ndarray, limits: Limits = Limits()) -> int:
    """Node-seconds no mover under `limits` avoids (see the module)."""
    fixed = w.background.copy()
    for j in np.flatnonzero((node_of >= 0) & (w.replicas < limits.min_replicas)):
        fixed[node_of[j]] += w.use[j]
    stuck = _over(fixed, w.capacity[:, None]).sum(axis=0)
    placed = node_of >= 0
    demand = w.background.sum(axis=0) + w.use[placed].sum(axis=0)
    whole = demand > w.capacity.sum()
    # a pod that passes 100 % with the least background of the pool: hot wherever it runs
    alone = _over(w.use[placed] + w.background.min(axis=0), w.capacity.min()).any(axis=0)
    return int(np.maximum(stuck, whole | alone).sum())


def spells(load: np.ndarray, capacity: np.ndarray) -> list[list[float]]:
    """Per node, its runs of consecutive seconds over 100 %, in trace steps (cut off at the
    window's edges)."""
    out = []
    for row in _over(load, capacity[:, None]):
        runs, n = [], 0
        for hot in [*row.tolist(), False]:
            if hot:
                n += 1
            elif n:
                runs.append(n / STEP)
                n = 0
        out.append(runs)
    return out


def histogram(runs: list[float]) -> list[tuple[str, int, int]]:
    """(bin, spells, node-seconds) per SPELL_BINS bin."""
    edges = [0, *SPELL_BINS, math.inf]
    out = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        inside = [r for r in runs if lo < r <= hi]
        name = f"> {lo:g}" if math.isinf(hi) else f"{lo:g}-{hi:g}"
        out.append((name, len(inside), round(sum(inside) * STEP)))
    return out


UNLIMITED = Limits(per_node=rb.NODES, per_round=rb.NODES, per_minute=1e6, burst=rb.NODES,
                   min_replicas=1)  # fmt: skip
# Movers beyond the limits the benchmark runs Ballast's rebalancer with: not in `best`.
BEYOND = ("clairvoyant-no-limits",)


# -- the study --------------------------------------------------------------------------------
MOVERS: dict[str, Callable[[], tuple[Mover, Limits]]] = {
    "clairvoyant": lambda: (clairvoyant(1), Limits()),
    "clairvoyant-gain5": lambda: (clairvoyant(5), Limits()),
    **{f"clairvoyant-h{h}": (lambda h=h: (clairvoyant(1, h), Limits())) for h in HORIZONS},
    # what Ballast's own limits cost: none of them (requests must still fit)
    "clairvoyant-no-limits": lambda: (clairvoyant(1), UNLIMITED),
    **{
        f"reactive-{level:g}-k{k}": (lambda level=level, k=k: (reactive(level, k), Limits()))
        for level in (100.0, rb.HIGH)
        for k in (0, 1, 2, 3, 6)
    },
}


def study(w: Window, draw: int, names: list[str]) -> dict[str, Outcome | int]:
    node_of = place(w, draw)
    out: dict[str, Outcome | int] = {"none": replay(w, node_of, None)}
    out["floor"] = floor(w, node_of)
    out["pending"] = int((node_of < 0).sum())
    for name in names:
        mover, limits = MOVERS[name]()
        out[name] = replay(w, node_of, mover, limits)
    # foresight knows which of these does best (moving nothing among them): each is achieved
    out["best"] = min(o.over_100 for n, o in out.items() if isinstance(o, Outcome)
                      and n not in BEYOND)  # fmt: skip
    return out


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.rebalance.oracle", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--trace", type=Path, default=DEFAULT_PATH, help="the trace to replay")
    parser.add_argument("--seeds", type=int, default=6, help="windows: days 1..N")
    parser.add_argument("--draws", type=int, default=DRAWS, help="placements per window")
    parser.add_argument("--movers", default=",".join(MOVERS),
                        help="comma-separated, of: " + ", ".join(MOVERS))  # fmt: skip
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    names = [n for n in args.movers.split(",") if n]
    unknown = [n for n in names if n not in MOVERS]
    if unknown:
        parser.error(f"unknown movers {unknown}; known: {list(MOVERS)}")
    # its table goes into the docs with a commit: a clean tree, and no benchmark beside it
    runguard.start_run(parser, args.allow_dirty)
    began = time.monotonic()
    trace = load(args.trace)
    rows: dict[str, list[float]] = {}
    evicted: dict[str, list[tuple[int, int, int]]] = {}
    all_runs: list[float] = []
    for seed in range(1, args.seeds + 1):
        w = window(trace, seed)
        per: dict[str, list[float]] = {}
        for draw in range(args.draws):
            found = study(w, draw, names)
            alone = found["none"]
            assert isinstance(alone, Outcome)
            runs = spells(alone.load, w.capacity)
            all_runs += [r for node in runs for r in node]
            print(f"window {seed} (steps {w.first_step}..{w.first_step + SECONDS // int(STEP)},"
                  f" {len(w.cpu_m)} pods, {found['pending']} pending, draw {draw}): hot spells "
                  f"per node, trace steps: "
                  + "; ".join(f"{i}: " + (" ".join(f"{r:.1f}" for r in node) or "-")
                              for i, node in enumerate(runs)))  # fmt: skip
            for name, got in found.items():
                if name == "pending":
                    continue
                value = got.over_100 if isinstance(got, Outcome) else got
                per.setdefault(name, []).append(float(value))
                if isinstance(got, Outcome) and name != "none":
                    evicted.setdefault(name, []).append(
                        (len(got.evictions), got.false_evictions, got.bounced)
                    )
        line = ", ".join(f"{n} {statistics.fmean(v):.0f}" for n, v in per.items())
        print(f"  node-s > 100 %: {line}")
        for n, v in per.items():
            rows.setdefault(n, []).append(statistics.fmean(v))
    runs_done = args.seeds * args.draws
    print(f"\nnode-seconds over 100 % per window (days 1..{args.seeds}, mean of {args.draws} "
          "placements), their mean, its ratio to none's; evictions a window, false and bounced "
          "shares of them:")  # fmt: skip
    base = statistics.fmean(rows["none"])
    for name, values in rows.items():
        mean = statistics.fmean(values)
        extra = ""
        if name in evicted:
            total, false, bounced = (sum(e[i] for e in evicted[name]) for i in range(3))
            extra = (f"  {total / runs_done:>5.1f} evictions, {pct(false, total)} false, "
                     f"{pct(bounced, total)} bounced")  # fmt: skip
        print(f"  {name:<22}" + "".join(f"{v:>6.0f}" for v in values)
              + f"  mean {mean:>6.1f}  x{mean / base if base else 0:.2f}{extra}")  # fmt: skip
    print("\nhot spells over 100 % (no rebalancer), by length in trace steps: spells, node-s")
    for name, count, seconds in histogram(all_runs):
        print(f"  {name:>7}: {count:>4} {seconds:>6}")
    print(f"({time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
