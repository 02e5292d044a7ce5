"""Where a planned move's replacement lands: the scheduler's own cycle replayed on the cluster the
judge planned it on, against the judge's prediction.

The truth is the scheduler's cycle (scheduler/cycle.py) run in process on the same snapshot:
the same profile and plugins, its filter pass with percentageOfNodesToScore (from a start in
the node order the rebalancer cannot know: each replay draws one), its weighted totals over the
nodes that pass scored together, and its pick (ties at random). The replacement meets the
cluster as the judge assumes it will: the moves planned before it in place (their replacements
bound on the judge's targets and counted as recently bound, their victims terminating) and its
own victim terminating; when nothing is feasible then, every victim deleted (the pod waits for
that), as the judge's two views have them. What the replay cannot show is the few seconds of
newer load the scheduler reads.

Per replay: `exact`, the cycle picked the judge's target (where the relief is booked); `tie`,
the target was in the cycle's sample with the best total, tied with the pick (or was it);
`predicted`, it picked a node the judge counted as a possible winner (landing.py: the best of
some sample, scored over every feasible node); `not_hot_nor_source`; `safe`, neither hot nor the
source and under every high threshold with the pod's predicted use added (and the earlier
moves' replacements booked where the judge booked them).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from scheduler.cycle import filter_pass, pick_best
from scheduler.framework import CPU, CycleState, PodInfo, Snapshot
from scheduler.framework.profile import Profile
from scheduler.framework.sampling import nodes_to_find
from scheduler.framework.snapshot import TrialEdit
from scheduler.rebalancer.classify import HOT, Classification
from scheduler.rebalancer.judge import Move, replacement_of, terminating
from scheduler.rebalancer.landing import possible_winners
from scheduler.rebalancer.victims import Estimator

CHECKS = ("exact", "tie", "predicted", "not_hot_nor_source", "safe")


@dataclass(frozen=True)
class Landing:
    node: str  # where the cycle put the replacement
    exact: bool
    tie: bool  # the judge's target was in the cycle's sample, tied with its pick
    predicted: bool
    not_hot_nor_source: bool
    safe: bool


@contextmanager
def met(snap: Snapshot, moves: list[Move], k: int, est: Estimator, dying: bool) -> Iterator[None]:
    """The snapshot as the scheduler meets move k's replacement (see the module's docstring);
    `dying`: its victim terminating, else deleted. Everything is put back on exit."""
    recent = dict(snap.recent_cpu_m)
    try:
        with ExitStack() as edits:
            for m in moves[:k]:
                replacement = replacement_of(m.pod)
                edits.enter_context(TrialEdit(snap, snap.nodes[m.target])).add(replacement)
                snap.recent_cpu_m[m.target] = snap.recent_cpu_m.get(m.target, 0) + est.use(
                    replacement, CPU
                )
            for m in moves[: k + 1]:
                edits.enter_context(TrialEdit(snap, snap.nodes[m.source])).remove(m.pod)
                if dying:
                    edit = edits.enter_context(TrialEdit(snap, snap.nodes[m.source]))
                    edit.add(terminating(m.pod))
            yield
    finally:
        snap.recent_cpu_m.clear()
        snap.recent_cpu_m.update(recent)


def cycle_pick(
    profile: Profile,
    pod: PodInfo,
    snap: Snapshot,
    percentage: int,
    start: int,
    rng: random.Random,
) -> tuple[str, set[str]] | None:
    """The node the scheduler's cycle picks for `pod`, filtering from `start`, and every node of
    its sample tied with it (None: none fits). The cycle's own steps (Cycle._filter, then totals
    and pick_best), without its queue and cache."""
    nodes = list(snap.nodes.values())
    state = CycleState()
    if nodes_to_find(len(nodes), percentage) >= len(nodes):
        feasible, _ = profile.filter(pod, nodes, snap, state)
    else:
        feasible, _, _ = filter_pass(profile, pod, nodes, snap, state, start, percentage)
    if not feasible:
        return None
    if len(feasible) == 1:
        return feasible[0].name, {feasible[0].name}
    names, totals = profile.totals(pod, feasible, snap, state)
    best = pick_best(totals, rng)
    return names[best], {n for n, t in zip(names, totals, strict=True) if t == totals[best]}


def winners(profile: Profile, pod: PodInfo, snap: Snapshot, percentage: int) -> set[str]:
    """The judge's prediction set on this snapshot: every feasible node scored together, the best
    of each sample the cycle may draw (landing.possible_winners)."""
    nodes = list(snap.nodes.values())
    state = CycleState()
    feasible, _ = profile.filter(pod, nodes, snap, state)
    if len(feasible) <= 1:
        return {n.name for n in feasible}
    scores = profile.score(pod, feasible, snap, state)
    order = [n.name for n in feasible]
    sample = nodes_to_find(len(nodes), percentage)
    return {order[i] for i in possible_winners([scores[n] for n in order], sample)}


def replay(
    profile: Profile,
    est: Estimator,
    view: Classification,
    snap: Snapshot,
    moves: list[Move],
    percentage: int,
    starts: int,
    rng: random.Random,
) -> list[list[Landing]]:
    """Each move's replacement placed by the cycle `starts` times, each from a random start;
    per move, in the plan's order (fewer when nothing is feasible)."""
    out: list[list[Landing]] = []
    booked: dict[str, float] = {}  # node -> CPU points of earlier replacements the judge put there
    for k, move in enumerate(moves):
        pod = replacement_of(move.pod)
        dying = True
        with met(snap, moves, k, est, dying=True):
            if not profile.filter(pod, list(snap.nodes.values()), snap, CycleState())[0]:
                dying = False
        got: list[Landing] = []
        with met(snap, moves, k, est, dying):
            predicted = winners(profile, pod, snap, percentage)
            for _ in range(starts):
                start = rng.randrange(len(snap.nodes))
                picked = cycle_pick(profile, pod, snap, percentage, start, rng)
                if picked is None:
                    continue
                node, tied = picked
                clear = node != move.source and view.state.get(node) not in (HOT, None)
                after = view.usage.get(node, {}).get(CPU, 100.0) + booked.get(node, 0.0)
                after += est.percent(pod, snap.nodes[node], CPU)
                safe = clear and after < view.high.get(CPU, 100.0)
                exact, tie = node == move.target, move.target in tied
                got.append(Landing(node, exact, tie, node in predicted, clear, safe))
        out.append(got)
        booked[move.target] = booked.get(move.target, 0.0) + est.percent(
            pod, snap.nodes[move.target], CPU
        )
    return out


def rates(landings: list[Landing]) -> dict[str, float | int]:
    """The share of replays passing each check, and how many replays there were."""
    n = len(landings)
    out: dict[str, float | int] = {"replays": n}
    for check in CHECKS:
        out[check] = round(sum(getattr(x, check) for x in landings) / n, 4) if n else 0.0
    return out
