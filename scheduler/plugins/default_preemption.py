"""DefaultPreemption: a PostFilter that frees room for a pod that fits nowhere.

Upstream's semantics (defaultpreemption + framework/preemption, v1.34):
- only pods allowed to preempt (not `preemptionPolicy: Never`; not while victims of an earlier
  preemption for it still terminate on its nominated node);
- candidate nodes are those rejected for reasons a removal could help (not "unresolvable"),
  tried from a random offset until `numCandidates` are found, at least one without PDB
  violation: max(nodes * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute);
- on each node: every lower-priority pod is removed, the pod must then pass the profile's own
  filters; victims are then reprieved one by one, most important first (PDB-violating ones
  before the others), and whoever can stay stays;
- the node: fewest PDB violations, lowest highest-victim priority, smallest priority sum,
  fewest victims, latest start time of the highest-priority victims.
Ballast adds, after those (`loadAwareTieBreak`, on by default): the node whose measured CPU
load after the eviction is lowest, then the node name (upstream takes whichever came first).
And it never picks a `kube-system` pod of a system priority as a victim.

The plugin does no I/O: it returns the node and the victims; scheduler/kube/evictor.py deletes
them through the API.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from scheduler.framework import (
    CPU,
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    UNRESOLVABLE_NODES,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    PostFilterResult,
    Snapshot,
    Status,
    TrialEdit,
    resources,
)
from scheduler.framework.clusterindex import PDBS
from scheduler.framework.labels import LabelSelector
from scheduler.framework.status import failure_message
from scheduler.plugins.helpers import loadview
from scheduler.plugins.helpers.estimator import estimate

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "DefaultPreemption"
# Upstream's scheduling.SystemCriticalPriority: system-cluster-critical and above.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
SYSTEM_NAMESPACE = "kube-system"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
MESSAGE_PREFIX = "preemption: "  # upstream's, before the plugin's own message
PDBS_UNSYNCED = "waiting for the scheduler's poddisruptionbudgets cache to sync"
_INT32_SPAN = 2**31  # upstream adds MaxInt32+1 to each priority before summing
_PREDICTED = NAME + ".predicted_cpu_m"
_STARTED = NAME + ".start_time"
_UNPARSED = object()


@dataclass(frozen=True)
class Args:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100
    load_aware_tie_break: bool = True  # Ballast's; off gives upstream's order alone


def parse_args(f: Fields) -> Args:
    d = Args()
    args = Args(
        min_candidate_nodes_percentage=f.integer(
            "minCandidateNodesPercentage", d.min_candidate_nodes_percentage, 0, 100
        ),
        min_candidate_nodes_absolute=f.integer(
            "minCandidateNodesAbsolute", d.min_candidate_nodes_absolute, 0
        ),
        load_aware_tie_break=f.boolean("loadAwareTieBreak", d.load_aware_tie_break),
    )
    if args.min_candidate_nodes_percentage == 0 and args.min_candidate_nodes_absolute == 0:
        raise f.error(
            "minCandidateNodesAbsolute",
            "minCandidateNodesPercentage and minCandidateNodesAbsolute must not both be 0",
        )
    f.finish()
    return args


@dataclass(frozen=True)
class Candidate:
    node: str
    victims: tuple[PodInfo, ...]  # most important first
    pdb_violations: int
    start_times: tuple[float, ...]  # the victims' start times, in the same order
    load_after: float = 0.0  # percent of the node's CPU once the victims are gone


# --- pure parts ----------------------------------------------------------------------------
def start_time(pod: PodInfo, now: float) -> float:
    """status.startTime in Unix seconds; a pod that has not started counts as starting now.
    Parsed once per pod (every candidate node sorts its pods by it)."""
    found = pod.memo.get(_STARTED, _UNPARSED)
    if found is _UNPARSED:
        text = (pod.raw.get("status") or {}).get("startTime")
        found = pod.memo[_STARTED] = resources.parse_time(text) if text else None
    return now if found is None else found


def importance(pod: PodInfo, now: float) -> tuple[int, float]:
    """Sort key, most important first: higher priority, then earlier start (MoreImportantPod)."""
    return (-pod.priority, start_time(pod, now))


def may_preempt(victim: PodInfo, preemptor: PodInfo) -> bool:
    """Strictly lower priority, and never a system-critical pod of kube-system."""
    if victim.priority >= preemptor.priority:
        return False
    return not (
        victim.namespace == SYSTEM_NAMESPACE and victim.priority >= SYSTEM_CRITICAL_PRIORITY
    )


def num_candidates(nodes: int, args: Args) -> int:
    n = nodes * args.min_candidate_nodes_percentage // 100
    return min(max(n, args.min_candidate_nodes_absolute), nodes)


def split_by_pdb(
    pods: Sequence[PodInfo], pdbs: Iterable[dict[str, Any]]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, not violating): each matching PDB's disruptionsAllowed is spent in the given
    order; a pod already listed in a PDB's disruptedPods spends nothing. A PDB with an empty,
    null or invalid selector matches nothing, as upstream."""
    budgets = []
    for pdb in pdbs:
        meta = pdb.get("metadata") or {}
        status = pdb.get("status") or {}
        try:
            selector = LabelSelector.parse((pdb.get("spec") or {}).get("selector"))
        except ValueError:
            continue
        if selector.nothing or selector.everything:
            continue
        budgets.append(
            [
                meta.get("namespace", ""),
                selector,
                status.get("disruptedPods") or {},
                int(status.get("disruptionsAllowed") or 0),
            ]
        )
    violating: list[PodInfo] = []
    fine: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for budget in budgets:
                namespace, selector, disrupted, _ = budget
                if namespace != pod.namespace or not selector.matches(pod.labels):
                    continue
                if pod.name in disrupted:
                    continue
                budget[3] -= 1
                if budget[3] < 0:
                    violated = True
        (violating if violated else fine).append(pod)
    return violating, fine


