"""The scheduling framework's extension points, as kube-scheduler's framework/interface.go.

A cycle builds a Snapshot (cluster state from the cache plus the metrics client's latest load
data), runs every enabled filter plugin on every candidate node, then every score plugin on the
nodes that passed, lets a plugin normalise its scores across nodes, and weights and sums them
(framework/profile.py). Plugins never do I/O: everything they need is in the Snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status
from scheduler.framework.types import CycleState, NodeInfo, PodInfo


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool | Status:
        """Prepare per-pod data; False means this plugin has nothing to check for this pod.
        A rejecting Status makes the pod unschedulable on every node with that one reason
        (upstream's PreFilter returning Unschedulable)."""
        ...


# A PreFilter plugin may say, as a class attribute `pre_filter_reads_pods = False`, that its
# PreFilter reads only the pod and the cluster's objects (not the placed pods): a preemption
# trial, which moves pods only, then reuses its PreFilter instead of running it again (upstream
# updates such state per moved pod through PreFilterExtensions; these plugins have none to
# update). A plugin that does not say so is run again on every trial.
PRE_FILTER_READS_PODS = "pre_filter_reads_pods"

# A Filter plugin may say, as `filter_reads_pods = False`, that its Filter reads the node, the
# pod and the cluster's objects, never the pods placed anywhere; and a plugin whose PreFilter
# reads placed pods may say, as `skip_holds_with_fewer_pods = True`, that when its PreFilter
# skips the pod (returns False) it also skips it with any placed pods gone. With both kinds of
# word, a preemption knows when taking pods off a node can change no verdict but
# NodeResourcesFit's, and then judges victims by their requests alone (Profile.by_requests).
# A plugin that says nothing is taken to read placed pods.
FILTER_READS_PODS = "filter_reads_pods"
SKIP_HOLDS_WITH_FEWER_PODS = "skip_holds_with_fewer_pods"

# A Score plugin may say, as `score_reads_loads = False`, that its scores never read the
# watcher's figures (Snapshot.loads, recent_cpu_m, pod_usage, workloads): the rebalancer's load
# margin leaves it out when it scores the nodes read a few points off (rebalancer/margin.py).
# A plugin that says nothing is taken to read them. One that reads them may say, as
# `score_falls_with_load = True`, that a node's score never rises when the node's own CPU figures
# do: the margin then needs one reading of the loads, not two.
SCORE_READS_LOADS = "score_reads_loads"
SCORE_FALLS_WITH_LOAD = "score_falls_with_load"
# A Score plugin whose scores are spread over the scored nodes' own range (a node's score moves
# with the other nodes' figures) may offer `spread_shares(state, pod, nodes, snap)`: each node's
# figure before the spread (lower scores higher, never falling as the node's CPU figures rise),
# or None when this configuration does not spread. The margin then bounds each node's score over
# every reading instead of scoring one (rebalancer/margin.py).
SPREAD_SHARES = "spread_shares"


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        """The rejections among `nodes`, by index; the same verdicts as `filter` node by node,
        for the price of one call (most nodes pass, and a call per node and plugin adds up)."""
        ...


@runtime_checkable
class MovedPodsFilterPlugin(FilterPlugin, Protocol):
    def rejects_with(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        added: Sequence[PodInfo] = (),
        taken: Sequence[PodInfo] = (),
    ) -> bool:
        """True only when `filter` would reject `pod` on `node` with `added` (not on it now)
        counted there and `taken` (on it now) gone, judged from the node's sums without
        editing it; False when unsure. A preemption asks it before its edits: whether the pod
        fails a node even with every lower-priority pod gone (no trial then), and, in the
        reprieve, whether a victim put back would fail it (most victims are victims for their
        requests alone). An edit costs more than this."""
        ...

    def reprieve(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, order: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        """A preemption's reprieve from the node's sums: with every pod of `order` (on `node`)
        gone, each in turn is put back when `filter` would still pass `pod` with it there;
        the pods left off, in order, or None when `filter` rejects `pod` even with all of
        them gone. The answers of `rejects_with` asked once per pod, in one pass."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        """0..MAX_NODE_SCORE before normalisation."""
        ...


@runtime_checkable
class NormalizeScorePlugin(ScorePlugin, Protocol):
    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        """Rewrite `scores` (node -> score) in place to 0..MAX_NODE_SCORE."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        """Prepare per-pod data; False means this plugin gives every node the same score."""
        ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        """Scores for all nodes at once (vectorised); same values as `score` node by node."""
        ...


@dataclass(frozen=True)
class PostFilterResult:
    """A PostFilter plugin's answer for a pod that fits nowhere.

    `nominated_node` set: the pod should go there once `victims` are gone (the cycle hands them
    to the API side); "" with `clear` asks to drop an earlier nomination (upstream's
    ModeOverride with an empty name); `message` joins the FailedScheduling text.
    """

    nominated_node: str = ""
    victims: tuple[PodInfo, ...] = ()
    message: str = ""
    clear: bool = False


class Handle(Protocol):
    """What a PostFilter plugin may ask of the framework (upstream's framework.Handle)."""

    def fits(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        """The profile's own filters for `pod` on `node` as it stands now, nominated pods of
        equal or higher priority counted on it."""
        ...

    def passes(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> bool:
        """`fits(pod, node, snap).ok`, without the reasons (checked in a cheaper order)."""
        ...

    def rules_out(
        self,
        pod: PodInfo,
        node: NodeInfo,
        snap: Snapshot,
        added: Sequence[PodInfo] = (),
        taken: Sequence[PodInfo] = (),
    ) -> bool:
        """True only when `pod` surely fails on `node` with `added` put on it and `taken` off
        it (a filter says so from the node's sums, nothing edited); False when unsure: edit
        and ask `passes`."""
        ...

    def by_requests(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> bool:
        """Whether taking placed pods off `node` can change no verdict for `pod` but the
        requests' (NodeResourcesFit), every other filter passes it, and no nominated pod counts
        there: then `rules_out` with `taken` is the whole answer of `passes` on the node with
        those pods gone."""
        ...

    def reprieve(
        self, pod: PodInfo, node: NodeInfo, snap: Snapshot, order: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        """Where `by_requests` holds: with every pod of `order` taken off `node`, each in turn
        put back when `pod` still passes with it; the pods left off (the victims, in order),
        or None when `pod` fails even with all of them gone. What `rules_out` would say asked
        once per pod, in one pass over the node's sums."""
        ...

    def nominated_node(self, pod: PodInfo) -> str:
        """The node `pod` was nominated to by an earlier preemption, "" if none."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rejected: dict[str, list[str]],
        handle: Handle,
    ) -> PostFilterResult:
        """Called only when no node passed the filters; `rejected` holds every node's reasons
        and `state` the filter pass's (nodes no change could help are in UNRESOLVABLE_NODES)."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, api: Any, pod: PodInfo, node: str) -> str:
        """Upstream's PreBind: API writes that must precede the pod's Binding to `node` (on a
        binder thread, the only extension point that does I/O); "" to go on, else why the
        binding must not happen (the cycle forgets the assumption and requeues the pod)."""
        ...


# CycleState key: names of the nodes whose rejection no preemption can help.
UNRESOLVABLE_NODES = "framework.unresolvable_nodes"
