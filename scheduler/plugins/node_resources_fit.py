"""NodeResourcesFit: the pod's effective requests must fit in what the node has left.

Checks the pod count, cpu, memory, ephemeral-storage and every extended resource the pod asks
for (a resource the node does not offer has 0 left). Reasons as kube-scheduler writes them:
"Too many pods", "Insufficient cpu", "Insufficient nvidia.com/gpu". A request above the
node's whole allocatable makes the rejection unresolvable (v1.34's InsufficientResource
Unresolvable): no eviction can make room, so preemption does not try the node.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import CPU, MEMORY, PODS, CycleState, NodeInfo, PodInfo, Snapshot, Status

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "NodeResourcesFit"
_KEY = NAME + ".requests"


@dataclass(frozen=True)
class Args:
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()  # "example.com" ignores example.com/*


def parse_args(f: Fields) -> Args:
    ignored = f.raw("ignoredResources", [])
    groups = f.raw("ignoredResourceGroups", [])
    for key, value in (("ignoredResources", ignored), ("ignoredResourceGroups", groups)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise f.error(key, "expected a list of resource names")
    if any("/" in g for g in groups):
        raise f.error("ignoredResourceGroups", "a group is the part before '/', without it")
    f.raw("scoringStrategy")  # accepted for kube-scheduler configs; scores are separate plugins
    f.finish()
    return Args(frozenset(ignored), frozenset(groups))


class Plugin:
    name = NAME
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def _wanted(self, pod: PodInfo) -> list[tuple[str, int]]:
        ignored, groups = self.args.ignored_resources, self.args.ignored_resource_groups
        wanted = []
        for name, value in sorted(pod.requests.items(), key=_order):
            if value <= 0 or name == PODS or name in ignored:
                continue
            if "/" in name and name.split("/", 1)[0] in groups:
                continue
            wanted.append((name, value))
        return wanted

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool:
        state[_KEY] = self._wanted(pod)
        return True

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        wanted = state.get(_KEY)
        if wanted is None:
            wanted = self._wanted(pod)
        reasons = []
        if node.room_pods < 1:
            reasons.append(TOO_MANY_PODS)
        requested, allocatable = node.requested, node.allocatable
        unresolvable = False
        for name, value in wanted:
            have = allocatable.get(name, 0)
            if value > have - requested.get(name, 0):
                reasons.append(_insufficient(name))
                unresolvable = unresolvable or value > have
        return _rejection(tuple(reasons), unresolvable) if reasons else Status.success()

    def rejects_with(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        added: Sequence[PodInfo] = (),
        taken: Sequence[PodInfo] = (),
    ) -> bool:
        """`filter`'s verdict with `added` counted on the node and `taken` gone: a pod's
        requests are what a NodeInfo adds to `requested` (and one pod)."""
        wanted = state.get(_KEY)
        if wanted is None:
            wanted = self._wanted(pod)
        if node.room_pods - len(added) + len(taken) < 1:
            return True
        pods = node.pods
        for name, value in wanted:
            left = _room(node, name)
            for other in added:
                left -= other.requests.get(name, 0)
            for other in taken:
                left += pods[other.uid].requests.get(name, 0)  # the copy the sums hold
            if value > left:
                return True
        return False

    def reprieve(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, order: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        wanted = state.get(_KEY)
        if wanted is None:
            wanted = self._wanted(pod)
        pods = node.pods
        held = [pods[p.uid].requests for p in order]  # by the copies the sums hold
        slots = node.room_pods + len(order) - 1  # pods the node still takes beside `pod`
        if slots < 0:
            return None
        victims = []
        if len(wanted) == 2 and wanted[0][0] == CPU and wanted[1][0] == MEMORY:
            # cpu and memory, what nearly every pod asks for: two running sums
            cpu = node.room_cpu - wanted[0][1]
            memory = node.room_memory - wanted[1][1]
            for requests in held:
                cpu += requests.get(CPU, 0)
                memory += requests.get(MEMORY, 0)
            if cpu < 0 or memory < 0:
                return None
            for back, requests in zip(order, held, strict=True):
                c, m = requests.get(CPU, 0), requests.get(MEMORY, 0)
                if slots >= 1 and c <= cpu and m <= memory:
                    slots, cpu, memory = slots - 1, cpu - c, memory - m
                else:
                    victims.append(back)
            return victims
        # per wanted resource: what is spare beside `pod` with every pod of `order` gone
        left = {name: _room(node, name) - value for name, value in wanted}
        for requests in held:
            for name in left:
                left[name] += requests.get(name, 0)
        if any(spare < 0 for spare in left.values()):
            return None
        for back, requests in zip(order, held, strict=True):
            if slots >= 1 and all(requests.get(n, 0) <= spare for n, spare in left.items()):
                slots -= 1
                for name in left:
                    left[name] -= requests.get(name, 0)
            else:
                victims.append(back)
        return victims

    def filter_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> dict[int, Status]:
        wanted = state.get(_KEY)
        if wanted is None:
            wanted = self._wanted(pod)
        rejected = {}
        if len(wanted) == 2 and wanted[0][0] == CPU and wanted[1][0] == MEMORY:
            # cpu and memory, what nearly every pod asks for: the room each node keeps, and for
            # a node that fails, `filter`'s verdict from the same attributes (a preemptor is
            # turned away by every node, hundreds a cycle)
            cpu, memory = wanted[0][1], wanted[1][1]
            for i, node in enumerate(nodes):
                if not (node.room_pods > 0 and cpu <= node.room_cpu and memory <= node.room_memory):
                    rejected[i] = _cpu_memory_rejection(
                        node.room_pods < 1,
                        cpu > node.room_cpu,
                        memory > node.room_memory,
                        cpu > node.allocatable_cpu or memory > node.allocatable_memory,
                    )
            return rejected
        # Otherwise the common pass first, without building reasons; a node that fails is
        # judged again by `filter` for its full list of reasons.
        if len(wanted) == 2:
            (first, v1), (second, v2) = wanted
            for i, node in enumerate(nodes):
                a, r = node.allocatable, node.requested
                if not (
                    len(node.pods) < a.get(PODS, 0)
                    and v1 <= a.get(first, 0) - r.get(first, 0)
                    and v2 <= a.get(second, 0) - r.get(second, 0)
                ):
                    rejected[i] = self.filter(state, pod, node, snap)
            return rejected
        for i, node in enumerate(nodes):
            requested, allocatable = node.requested, node.allocatable
            fits = len(node.pods) < allocatable.get(PODS, 0)
            if fits:
                for name, value in wanted:
                    if value > allocatable.get(name, 0) - requested.get(name, 0):
                        fits = False
                        break
            if not fits:
                rejected[i] = self.filter(state, pod, node, snap)
        return rejected


TOO_MANY_PODS = "Too many pods"


def _room(node: NodeInfo, name: str) -> int:
    """What `node` has left of resource `name` (allocatable less requested)."""
    if name == CPU:
        return node.room_cpu
    if name == MEMORY:
        return node.room_memory
    return node.allocatable.get(name, 0) - node.requested.get(name, 0)


@functools.cache
def _insufficient(name: str) -> str:
    return f"Insufficient {name}"


@functools.cache
def _rejection(reasons: tuple[str, ...], unresolvable: bool) -> Status:
    """One shared Status per combination of reasons: a preemptor's filter pass rejects every
    node, hundreds a cycle, mostly for the same reasons (a Status is frozen)."""
    return Status.reject(*reasons, unresolvable=unresolvable)


@functools.cache
def _cpu_memory_rejection(pods: bool, cpu: bool, memory: bool, unresolvable: bool) -> Status:
    """`filter`'s Status for a pod asking cpu and memory: its reasons in the same order."""
    reasons = (TOO_MANY_PODS,) * pods + (_insufficient(CPU),) * cpu
    return _rejection(reasons + (_insufficient(MEMORY),) * memory, unresolvable)


_FIRST = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}


def _order(item: tuple[str, int]) -> tuple[int, str]:
    return (_FIRST.get(item[0], 3), item[0])