def order_key(c: Candidate, load_aware: bool) -> tuple[Any, ...]:
    """Smaller is better: upstream's pickOneNodeForPreemption criteria in their order, then
    Ballast's load after eviction (when on), then the name."""
    return (*upstream_key(c), round(c.load_after, 6) if load_aware else 0.0, c.node)


def upstream_key(c: Candidate) -> tuple[Any, ...]:
    """Upstream's criteria alone: PDB violations, highest victim priority, sum of priorities,
    number of victims, latest start among the highest-priority victims."""
    top = c.victims[0].priority
    earliest = min(t for v, t in zip(c.victims, c.start_times, strict=True) if v.priority == top)
    return (
        c.pdb_violations,
        top,
        sum(v.priority + _INT32_SPAN for v in c.victims),
        len(c.victims),
        -earliest,
    )


def pick(
    candidates: Sequence[Candidate],
    load_aware: bool = True,
    load_of: Callable[[Candidate], float] | None = None,
) -> Candidate:
    """The best candidate by `order_key`. The load after eviction (`load_of`, else the
    candidate's own `load_after`) is asked only of the candidates tied on upstream's criteria:
    it decides among those alone, so the rest never need it (a preemption weighs 100 candidates
    or more, and upstream's start times seldom tie)."""
    if not load_aware:
        return min(candidates, key=lambda c: order_key(c, False))
    keyed = [(upstream_key(c), c) for c in candidates]
    best = min(k for k, _ in keyed)
    tied = [c for k, c in keyed if k == best]
    if len(tied) == 1:
        return tied[0]
    if load_of is not None:
        tied = [replace(c, load_after=load_of(c)) for c in tied]
    return min(tied, key=lambda c: order_key(c, True))


