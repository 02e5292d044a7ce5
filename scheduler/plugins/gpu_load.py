"""GpuLoad: GPU pods go where GPUs are idle and have memory for them (docs/gpu.md).

Only for pods requesting one of `resourceNames` (the NVIDIA device plugin's `nvidia.com/gpu`,
and `nvidia.com/gpu.shared` when time-slicing renames its replicas); every other pod is
skipped in PreFilter and PreScore, at the cost of a few dictionary look-ups.

The pod's need: GPU memory per GPU from its `memoryAnnotation` (a quantity: "8Gi", "500Mi"),
else what one replica of its workload used (p95 over the watcher's window, from
dcgm-exporter's pod mapping) spread over its GPUs, else `defaultMemory`; GPU compute likewise
from its `utilAnnotation` (percent of one GPU), the workload's use, or `defaultUtil`; times its
GPU count (a shared replica counts as one GPU's worth).

A node's GPUs as seen: its GPUs' windows from the watcher (dcgm-exporter's series), not
expired. With dcgm-exporter's pod mapping, each GPU's pods are known: the node's GPU pods not
measured yet (assumed pods count at once) are given GPUs as the device plugin would (a replica
of a shared GPU the GPU with the fewest pods, a whole GPU the first without any), and the pod
is judged on the GPU(s) it would get. Without the mapping, a node-level view: the node's used
memory and busy compute are the larger of the measured sums and its GPU pods' needs.

- Filter: a node is refused when the GPU the pod would get lacks its memory (node-level: no
  GPU has it free, or the node's memory left is less): "node(s) had no GPU with N MiB free".
  A node without fresh GPU data (none reported, or a GPU past its freshness horizon) passes:
  counts only, as kube-scheduler; metrics never make a pod unschedulable.
- Score: the mean of idle compute (100 - busy %) and memory left after the pod (percent of the
  framebuffer), on the GPU(s) the pod would get (node-level: over the node), weighted by
  `utilWeight` and `memoryWeight`. A node without GPU data gets the mean score of the nodes
  with data (neither favoured nor punished), counted as a fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.gpus import GpuLoads
from scheduler.plugins.helpers.estimator import workload
from scheduler.plugins.helpers.loadview import MISSING, note_fallback
from shared.quantities import QuantityError, bytes_value

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "GpuLoad"
_KEY = NAME + ".need"
MIB = 1024 * 1024


@dataclass(frozen=True)
class Args:
    resource_names: tuple[str, ...] = ("nvidia.com/gpu", "nvidia.com/gpu.shared")
    # Of those, the ones that are replicas of a shared GPU (time-slicing): the device plugin
    # gives a replica the GPU with the fewest replicas in use, a whole GPU one nobody uses.
    shared_resource_names: tuple[str, ...] = ("nvidia.com/gpu.shared",)
    memory_annotation: str = "ballast.io/gpu-memory"
    util_annotation: str = "ballast.io/gpu-util"
    default_memory_mib: float = 0.0
    default_util: float = 30.0
    util_weight: float = 1.0
    memory_weight: float = 1.0


def parse_args(f: Fields) -> Args:
    d = Args()
    names = f.raw("resourceNames", list(d.resource_names))
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise f.error("resourceNames", "expected a list of resource names (nvidia.com/gpu, ...)")
    memory = f.raw("defaultMemory", 0)
    try:
        default_memory = bytes_value(memory) / MIB
    except QuantityError as exc:
        raise f.error("defaultMemory", str(exc)) from None
    if default_memory < 0:
        raise f.error("defaultMemory", "must not be negative")
    shared = f.raw("sharedResourceNames", list(d.shared_resource_names))
    if not isinstance(shared, list) or not all(isinstance(n, str) and n for n in shared):
        raise f.error("sharedResourceNames", "expected a list of resource names")
    args = Args(
        resource_names=tuple(names),
        shared_resource_names=tuple(shared),
        memory_annotation=f.string("memoryAnnotation", d.memory_annotation),
        util_annotation=f.string("utilAnnotation", d.util_annotation),
        default_memory_mib=default_memory,
        default_util=f.number("defaultUtil", d.default_util, 0, 100),
        util_weight=f.number("utilWeight", d.util_weight, 0, 100),
        memory_weight=f.number("memoryWeight", d.memory_weight, 0, 100),
    )
    if args.util_weight + args.memory_weight <= 0:
        raise f.error("utilWeight", "utilWeight and memoryWeight must not both be 0")
    f.finish()
    return args


@dataclass(frozen=True)
class Need:
    gpus: int  # GPUs (or shared replicas) requested
    memory_mib: float  # per GPU
    util: float  # percent of one GPU, per GPU
    shared: bool = False  # replicas of shared GPUs


def gpu_count(pod: PodInfo, names: tuple[str, ...]) -> int:
    return sum(pod.requests.get(name, 0) for name in names)


def declared(pod: PodInfo, args: Args) -> tuple[int, float | None, float | None]:
    """(GPU count, memory MiB, util %) as the pod states them, None where it does not; parsed
    once per pod. A malformed annotation counts as absent: a typo must not block a pod."""
    memo = pod.memo.get(NAME)
    if memo is not None and memo[0] is args:  # profiles may read different annotations
        return memo[1]
    annotations = (pod.raw.get("metadata") or {}).get("annotations") or {}
    memory = util = None
    text = annotations.get(args.memory_annotation)
    if text is not None:
        try:
            memory = max(0.0, bytes_value(text) / MIB)
        except QuantityError:
            pass
    text = annotations.get(args.util_annotation)
    if text is not None:
        try:
            util = min(100.0, max(0.0, float(text)))
        except ValueError:
            pass
    found = (gpu_count(pod, args.resource_names), memory, util)
    pod.memo[NAME] = (args, found)
    return found


def is_shared(pod: PodInfo, args: Args) -> bool:
    return any(pod.requests.get(n, 0) > 0 for n in args.shared_resource_names)


def need_of(pod: PodInfo, args: Args, gpus: GpuLoads | None = None) -> Need | None:
    """What the pod asks of GPUs; None for a pod that requests none."""
    if not args.resource_names or not any(n in pod.requests for n in args.resource_names):
        return None
    count, memory, util = declared(pod, args)
    if count <= 0:
        return None
    if (memory is None or util is None) and gpus is not None and gpus.workloads:
        owner = workload(pod)
        learned = gpus.workloads.get(owner.key) if owner is not None else None
        if learned is not None:  # one replica's use, over the GPUs it asks for
            memory = learned[0] / count if memory is None else memory
            util = min(100.0, learned[1] / count) if util is None else util
    return Need(
        count,
        args.default_memory_mib if memory is None else memory,
        args.default_util if util is None else util,
        is_shared(pod, args),
    )


@dataclass(frozen=True)
class NodeGpus:
    """A node's GPUs as the plugin judges them: measured, or placed pods' needs if larger."""

    most_free_mib: list[float]  # each GPU's measured free memory, largest first
    total_mib: float
    used_mib: float
    busy: float  # mean percent over the node's GPUs


def node_gpus(node: NodeInfo, snap: Snapshot, args: Args) -> NodeGpus | None:
    gpus = snap.gpus.live(node.name, snap.now)
    if not gpus:
        return None
    placed_mib = placed_util = 0.0
    for pod in node.pods.values():
        need = need_of(pod, args, snap.gpus)
        if need is not None:
            placed_mib += need.gpus * need.memory_mib
            placed_util += need.gpus * need.util
    measured_util = sum(g.util for g in gpus)
    return NodeGpus(
        most_free_mib=sorted((g.fb_free for g in gpus), reverse=True),
        total_mib=sum(g.fb_total for g in gpus),
        used_mib=max(sum(g.fb_used for g in gpus), placed_mib),
        busy=min(100.0, max(measured_util, placed_util) / len(gpus)),
    )


@dataclass
class GpuView:
    """One GPU as the next pod would find it: measured, plus placed pods not measured yet."""

    index: str
    pods: int
    used_mib: float
    total_mib: float
    util: float

    @property
    def order(self) -> tuple[int, int, int, str]:
        # Whole GPUs by number, then other indices (MIG instances, `0-mig3`) by name: one type
        # per position, so a node with both sorts.
        digit = self.index.isdigit()
        return (self.pods, 0 if digit else 1, int(self.index) if digit else 0, self.index)


def predicted_gpus(node: NodeInfo, snap: Snapshot, args: Args) -> list[GpuView] | None:
    """Per GPU, its measured figures and pods (dcgm-exporter's pod mapping), with the node's
    GPU pods the mapping does not show yet given GPUs as the device plugin would (a replica
    the GPU with the fewest pods, a whole GPU the first one without any; in the order they were
    put on the node).
    None when the mapping says nothing: off, or no pod listed on any GPU of the cluster yet
    (the node-level view then judges)."""
    gpus = snap.gpus.live(node.name, snap.now)
    if not gpus or not snap.gpus.mapped or any(g.pods is None for g in gpus):
        return None
    seen = {p for g in gpus for p in g.pods or ()}
    placed = {}
    for pod in node.pods.values():
        need = need_of(pod, args, snap.gpus)
        if need is not None:
            placed[pod.key] = (pod, need)
    views = []
    for g in gpus:
        # A pod the mapping shows may not use all it will yet (starting, growing): its need
        # counts when larger than what was measured.
        needs = [placed[p][1] for p in g.pods or () if p in placed]
        used = max(g.fb_used, sum(n.memory_mib for n in needs))
        util = max(g.util, sum(n.util for n in needs))
        views.append(GpuView(g.index, len(g.pods or ()), used, g.fb_total, util))
    for pod, need in placed.values():  # the order they were put on the node: bind order
        if pod.key not in seen:
            for view in assign(views, need):
                view.pods += 1
                view.used_mib += need.memory_mib
                view.util += need.util
    return views


def assign(views: list[GpuView], need: Need) -> list[GpuView]:
    """The GPUs the device plugin gives a pod: the least used for a replica, else the first
    ones nobody uses (the least used when too few are free)."""
    ordered = sorted(views, key=lambda v: v.order)
    if need.shared:
        return ordered[:1]
    return ordered[: min(need.gpus, len(ordered))]


class Plugin:
    name = NAME
    reads_gpus = True  # the runtime fetches the watcher's GPU windows for it
    pre_filter_reads_pods = False  # the pod alone: trials reuse it
    skip_holds_with_fewer_pods = True

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    # -- filter -------------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool:
        need = need_of(pod, self.args, snap.gpus)
        state[_KEY] = need
        return need is not None and need.memory_mib > 0 and len(snap.gpus) > 0

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        need = state[_KEY] if _KEY in state else need_of(pod, self.args, snap.gpus)
        if need is None or need.memory_mib <= 0 or snap.gpus.stale(node.name, snap.now):
            return Status.success()  # refused on fresh figures only: stale ones, counts only
        views = predicted_gpus(node, snap, self.args)
        if views is not None:
            given = assign(views, need)
            if any(v.total_mib - v.used_mib < need.memory_mib for v in given):
                return Status.reject(f"node(s) had no GPU with {need.memory_mib:.0f} MiB free")
            return Status.success()
        seen = node_gpus(node, snap, self.args)
        if seen is None:
            return Status.success()  # no GPU data: the device plugin's counts decide
        wanted = min(need.gpus, len(seen.most_free_mib))
        fits = sum(1 for free in seen.most_free_mib if free >= need.memory_mib)
        left = seen.total_mib - seen.used_mib
        if fits < wanted or left < need.gpus * need.memory_mib:
            return Status.reject(f"node(s) had no GPU with {need.memory_mib:.0f} MiB free")
        return Status.success()

    # -- score --------------------------------------------------------------------------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> bool:
        need = need_of(pod, self.args, snap.gpus)
        state[_KEY] = need
        return need is not None and len(snap.gpus) > 0

    def _score(self, need: Need, node: NodeInfo, snap: Snapshot) -> float | None:
        views = predicted_gpus(node, snap, self.args)
        if views is not None:  # the GPUs the pod would get
            given = assign(views, need)
            total = sum(v.total_mib for v in given)
            if total <= 0:
                return None
            idle = 100.0 - min(100.0, sum(v.util for v in given) / len(given))
            left = total - sum(v.used_mib for v in given) - len(given) * need.memory_mib
        else:
            seen = node_gpus(node, snap, self.args)
            if seen is None or seen.total_mib <= 0:
                return None
            idle = 100.0 - seen.busy
            total = seen.total_mib
            left = seen.total_mib - seen.used_mib - need.gpus * need.memory_mib
        memory = min(max(100.0 * left / total, 0.0), 100.0)
        a = self.args
        return (a.util_weight * idle + a.memory_weight * memory) / (a.util_weight + a.memory_weight)

    def score_all(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snap: Snapshot
    ) -> list[int]:
        need = state[_KEY] if _KEY in state else need_of(pod, self.args, snap.gpus)
        if need is None:
            return [0] * len(nodes)
        values = [self._score(need, node, snap) for node in nodes]
        known = [v for v in values if v is not None]
        neutral = sum(known) / len(known) if known else MAX_NODE_SCORE / 2
        out = []
        for node, value in zip(nodes, values, strict=True):
            if value is None:
                note_fallback(state, node.name, MISSING)
                value = neutral
            out.append(int(round(value)))
        return out

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> int:
        """A lone node has nothing to be compared with; the profile scores through score_all."""
        return self.score_all(state, pod, [node], snap)[0]
