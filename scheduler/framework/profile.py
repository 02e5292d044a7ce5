"""A profile: one schedulerName's plugins, run as one filter pass and one score pass.

The cycle calls `filter` then `score`; both share a CycleState so per-pod work (predicted CPU,
parsed affinity) is done once and the metrics fallbacks are counted in `state.fallbacks`.
For the decision record (`ballast explain`) both can show their parts: a `FILTER_TALLY` dict in
the state collects each filter's rejections, and `score(..., parts=ScoreParts())` keeps each
plugin's raw and normalised scores. Neither costs anything when not asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.framework import unsupported
from scheduler.framework.interface import (
    FILTER_READS_PODS,
    PRE_FILTER_READS_PODS,
    SKIP_HOLDS_WITH_FEWER_PODS,
    UNRESOLVABLE_NODES,
    BatchFilterPlugin,
    BatchScorePlugin,
    FilterPlugin,
    MovedPodsFilterPlugin,
    NormalizeScorePlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from scheduler.framework.snapshot import Snapshot, TrialEdit
from scheduler.framework.status import PRE_FILTER_REJECTION, Status
from scheduler.framework.types import CycleState, NodeInfo, PodInfo

_ACTIVE_FILTERS = "profile.filters"
# CycleState keys, set by a caller that records decisions: FILTER_TALLY holds a dict that
# `filter` fills with {plugin name: {reason: rejected nodes}}; PRE_FILTER_PLUGIN is the name of
# the PreFilter that rejected the whole pod.
FILTER_TALLY = "profile.filter_tally"
PRE_FILTER_PLUGIN = "profile.pre_filter_plugin"


@dataclass
class ScoreParts:
    """One score pass taken apart: node names and totals in the pass's order, and per plugin
    (name, weight, raw scores, normalised scores); a plugin its pre_score skipped has None for
    both (it would add the same to every node)."""

    names: list[str] = field(default_factory=list)
    totals: Any = None  # numpy int64 array, aligned with names
    plugins: list[tuple[str, int, Any, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _TrialBase:
    """What a preemption's fit trials of one pod on one snapshot share."""

    pod: PodInfo
    snap: Snapshot
    state: CycleState  # of the PreFilters trials reuse (they read only the pod and objects)
    refused: Status | None  # the pod's unsupported-feature refusal
    verdicts: list  # the reused PreFilters' verdicts, by position in `filters`
    quick: list | None  # filters to check with no PreFilter run again; None: one rejected
    again: list  # the PreFilters to run again per trial (they read placed pods), in order
    moved_checks: list  # the filters of `quick` that judge moved pods without an edit