# --- the plugin --------------------------------------------------------------------------
class Plugin:
    name = NAME

    def __init__(self, args: Args | None = None, rng: random.Random | None = None) -> None:
        self.args = args or Args()
        self.rng = rng or random.Random()

    def post_filter(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rejected: dict[str, list[str]],
        handle: Handle,
    ) -> PostFilterResult:
        why = self.not_eligible(pod, snap, handle)
        if why:
            return PostFilterResult(message=MESSAGE_PREFIX + why)  # a nomination stands
        if PDBS not in snap.cluster.synced:
            # The budgets steer the choice of victims: none is chosen before they are listed
            # (the scheduler starts once nodes and pods are; the list's arrival is a cluster
            # change, which retries the pod), as kube-scheduler waits for every informer.
            return PostFilterResult(message=MESSAGE_PREFIX + PDBS_UNSYNCED)
        unresolvable = state.get(UNRESOLVABLE_NODES, set())
        potential = [
            snap.nodes[name] for name in rejected if name not in unresolvable and name in snap.nodes
        ]
        candidates, statuses = self.find_candidates(pod, potential, snap, handle)
        if not candidates:
            total = len(snap.nodes)
            for name in snap.nodes:
                statuses.setdefault(name, [NOT_HELPFUL])
            message = MESSAGE_PREFIX + failure_message(total, statuses)
            return PostFilterResult(message=message, clear=True)
        best = pick(candidates, self.args.load_aware_tie_break, lambda c: self._load_after(c, snap))
        return PostFilterResult(nominated_node=best.node, victims=best.victims)

    def not_eligible(self, pod: PodInfo, snap: Snapshot, handle: Handle) -> str:
        """Upstream's PodEligibleToPreemptOthers; "" when the pod may preempt."""
        if (pod.raw.get("spec") or {}).get("preemptionPolicy") == "Never":
            return NEVER
        nominated = snap.nodes.get(handle.nominated_node(pod))
        if nominated is not None:
            for other in nominated.pods.values():
                if may_preempt(other, pod) and terminating_by_preemption(other):
                    return TERMINATING
        return ""

    def find_candidates(
        self, pod: PodInfo, potential: list[NodeInfo], snap: Snapshot, handle: Handle
    ) -> tuple[list[Candidate], dict[str, list[str]]]:
        """Dry run over the potential nodes from a random offset (upstream's DryRunPreemption,
        sequential): stop once enough candidates are found and one of them violates no PDB."""
        statuses: dict[str, list[str]] = {}
        if not potential:
            return [], statuses
        pdbs = list(snap.cluster.objects.get(PDBS, {}).values())
        wanted = num_candidates(len(potential), self.args)
        offset = self.rng.randrange(len(potential))
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        ruled_out: list[NodeInfo] = []
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)]
            lower = [p for p in node.pods.values() if may_preempt(p, pod)]
            if lower and handle.rules_out(pod, node, snap, taken=lower):
                # It fails here even with every lower-priority pod gone: no candidate, known
                # without the trial (the nodes earlier preemptions filled, in a busy cluster).
                ruled_out.append(node)
                continue
            found, status = self.select_victims(pod, node, snap, handle, pdbs, lower)
            if found is None:
                statuses[node.name] = list(status.reasons)
                continue
            (violating if found.pdb_violations else clean).append(found)
            if clean and len(clean) + len(violating) >= wanted:
                break
        candidates = clean[:wanted] + violating[:wanted]
        if not candidates:
            # The message counts every node's reasons: the trial tells them.
            for node in ruled_out:
                _, status = self.select_victims(pod, node, snap, handle, pdbs)
                statuses[node.name] = list(status.reasons)
        return candidates, statuses

    def select_victims(
        self,
        pod: PodInfo,
        node: NodeInfo,
        snap: Snapshot,
        handle: Handle,
        pdbs: list[dict[str, Any]],
        lower: list[PodInfo] | None = None,
    ) -> tuple[Candidate | None, Status]:
        """The fewest pods to take off `node` for `pod` to fit (upstream's SelectVictimsOnNode),
        tried on the cache's own node and index, which are restored before returning. `lower`:
        the node's pods `pod` may preempt, when the caller has them already."""
        now = snap.now
        if lower is None:
            lower = [p for p in node.pods.values() if may_preempt(p, pod)]
        potential = sorted(lower, key=lambda p: importance(p, now))
        if not potential:
            return None, Status.reject(NO_VICTIMS, unresolvable=True)
        violating, fine = split_by_pdb(potential, pdbs)
        # Only the requests can change a verdict here: the reprieve is arithmetic and the node
        # is never edited (None: the pod fails even with every lower pod gone, and the trial
        # below tells why).
        reprieved = (
            handle.reprieve(pod, node, snap, violating + fine)
            if handle.by_requests(pod, node, snap)
            else None
        )
        if reprieved is not None:
            victims = reprieved
            judged = {p.uid for p in violating}
            violations = sum(1 for v in victims if v.uid in judged) if judged else 0
            status = Status.success()
        else:
            with TrialEdit(snap, node) as trial:
                for victim in potential:
                    trial.remove(victim)
                status = handle.fits(pod, node, snap)
                if not status.ok:
                    return None, status
                victims = []
                violations = 0
                for group in (violating, fine):
                    for candidate in group:
                        # A victim by its requests alone is known without putting it back.
                        if not handle.rules_out(pod, node, snap, added=(candidate,)):
                            trial.add(candidate)
                            if handle.passes(pod, node, snap):  # the reasons are not needed
                                continue
                            trial.remove(candidate)
                        victims.append(candidate)
                        violations += group is violating
        if not victims:  # upstream: a node that fits with no victim is an error, not a candidate
            return None, Status.reject(f"expected at least one victim pod on node {node.name}")
        if violating and fine:
            victims.sort(key=lambda p: importance(p, now))
        times = tuple(start_time(v, now) for v in victims)
        return Candidate(node.name, tuple(victims), violations, times), status

    def _load_after(self, c: Candidate, snap: Snapshot) -> float:
        """Candidate `c`'s node's CPU use in percent once its victims are gone, from the same
        load view as the scores: the measured share minus what the victims are predicted to
        use, the allocation share without their requests. The node is not edited: that share
        reads only the requested sum, so subtracting their requests gives the number taking
        them off would (and ~100 tied candidates are weighed per preemptor when start times
        tie, as kwok's whole seconds make them)."""
        node = snap.nodes[c.node]
        state = CycleState()
        on_node = (node.pods[v.uid] for v in c.victims if v.uid in node.pods)
        gone_requests = sum(v.requests.get(CPU, 0) for v in on_node)
        u = loadview.usage(state, node, snap, CPU, less_requested=gone_requests)
        allocatable = node.allocatable.get(CPU, 0)
        if allocatable <= 0:
            return u.avg
        gone_m = sum(
            estimate(v, snap.workloads, fallback=(_predicted_cpu_m(v), 0)).cpu_m for v in c.victims
        )
        recent_m = loadview.recent_cpu_m(snap, node, u)
        return max(0.0, u.avg + 100.0 * (recent_m - u.weight * gone_m) / allocatable)


def _predicted_cpu_m(pod: PodInfo) -> int:
    """resources.predicted_cpu_m, parsed once per pod (a victim is weighed on every trial)."""
    found = pod.memo.get(_PREDICTED)
    if found is None:
        found = pod.memo[_PREDICTED] = resources.predicted_cpu_m(pod)
    return found


def terminating_by_preemption(pod: PodInfo) -> bool:
    """Deleted already, with the DisruptionTarget condition a preemption puts first."""
    if not (pod.raw.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for cond in (pod.raw.get("status") or {}).get("conditions") or []:
        if cond.get("type") == DISRUPTION_TARGET:
            return cond.get("status") == "True" and cond.get("reason") == PREEMPTION_BY_SCHEDULER
    return False
