"""One round's plan: which pods leave which hot nodes, judged by the scheduler's own profile.

For each hot node (the hottest first), its eligible pods in victim order; for each pod, its
replacement (the same pod, unbound) is judged on the cluster as the scheduler will see it, the
moves planned before it in place (their replacements on their targets, requests for the fit
filters and predicted CPU as recently bound for the load scores), twice: with the victim (and
the earlier victims) terminating (when its controller recreates it; PodTopologySpread no longer
counts it, the other plugins still do) and with it deleted (where a replacement that fits
nowhere before waits for). In each the profile filters every node and scores the feasible ones,
as a cycle would. A target must be cold (or only not hot, when targetsMustBeCold is off), pass
the filters in both and stay under every high threshold with the pod's predicted use added;
and the hot node must not be the scheduler's pick in either, even with every node's CPU read up
to `loadMargin` points off ours, each the way that favours the hot node (the scheduler reads
the watcher a poll apart from the judge: margin.py), nor within the optional `scoreMargin`
points of the best node then, else the scheduler could put the replacement back, and the pod
stays. The load scores count recently bound pods as the scheduler's cycle does: the pods the
scheduler's profiles bound (their PodScheduled time) whose node's newest sample cannot show them
yet, besides the rebalancer's own moves (the hot node's relief counts only the latter). A node
stops losing pods once its predicted use is under its high thresholds, or at its per-node limit.
The replacement is predicted as the scheduler predicts a new pod (a profile's CPU never under its
floor); what the victim takes off its node is its profile without the floor (an idle victim
relieves nothing).

The replacement goes where the scheduler puts it: the best-scored of every feasible node, not of
the candidate targets alone, gets the relief booked on it, and a move is refused when the node
that would get it (or, at scale, any node that wins one of the samples the cycle may score:
landing.py) is the hot node, another hot node, one the pod pushes over high or one without
fresh figures, the load margin applied to these nodes as to the hot one. Every candidate is
judged and the cheapest set of approved moves that brings the node under high is taken
(selection.py). Each judged scheduler's pods by their own profile.

A saturated node (saturation.py: CPU samples pinned at capacity) is planned at `200 - saturated`
% CPU, at least: its measured use stops at 100 %, so the relief the set must bring is sized past
what the samples show, and its moves carry the reason `cpu-saturated`.

A GPU-hot node (gpuhot.py; profiles with GpuLoad) is hot for its GPU pods only: when it is
confirmed GPU-hot and not CPU-hot, only pods requesting a GPU resource are its candidates, one
move per round (the GPU figures show the relief only on later samples; the node rests after
it), to a target that is not GPU-hot itself; GpuLoad's filter and score, in the profile, judge
the target's GPUs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

from scheduler.backend.recent import RecentlyBound
from scheduler.framework import CPU, CycleState, NodeInfo, PodInfo, Snapshot, resources
from scheduler.framework.gpus import GpuStats
from scheduler.framework.profile import Profile, ScoreParts
from scheduler.framework.sampling import nodes_to_find
from scheduler.framework.snapshot import TrialEdit
from scheduler.rebalancer import gpuhot, limits, saturation, selection, victims
from scheduler.rebalancer.classify import COLD, HOT, NORMAL, Classification
from scheduler.rebalancer.landing import possible_winners
from scheduler.rebalancer.margin import LoadMargin
from scheduler.rebalancer.settings import RebalancerSettings

NO_TARGET, GOES_BACK, RELIEVED = "no-target", "scheduler-would-return-it", "relieved"
ELSEWHERE = "scheduler-would-place-elsewhere"
TOO_LITTLE, NOT_CHOSEN = "too-little-relief", "not-chosen"

# The scheduler's RecentlyBound defaults (its --provider-lag and --recent-max-age): a bound pod
# counts on its node until the node's newest sample is this much later than the bind, and no
# longer than the max age after it. Each is the rebalancer's own flag of that name when given
# (Judge's `provider_lag` and `recent_max_age`): scaled in the benchmarks as the scheduler's.
PROVIDER_LAG_S = RecentlyBound().provider_lag
RECENT_MAX_AGE_S = RecentlyBound().max_age


@dataclass
class Move:
    pod: PodInfo
    workload: victims.Workload
    source: str
    target: str
    source_usage: dict[str, float]  # % before, per resource
    source_after: dict[str, float]  # predicted % once every planned move left
    target_usage: dict[str, float]
    target_after: dict[str, float]
    share: dict[str, float]  # the pod's predicted % of the source
    high: dict[str, float]
    # gpuhot.GPU_HOT when it relieves the node's GPUs, saturation.SATURATED when its CPU is
    # pinned at capacity, "" for the other CPU rules
    reason: str = ""

    def note(self) -> str:
        r = CPU if CPU in self.high else next(iter(self.high))
        if self.reason == gpuhot.GPU_HOT:
            return f"{self.source} GPU-hot; {self.pod.key} uses a GPU; fits {self.target}"
        pinned = " saturated, planned at" if self.reason == saturation.SATURATED else ""
        return (
            f"{self.source} {r}{pinned} {self.source_usage[r]:.1f}% > high {self.high[r]:.1f}%; "
            f"{self.pod.key} predicted {self.share[r]:.1f}%; fits {self.target} "
            f"({self.target_usage[r]:.1f}% -> {self.target_after[r]:.1f}%)"
        )


@dataclass
class Skip:
    node: str
    pod: str  # namespace/name, "" for the node as a whole
    reason: str
    detail: str = ""


@dataclass
class Plan:
    moves: list[Move] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)


def terminating(pod: PodInfo) -> PodInfo:
    """The victim as the scheduler sees it once evicted: the same pod, being deleted."""
    meta = dict(pod.raw.get("metadata") or {})
    meta["deletionTimestamp"] = meta.get("deletionTimestamp") or "1970-01-01T00:00:00Z"
    return resources.pod_info({**pod.raw, "metadata": meta})


def bound_at(pod: PodInfo) -> float:
    """When the pod was bound: its PodScheduled condition's time (the API server sets it on the
    binding); 0.0 when it has none."""
    for cond in (pod.raw.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return resources.parse_time(cond.get("lastTransitionTime"))
    return 0.0


def replacement_of(pod: PodInfo) -> PodInfo:
    """The pod as its controller will recreate it: unbound, pending, a uid of its own."""
    raw = pod.raw
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k != "deletionTimestamp"}
    meta["uid"] = f"{pod.uid}-replacement"
    spec = {k: v for k, v in (raw.get("spec") or {}).items() if k != "nodeName"}
    return resources.pod_info(
        {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {}}
    )


class Judge:
    def __init__(
        self,
        profile: Profile,
        settings: RebalancerSettings,
        estimator: victims.Estimator,
        busy: Callable[[victims.Workload], bool],
        gpu_names: tuple[str, ...] = (),
        aside: Callable[[PodInfo], str] = lambda pod: "",
        profiles: dict[str, Profile] | None = None,
        percentage: int = 0,
        provider_lag: float = PROVIDER_LAG_S,
        recent_max_age: float = RECENT_MAX_AGE_S,
    ) -> None:
        """`profiles`: each judged scheduler's own profile (a pod is judged by the profile of
        its schedulerName; `profile` for the others); `percentage`: the scheduler's
        percentageOfNodesToScore (0: upstream's adaptive share); `provider_lag`,
        `recent_max_age`: the scheduler's --provider-lag and --recent-max-age, as the rebalancer
        is told them (its own flags)."""
        self.profile = profile
        self.provider_lag = provider_lag
        self.recent_max_age = recent_max_age
        self.profiles = profiles or {profile.scheduler_name: profile}
        self.percentage = percentage
        self.settings = settings
        self.estimator = estimator
        # What a victim takes off its node is what it uses now: its profile without the floor
        # that guards a new replica's prediction (an idle victim relieves nothing).
        self.leaving = estimator.with_args(replace(estimator.args, profile_floor=0.0))
        self.busy = busy
        self.aside = aside  # why a pod whose eviction failed lately is passed over; "" if not
        self.gpu_names = gpu_names  # GpuLoad's resourceNames: the pods a GPU-hot node may lose
        self.gpu_hot: dict[str, list[GpuStats]] = {}
        self.gpu_only: frozenset[str] = frozenset()
        self.margin = LoadMargin({}, 0.0)

    def plan(
        self,
        view: Classification,
        hot: list[str],
        snap: Snapshot,
        gpu_hot: dict[str, list[GpuStats]] | None = None,
        gpu_only: frozenset[str] = frozenset(),
    ) -> Plan:
        """`gpu_hot`: the GPU-hot nodes (with their hot GPUs), never targets; `gpu_only`: the
        nodes of `hot` confirmed GPU-hot and not CPU-hot, which lose GPU pods only."""
        self.gpu_hot = gpu_hot or {}
        self.gpu_only = gpu_only
        self.margin = LoadMargin(snap.loads, self.settings.load_margin)
        out = Plan()
        budget = limits.RoundBudget(self.settings)
        edits: list[TrialEdit] = []
        recent = dict(snap.recent_cpu_m)
        # Our own moves (replacements.py: pending on their targets, then where they were bound)
        # and the pods the scheduler bound lately overlap once a replacement is bound: the
        # larger of the two per node, never their sum.
        for name, cpu_m in self.recently_bound(snap).items():
            snap.recent_cpu_m[name] = max(snap.recent_cpu_m.get(name, 0), cpu_m)
        # The filters and scores see what the scheduler sees; a hot node's relief counts what
        # its samples show (and our moves, as before): a pod bound there seconds ago is a
        # prediction, and the rebalancer evicts on measured load, not on a guess.
        counted = {n: (recent if n in hot else snap.recent_cpu_m).get(n, 0) for n in snap.nodes}
        usage = self._planned_usage(view, snap, counted)
        try:
            for name in sorted(hot, key=lambda n: -max(view.excess(n).values(), default=0.0)):
                node = snap.nodes.get(name)
                if node is None:
                    continue
                if not self._relieve(node, view, snap, usage, budget, edits, out):
                    break  # the round's budget is spent
        finally:
            for edit in reversed(edits):
                edit.restore()
            snap.recent_cpu_m.clear()
            snap.recent_cpu_m.update(recent)
        return out

    def recently_bound(self, snap: Snapshot) -> dict[str, int]:
        """Predicted CPU millicores per node of the pods the scheduler bound too recently for
        the node's metrics to show, as its own RecentlyBound counts them: bound (PodScheduled)
        less than its max age ago and not yet covered by a sample later than the bind plus the
        provider's lag. Only the scheduler's pods (the judged schedulerNames): another
        scheduler's binds are not in its record."""
        ours = {*self.settings.schedulers, self.profile.scheduler_name}
        out: dict[str, int] = {}
        for node in snap.nodes.values():
            load = snap.loads.get(node.name)
            stats = load.metrics.get(CPU) if load is not None else None
            shown = stats.last_sample - self.provider_lag if stats is not None else float("-inf")
            for pod in node.pods.values():
                if pod.scheduler_name not in ours:
                    continue
                at = bound_at(pod)
                if at and at >= shown and snap.now - at <= self.recent_max_age:
                    out[node.name] = out.get(node.name, 0) + int(self.estimator.use(pod, CPU))
        return out

    def _planned_usage(
        self, view: Classification, snap: Snapshot, counted: dict[str, int]
    ) -> dict[str, dict[str, float]]:
        """Use per node and resource, CPU with `counted` millicores bound too recently to show;
        a saturated node's CPU at least what the clamp may hide (saturation.planned_use)."""
        usage = copy.deepcopy(view.usage)
        floor = saturation.planned_use(self.settings.saturated)
        for name, values in usage.items():
            node = snap.nodes.get(name)
            recent = counted.get(name, 0)
            if node is not None and CPU in values and recent:
                values[CPU] += 100.0 * recent / max(1, node.allocatable.get(CPU, 0))
            if name in view.saturated and CPU in values and self.settings.saturated:
                values[CPU] = max(values[CPU], floor)
        return usage

    def _relieve(
        self,
        node: NodeInfo,
        view: Classification,
        snap: Snapshot,
        usage: dict[str, dict[str, float]],
        budget: limits.RoundBudget,
        edits: list[TrialEdit],
        out: Plan,
    ) -> bool:
        """Plan moves off one hot node; False when the round's budget ran out."""
        est, leaving = self.estimator, self.leaving
        if node.name not in usage:
            return True  # no fresh CPU figures: nothing to judge a move by
        before = dict(usage[node.name])
        # Hot for GPU pods only: confirmed on its GPUs, not on its CPU.
        gpu = node.name in self.gpu_only
        pods = list(node.pods.values())
        if gpu:
            pods = gpuhot.gpu_candidates(pods, self.gpu_names, self.gpu_hot.get(node.name, ()))
        candidates = []
        for pod in pods:
            why = victims.ineligible(pod, self.settings)
            if why:
                out.skips.append(Skip(node.name, pod.key, why))
            else:
                candidates.append(pod)
        excess = view.excess(node.name)
        ordered = victims.order(candidates, excess, lambda p, r: leaving.percent(p, node, r))
        if gpu:
            ordered = candidates  # gpu_candidates' order: the pods on a hot GPU first
        if not ordered:
            out.skips.append(Skip(node.name, "", NO_TARGET, "no pod may be moved"))
        gpu_moves = 0
        passed: list[tuple[PodInfo, victims.Workload]] = []
        for pod in ordered:
            workload = victims.workload_of(pod)
            assert workload is not None  # eligible pods have a controller
            refused = budget.refusal(node.name, pod.namespace, workload)
            if refused == limits.PER_ROUND:
                out.skips.append(Skip(node.name, pod.key, refused))
                return False
            if refused == limits.PER_NODE:
                out.skips.append(Skip(node.name, pod.key, refused))
                return True
            if refused:
                out.skips.append(Skip(node.name, pod.key, refused))
                continue
            failed = self.aside(pod)
            if failed:
                out.skips.append(Skip(node.name, pod.key, failed, "its eviction failed lately"))
                continue
            if self.busy(workload):
                out.skips.append(Skip(node.name, pod.key, limits.WORKLOAD_UNAVAILABLE))
                continue
            passed.append((pod, workload))
        if not gpu:
            passed = self._choose(node, passed, view, snap, usage, budget, out)
        for pod, workload in passed:
            if gpu_moves if gpu else not self._over(usage[node.name], view):
                break
            if budget.refusal(node.name, pod.namespace, workload):
                break  # the chosen set was sized to the limits; a workload twice is not
            replacement = replacement_of(pod)
            target, detail = self._target(pod, replacement, node, view, snap, usage, out.moves)
            if target is None:
                out.skips.append(Skip(node.name, pod.key, detail[0], detail[1]))
                continue
            share = {r: leaving.percent(pod, node, r) for r in usage[node.name]}
            moved = {r: est.percent(replacement, target, r) for r in usage[node.name]}
            target_before = dict(usage[target.name])
            for r in usage[node.name]:
                usage[node.name][r] -= share[r]
                usage[target.name][r] += moved[r]
            # Counted on the target for the next victims' filters and scores.
            trial = TrialEdit(snap, target)
            trial.add(replacement)
            edits.append(trial)
            leave = TrialEdit(snap, node)
            leave.remove(pod)
            edits.append(leave)
            snap.recent_cpu_m[target.name] = snap.recent_cpu_m.get(target.name, 0) + est.use(
                replacement, CPU
            )
            budget.spend(node.name, pod.namespace, workload)
            out.moves.append(
                Move(
                    pod,
                    workload,
                    node.name,
                    target.name,
                    before,
                    {},
                    target_before,
                    dict(usage[target.name]),
                    share,
                    dict(view.high),
                    self._reason(node.name, view, gpu),
                )
            )
            gpu_moves += 1
        for move in out.moves:
            if move.source == node.name:
                move.source_after = dict(usage[node.name])
        return True

    def _choose(
        self,
        node: NodeInfo,
        passed: list[tuple[PodInfo, victims.Workload]],
        view: Classification,
        snap: Snapshot,
        usage: dict[str, dict[str, float]],
        budget: limits.RoundBudget,
        out: Plan,
    ) -> list[tuple[PodInfo, victims.Workload]]:
        """Every candidate judged, then the cheapest set of approved moves that brings the node
        under high (selection.py), in the order to make them; the others skipped with why."""
        s = self.settings
        need = {r: v - view.high[r] for r, v in usage[node.name].items() if v > view.high[r]}
        if not need:
            return []
        room = min(
            s.max_per_node - budget.per_node.get(node.name, 0), s.max_per_round - budget.total
        )
        main = max(need, key=lambda r: need[r])
        judged: list[tuple[PodInfo, victims.Workload, dict[str, float]]] = []
        reliefs = [
            (pod, workload, {r: self.leaving.percent(pod, node, r) for r in usage[node.name]})
            for pod, workload in passed
        ]
        # The most relieving first, and no more approved than the set search looks at: each
        # judgement filters and scores the whole cluster twice.
        reliefs.sort(key=lambda pwr: -pwr[2][main])
        for pod, workload, relief in reliefs:
            if len(judged) >= selection.MAX_OPTIONS:
                out.skips.append(Skip(node.name, pod.key, NOT_CHOSEN, "more relieving moves"))
                continue
            if relief[main] < s.min_relief:
                detail = f"predicted {relief[main]:.1f} points of {main} off the node"
                out.skips.append(Skip(node.name, pod.key, TOO_LITTLE, detail))
                continue
            target, why = self._target(pod, replacement_of(pod), node, view, snap, usage, out.moves)
            if target is None:
                out.skips.append(Skip(node.name, pod.key, why[0], why[1]))
                continue
            judged.append((pod, workload, relief))
        if not judged:
            return []
        prices = selection.costs(
            [p.priority for p, _, _ in judged],
            [victims.QOS_RANK[victims.qos_class(p)] for p, _, _ in judged],
        )
        options = [
            selection.Option(pod.key, relief, cost)
            for (pod, _, relief), cost in zip(judged, prices, strict=True)
        ]
        chosen = [o.key for o in selection.choose(options, need, room)]
        by_key = {pod.key: (pod, workload) for pod, workload, _ in judged}
        for pod, _, _ in judged:
            if pod.key not in chosen:
                out.skips.append(Skip(node.name, pod.key, NOT_CHOSEN, "a cheaper set relieves"))
        return [by_key[k] for k in chosen]

    @staticmethod
    def _reason(node: str, view: Classification, gpu: bool) -> str:
        if gpu:
            return gpuhot.GPU_HOT
        return saturation.SATURATED if node in view.saturated else ""

    @staticmethod
    def _over(values: dict[str, float], view: Classification) -> bool:
        return any(v > view.high[r] for r, v in values.items())

    def _target(
        self,
        pod: PodInfo,
        replacement: PodInfo,
        source: NodeInfo,
        view: Classification,
        snap: Snapshot,
        usage: dict[str, dict[str, float]],
        earlier: list[Move],
    ) -> tuple[NodeInfo | None, tuple[str, str]]:
        allowed = (COLD,) if self.settings.targets_must_be_cold else (COLD, NORMAL)
        candidates = {
            n.name
            for n in snap.nodes.values()
            if n.name != source.name
            and view.state.get(n.name) in allowed
            and n.name not in self.gpu_hot
        }
        if not candidates:
            which = "cold" if self.settings.targets_must_be_cold else "cool enough"
            return None, (NO_TARGET, f"no {which} node with fresh data")
        # The scheduler meets the replacement with the victim terminating (its controller
        # recreates it then): PodTopologySpread no longer counts the victim; InterPodAffinity,
        # NodePorts, the volume plugins and the fit filters still do. If nothing is feasible
        # then, the replacement waits for the deletion and meets a cluster without it. Either
        # way the moves planned before it are in place (their victims terminating too, or
        # deleted). A move must hold in both: a target in both, the hot node not the
        # scheduler's best in either.
        with TrialEdit(snap, source) as gone:
            gone.remove(pod)
            deleted = self._view(replacement, source.name, candidates, view, snap, usage)
            if not deleted.fits:
                detail = f"{deleted.passing} of {len(candidates)} candidates pass the filters"
                return None, (NO_TARGET, detail + "; none stays under high with the pod")
            with ExitStack() as dies:
                for victim, node in [*((m.pod, m.source) for m in earlier), (pod, source.name)]:
                    dies.enter_context(TrialEdit(snap, snap.nodes[node])).add(terminating(victim))
                dying = self._view(replacement, source.name, candidates, view, snap, usage)
        views = [(deleted, "")]
        if dying.feasible:
            views.append((dying, " while it terminates"))
        common = set(deleted.fits).intersection(*(v.fits for v, _ in views))
        if not common:
            detail = f"{dying.passing} of {len(candidates)} candidates pass the filters while it "
            return None, (NO_TARGET, detail + "terminates; none fits both then and once deleted")
        # The scheduler's pick: the best of every feasible node, not of our candidates alone (a
        # third node can outscore the target, and the relief goes where the pod goes).
        first = views[-1][0]  # the view the scheduler most likely decides in
        best = max((n for n in first.order if n != source.name), key=lambda n: (first.scores[n], n))
        # Each view as the scheduler may read it, a poll later (margin.py): every node the
        # replacement may land on at its lowest, the others at their highest. At scale a cycle
        # scores a sample: every node that wins one may get the replacement, and each must be
        # one it may land on (never the source, a hot node, or one the pod would push over high).
        sample = nodes_to_find(len(snap.nodes), self.percentage)
        apart = self.settings.score_margin
        for v, when in views:
            seen = v.seen
            note = self._read_off(when)
            back = seen.get(source.name)
            rest = [n for n in v.order if n != source.name]
            top = max(rest, key=lambda n: (seen[n], n)) if rest else None
            if back is not None and top is not None and seen[top] - back <= apart:
                detail = f"{source.name} scores {back}, {top} {seen[top]}{note}"
                if apart:
                    detail += f": not more than {apart} points apart"
                return None, (GOES_BACK, detail)
            won = possible_winners([seen[n] for n in v.order], sample)
            winners = sorted((v.order[i] for i in won), key=lambda n: (-seen[n], n))
            if source.name in winners:
                detail = f"{source.name} scores {seen[source.name]}, the best of a sample{note}"
                return None, (GOES_BACK, detail)
            unsafe = [n for n in [best, *winners] if n not in v.safe]
            if unsafe:
                other = unsafe[0]
                state = view.state.get(other, "unknown")
                detail = (
                    f"{other} ({state}; with the pod over high or not known) scores "
                    f"{seen.get(other, '-')}{note}: the scheduler may place it there"
                )
                return None, (ELSEWHERE, detail)
        return snap.nodes[best], ("", "")

    def _read_off(self, when: str) -> str:
        """How the scores of a refusal were read: the state, and the load margin when on."""
        if not self.margin.readings:
            return when
        return f"{when}, CPU read up to {self.margin.points:g} points off (loadMargin)"

    def _view(
        self,
        replacement: PodInfo,
        source: str,
        candidates: set[str],
        view: Classification,
        snap: Snapshot,
        usage: dict[str, dict[str, float]],
    ) -> _View:
        """The profile on the snapshot as it is now: every node filtered, the feasible ones
        scored together, as a cycle does (normalised scores depend on the set scored, so a
        subset could rank the hot node and the targets otherwise); then scored again with the
        CPU read `loadMargin` off (`seen`)."""
        state = CycleState()
        profile = self.profiles.get(replacement.scheduler_name, self.profile)
        feasible, _ = profile.filter(replacement, list(snap.nodes.values()), snap, state)
        out = _View(feasible=len(feasible), order=[n.name for n in feasible])
        for n in feasible:
            if n.name not in usage or n.name in self.gpu_hot or view.state.get(n.name) == HOT:
                continue
            after = {
                r: v + self.estimator.percent(replacement, n, r) for r, v in usage[n.name].items()
            }
            under = all(after[r] < view.high[r] for r in after)
            if under:
                out.safe.add(n.name)
            if n.name not in candidates:
                continue
            out.passing += 1
            if under:
                out.fits.append(n.name)
        if len(feasible) == 1:
            out.scores = out.seen = {feasible[0].name: 0}
        elif feasible and out.fits:
            parts = ScoreParts()
            out.scores = profile.score(replacement, feasible, snap, state, parts)
            # The scheduler may read every node's CPU a poll apart from us (margin.py).
            favoured = out.safe - {source}
            out.seen = self.margin.worst(profile, replacement, feasible, snap, parts, favoured)
        return out


@dataclass
class _View:
    feasible: int  # nodes passing the filters
    order: list[str] = field(default_factory=list)  # their names, in the cluster's node order
    passing: int = 0  # of them, candidate targets
    fits: list[str] = field(default_factory=list)  # of those, the ones that stay under high
    # feasible nodes the replacement may land on: known, not hot, under high with it
    safe: set[str] = field(default_factory=set)
    scores: dict[str, int] = field(default_factory=dict)  # every feasible node's
    # the scores against the move with the CPU read up to loadMargin off (margin.py)
    seen: dict[str, int] = field(default_factory=dict)