class Profile:
    def __init__(
        self,
        scheduler_name: str,
        filters: list[FilterPlugin],
        scores: list[tuple[ScorePlugin, int]],
        post_filters: list[PostFilterPlugin] | None = None,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.filters = filters
        self.scores = scores
        self.post_filters = post_filters or []
        unique = {id(p): p for p in [*filters, *(p for p, _ in scores), *self.post_filters]}
        self.pre_binds = [p for p in unique.values() if isinstance(p, PreBindPlugin)]
        # Protocol isinstance checks are slow; settle each plugin's extension points once.
        self._pre_filter = [isinstance(p, PreFilterPlugin) for p in filters]
        # PreFilters a trial must run again (they read placed pods), by position in `filters`
        self._reads_pods = [
            pre and getattr(p, PRE_FILTER_READS_PODS, True)
            for p, pre in zip(filters, self._pre_filter, strict=True)
        ]
        self._trial_base: _TrialBase | None = None
        # (pod, snapshot, the filters by_requests runs or None when it does not apply)
        self._by_requests: tuple[PodInfo, Snapshot, list | None] | None = None
        self._batch_filter = {id(p) for p in filters if isinstance(p, BatchFilterPlugin)}
        self._moved_pods_filter = {id(p) for p in filters if isinstance(p, MovedPodsFilterPlugin)}
        self._score_kinds = [
            (
                isinstance(p, PreScorePlugin),
                isinstance(p, BatchScorePlugin),
                isinstance(p, NormalizeScorePlugin),
            )
            for p, _ in scores
        ]

    def filter(
        self,
        pod: PodInfo,
        nodes: list[NodeInfo],
        snap: Snapshot,
        state: CycleState | None = None,
    ) -> tuple[list[NodeInfo], dict[str, list[str]]]:
        """(feasible nodes, {rejected node: its reasons}); a node stops at its first failing
        plugin, as in kube-scheduler."""
        state = CycleState() if state is None else state
        active = state.get(_ACTIVE_FILTERS)
        if active is None:  # the cycle may filter in chunks: prepare the pod once
            active = state[_ACTIVE_FILTERS] = self._pre_filter_all(state, pod, snap)
        rejection = state.get(PRE_FILTER_REJECTION)
        if rejection is not None:
            if rejection.unresolvable:
                state.setdefault(UNRESOLVABLE_NODES, set()).update(n.name for n in nodes)
            return [], {node.name: list(rejection.reasons) for node in nodes}
        reasons: dict[str, list[str]] = {}
        tally = state.get(FILTER_TALLY)
        # Plugin by plugin over the nodes still standing, so a node stops at its first failing
        # plugin as in kube-scheduler; batch plugins judge all of them in one call.
        feasible = nodes
        for plugin in active:
            if id(plugin) in self._batch_filter:
                rejected = plugin.filter_all(state, pod, feasible, snap)
            else:
                rejected = {}
                for i, node in enumerate(feasible):
                    status = plugin.filter(state, pod, node, snap)
                    if not status.ok:
                        rejected[i] = status
            if rejected:
                if tally is not None:
                    _count_rejections(tally, plugin.name, rejected.values())
                for i, status in rejected.items():
                    reasons[feasible[i].name] = list(status.reasons)
                    if status.unresolvable:  # preemption skips these nodes
                        state.setdefault(UNRESOLVABLE_NODES, set()).add(feasible[i].name)
                feasible = [node for i, node in enumerate(feasible) if i not in rejected]
        return list(feasible) if feasible is nodes else feasible, reasons

    def fits(
        self, pod: PodInfo, node: NodeInfo, snap: Snapshot, nominated: Sequence[PodInfo] = ()
    ) -> Status:
        """This profile's filters for `pod` on `node` alone, each run on a fresh CycleState so
        PreFilter data reflects the node as it is now (a preemption trial edits it). With
        `nominated` pods, the node must pass both with them counted on it and without them,
        as upstream's RunFilterPluginsWithNominatedPods: a pod that needs the room of one
        nominated pod must not take it, and one that needs a nominated pod (affinity) must not
        count on it."""
        if nominated:
            with TrialEdit(snap, node) as trial:
                for other in nominated:
                    trial.add(other)
                status = self._fits_alone(pod, node, snap)
            if not status.ok:
                return status
        return self._fits_alone(pod, node, snap)

    def _fits_alone(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        state = self._trial_state(pod, snap)
        feasible, reasons = self.filter(pod, [node], snap, state)
        if feasible:
            return Status.success()
        why = reasons.get(node.name) or ["rejected"]
        return Status.reject(*why, unresolvable=node.name in state.get(UNRESOLVABLE_NODES, ()))

    def passes(
        self, pod: PodInfo, node: NodeInfo, snap: Snapshot, nominated: Sequence[PodInfo] = ()
    ) -> bool:
        """`fits(...).ok`, sooner: what a preemption's reprieve asks (does the pod still fit
        with this victim back?). The same checks in another order: first the filters that need
        no PreFilter run again (their PreFilter reads only the pod and the cluster's objects,
        or they have none), on the node as it is now, and only when those pass the PreFilters
        that read placed pods and their filters. A rejection is final either way, so the
        answer is the same; the reasons, which `fits` gives in the profile's order, are not
        kept."""
        if nominated:
            return self.fits(pod, node, snap, nominated).ok
        base = self._trial_base_of(pod, snap)
        if base.refused is not None or base.quick is None:
            return False  # an unsupported pod, or a reused PreFilter rejected it
        state = CycleState(base.state)
        if not self._all_pass(base.quick, state, pod, node, snap):
            return False
        active = []
        for plugin in base.again:
            verdict = plugin.pre_filter(state, pod, snap)
            if isinstance(verdict, Status):
                if not verdict.ok:
                    return False
                active.append(plugin)
            elif verdict:
                active.append(plugin)
        return self._all_pass(active, state, pod, node, snap)

    def rules_out(
        self,
        pod: PodInfo,
        node: NodeInfo,
        snap: Snapshot,
        added: Sequence[PodInfo] = (),
        taken: Sequence[PodInfo] = (),
    ) -> bool:
        """True only when `passes` would surely say no with `added` put on `node` and `taken`
        off it: a filter that needs no PreFilter run again rejects the pod from the node's
        sums (nothing is edited). Exact whatever the nominated pods: `fits` asks the node
        with and without them, so a rejection without them is a rejection. False when
        unsure, or when the moves are not what they say (an added pod already there, a taken
        one not)."""
        if not self._moved_pods_filter:
            return False
        pods = node.pods
        for other in added:
            if other.uid in pods:
                return False
        for other in taken:
            if other.uid not in pods:
                return False
        base = self._trial_base_of(pod, snap)
        if base.refused is not None or base.quick is None:
            return True  # `passes` refuses such a pod on any node
        for plugin in base.moved_checks:
            if plugin.rejects_with(base.state, pod, node, added, taken):
                return True
        return False

    def reprieve(
        self, pod: PodInfo, node: NodeInfo, snap: Snapshot, order: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        """Handle.reprieve: the one judge of the sums reprieves in one pass; with several,
        `rules_out` is asked once per pod. For a pod and node where `by_requests` holds."""
        base = self._trial_base_of(pod, snap)
        if base.refused is not None or base.quick is None:
            return None
        if len(base.moved_checks) == 1:
            return base.moved_checks[0].reprieve(base.state, pod, node, order)
        if self.rules_out(pod, node, snap, taken=order):
            return None
        gone = {p.uid: p for p in order}
        victims = []
        for candidate in order:
            del gone[candidate.uid]
            if self.rules_out(pod, node, snap, taken=list(gone.values())):
                gone[candidate.uid] = candidate
                victims.append(candidate)
        return victims

    def by_requests(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> bool:
        """Whether taking placed pods off `node` can change no filter's verdict for `pod` but
        those `rules_out` judges from the node's sums (NodeResourcesFit's), and every other
        filter passes the node as it is: then `rules_out(..., taken=...)` is the whole answer
        of `passes` with those pods gone, no trial needed (nominated pods are the caller's to
        rule out: `passes` counts them). Asked with the cluster unedited (not inside a
        TrialEdit): the skips it relies on are checked with every placed pod there."""
        others = self._others_of(pod, snap)
        if others is None:
            return False
        state = CycleState(self._trial_base_of(pod, snap).state)
        return self._all_pass(others, state, pod, node, snap)

    def _others_of(self, pod: PodInfo, snap: Snapshot) -> list | None:
        """The filters `by_requests` runs for `pod` (the active ones but the sums' judges), or
        None when a filter that may read placed pods is active or a PreFilter reading them
        does not skip it for sure; once per pod and snapshot."""
        memo = self._by_requests
        if memo is not None and memo[0] is pod and memo[1] is snap:
            return memo[2]
        base = self._trial_base_of(pod, snap)
        others: list | None = None
        if base.refused is None and base.quick is not None and base.moved_checks:
            others = [p for p in base.quick if id(p) not in self._moved_pods_filter]
            if not all(getattr(p, FILTER_READS_PODS, True) is False for p in others):
                others = None
            for plugin in base.again if others is not None else ():
                verdict = plugin.pre_filter(CycleState(base.state), pod, snap)
                if verdict or not getattr(plugin, SKIP_HOLDS_WITH_FEWER_PODS, False):
                    others = None  # active (True or a Status), or its skip may not hold
                    break
        self._by_requests = (pod, snap, others)
        return others

    def _all_pass(
        self, plugins: list, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot
    ) -> bool:
        for plugin in plugins:
            if id(plugin) in self._batch_filter:
                if plugin.filter_all(state, pod, [node], snap):
                    return False
            elif not plugin.filter(state, pod, node, snap).ok:
                return False
        return True

    def _trial_base_of(self, pod: PodInfo, snap: Snapshot) -> _TrialBase:
        """What every trial of `pod` on `snap` shares, computed once per pod and snapshot."""
        base = self._trial_base
        if base is None or base.pod is not pod or base.snap is not snap:
            state = CycleState()
            verdicts: list = [None] * len(self.filters)
            refused = unsupported.refusal(pod.raw)
            quick, again, rejected = [], [], False
            if refused is None:
                for i, plugin in enumerate(self.filters):
                    if not self._pre_filter[i]:
                        quick.append(plugin)
                    elif self._reads_pods[i]:
                        again.append(plugin)
                    else:
                        verdicts[i] = verdict = plugin.pre_filter(state, pod, snap)
                        if isinstance(verdict, Status) and not verdict.ok:
                            rejected = True
                        elif verdict:
                            quick.append(plugin)
            state.pop("fallbacks", None)
            quick_or_none = None if rejected else quick
            checks = [p for p in quick if id(p) in self._moved_pods_filter] if quick_or_none else []
            base = _TrialBase(pod, snap, state, refused, verdicts, quick_or_none, again, checks)
            self._trial_base = base
        return base

    def _trial_state(self, pod: PodInfo, snap: Snapshot) -> CycleState:
        """A fresh CycleState for one fit check of `pod`, its PreFilters run as
        `_pre_filter_all` would run them now: the ones that read only the pod and the cluster's
        objects are run once per pod and snapshot (a preemption runs hundreds of trials that
        move pods only, under the cache lock) and reused; the others are run again."""
        base = self._trial_base_of(pod, snap)
        refused, verdicts = base.refused, base.verdicts
        state = CycleState(base.state)
        if refused is not None:
            state[PRE_FILTER_REJECTION] = refused
            state[_ACTIVE_FILTERS] = []
            return state
        active = []
        for i, plugin in enumerate(self.filters):
            if not self._pre_filter[i]:
                active.append(plugin)
                continue
            verdict = plugin.pre_filter(state, pod, snap) if self._reads_pods[i] else verdicts[i]
            if isinstance(verdict, Status):
                if not verdict.ok:
                    state[PRE_FILTER_REJECTION] = verdict
                    state[PRE_FILTER_PLUGIN] = plugin.name
                    active = []
                    break
                active.append(plugin)
            elif verdict:
                active.append(plugin)
        state[_ACTIVE_FILTERS] = active
        return state

    def _pre_filter_all(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> list:
        """The filters that have something to check for `pod`; the first PreFilter rejection
        stops there and is kept in the state (upstream stops at it too)."""
        refused = unsupported.refusal(pod.raw)
        if refused is not None:
            state[PRE_FILTER_REJECTION] = refused
            return []
        active = []
        for plugin, pre in zip(self.filters, self._pre_filter, strict=True):
            if not pre:
                active.append(plugin)
                continue
            verdict = plugin.pre_filter(state, pod, snap)
            if isinstance(verdict, Status):
                if not verdict.ok:
                    state[PRE_FILTER_REJECTION] = verdict
                    state[PRE_FILTER_PLUGIN] = plugin.name
                    return []
                active.append(plugin)
            elif verdict:
                active.append(plugin)
        return active

    def score(
        self,
        pod: PodInfo,
        nodes: list[NodeInfo],
        snap: Snapshot,
        state: CycleState | None = None,
        parts: ScoreParts | None = None,
    ) -> dict[str, int]:
        """{node: sum of weight * normalised score}. A plugin whose pre_score says every node
        would score the same is skipped: a constant offset never changes the pick. With
        `parts`, the pass is also kept there piece by piece (references, no copies)."""
        names, totals = self.totals(pod, nodes, snap, state, parts)
        return dict(zip(names, totals.tolist(), strict=True))

    def totals(
        self,
        pod: PodInfo,
        nodes: list[NodeInfo],
        snap: Snapshot,
        state: CycleState | None = None,
        parts: ScoreParts | None = None,
    ) -> tuple[list[str], np.ndarray]:
        """`score` as (node names, their totals as an int64 array, in the same order), without
        the dict a cycle does not need."""
        state = CycleState() if state is None else state
        names = [n.name for n in nodes]
        totals = np.zeros(len(nodes), dtype=np.int64)
        for (plugin, weight), kinds in zip(self.scores, self._score_kinds, strict=True):
            pre, batch, normalize = kinds
            if pre and not plugin.pre_score(state, pod, nodes, snap):
                if parts is not None:
                    parts.plugins.append((plugin.name, weight, None, None))
                continue
            if batch:
                values = plugin.score_all(state, pod, nodes, snap)
            else:
                values = [plugin.score(state, pod, node, snap) for node in nodes]
            raw = values
            if normalize:
                by_node = dict(zip(names, values, strict=True))
                plugin.normalize(state, pod, by_node)
                values = [by_node[n] for n in names]
            totals += weight * np.asarray(values, dtype=np.int64)
            if parts is not None:
                parts.plugins.append((plugin.name, weight, raw, values))
        if parts is not None:
            parts.names, parts.totals = names, totals
        return names, totals

    def pre_bind(self, api: Any, pod: PodInfo, node: str) -> str:
        """The first PreBind plugin's objection, "" when all went through."""
        for plugin in self.pre_binds:
            detail = plugin.pre_bind(api, pod, node)
            if detail:
                return detail
        return ""


def _count_rejections(tally: dict[str, dict[str, int]], plugin: str, statuses: Any) -> None:
    counts = tally.setdefault(plugin, {})
    for status in statuses:
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
