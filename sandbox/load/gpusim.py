"""GPU nodes for the sandbox and a dcgm-exporter whose figures follow the GPU pods placed.

Nodes: kwok nodes advertising `nvidia.com/gpu` (whole GPUs) or, with time-slicing's
renamed replicas, `nvidia.com/gpu.shared` (GPUs x replicas), labelled as NVIDIA's GPU feature
discovery labels them (`nvidia.com/gpu.count`, `.product`, `.memory` in MiB, `.replicas`).

Pods: a pod requesting either resource is placed on GPUs of its node as the device plugin
would: whole GPUs on the lowest free indices, a shared replica on the GPU with the fewest
replicas in use (sticky for the pod's life). It uses the GPU memory and compute its
annotations declare (`ballast.io/gpu-memory`, a quantity; `ballast.io/gpu-util`, percent of
one GPU; the same keys GpuLoad reads), or `sandbox.ballast.io/gpu-memory-use` and
`sandbox.ballast.io/gpu-util-use` when set (what it really uses, when that differs from what
it declares), reached over the simulator's ramp. Each GPU reports the sum of its pods,
utilisation clamped at 100 % and memory at its framebuffer, through sandbox/load/dcgm.py's series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sandbox.cluster.nodes import NodeSpec
from sandbox.load.dcgm import DEFAULT_FB_MIB, DEFAULT_MODEL, DcgmSeries
from shared.quantities import QuantityError, bytes_value

if TYPE_CHECKING:
    from sandbox.load.exporter import SyntheticExporter

WHOLE = "nvidia.com/gpu"
SHARED = "nvidia.com/gpu.shared"
COUNT_LABEL = "nvidia.com/gpu.count"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MEMORY_LABEL = "nvidia.com/gpu.memory"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
MEMORY_ANNOTATION = "ballast.io/gpu-memory"
UTIL_ANNOTATION = "ballast.io/gpu-util"
MEMORY_USE_ANNOTATION = "sandbox.ballast.io/gpu-memory-use"
UTIL_USE_ANNOTATION = "sandbox.ballast.io/gpu-util-use"
DEFAULT_UTIL = 30.0  # percent of a GPU, a pod that declares none
MIB = 1024 * 1024


@dataclass(frozen=True)
class NodeGpus:
    count: int
    fb_mib: float
    model: str


@dataclass(frozen=True)
class PodGpu:
    count: int  # GPUs or replicas requested
    shared: bool
    memory_mib: float  # per GPU, once ramped up
    util: float  # percent of one GPU, once ramped up


def gpu_node_specs(
    count: int,
    gpus: int = 4,
    replicas: int = 1,
    prefix: str = "gpu-node-",
    model: str = DEFAULT_MODEL,
    fb_mib: int = DEFAULT_FB_MIB,
    **kwargs: Any,
) -> list[NodeSpec]:
    """`count` nodes with `gpus` GPUs each; `replicas` > 1 advertises them time-sliced."""
    if gpus < 1 or replicas < 1:
        raise ValueError("a GPU node needs at least one GPU and one replica per GPU")
    resource = {WHOLE: str(gpus)} if replicas == 1 else {SHARED: str(gpus * replicas)}
    labels = {
        COUNT_LABEL: str(gpus),
        PRODUCT_LABEL: model.replace(" ", "-"),
        MEMORY_LABEL: str(fb_mib),
        REPLICAS_LABEL: str(replicas),
    }
    return [
        NodeSpec(f"{prefix}{i}", labels=labels, extended=resource, **kwargs) for i in range(count)
    ]


def node_gpus(node: dict) -> NodeGpus | None:
    """A Node's GPUs (dict form, as the API returns it), or None for a node without GPUs."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    alloc = (node.get("status") or {}).get("allocatable") or {}
    try:
        count = int(labels.get(COUNT_LABEL) or alloc.get(WHOLE) or 0)
        fb_mib = float(labels.get(MEMORY_LABEL) or DEFAULT_FB_MIB)
    except ValueError:
        return None
    if count <= 0:
        return None
    model = str(labels.get(PRODUCT_LABEL) or DEFAULT_MODEL).replace("-", " ")
    return NodeGpus(count, fb_mib, model)


def _quantity_mib(text: Any) -> float | None:
    try:
        return max(0.0, bytes_value(text) / MIB)
    except (QuantityError, TypeError):
        return None


def _percent(text: Any) -> float | None:
    try:
        return min(100.0, max(0.0, float(text)))
    except (TypeError, ValueError):
        return None


def pod_gpu(pod: dict) -> PodGpu | None:
    """What a pod (dict form) asks of GPUs and uses, or None for a pod without GPUs."""
    whole = shared = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = resources.get("limits") or resources.get("requests") or {}
        try:
            whole += int(asked.get(WHOLE, 0))
            shared += int(asked.get(SHARED, 0))
        except (TypeError, ValueError):
            continue
    if whole <= 0 and shared <= 0:
        return None
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    memory = _quantity_mib(notes.get(MEMORY_USE_ANNOTATION))
    if memory is None:
        memory = _quantity_mib(notes.get(MEMORY_ANNOTATION)) or 0.0
    util = _percent(notes.get(UTIL_USE_ANNOTATION))
    if util is None:
        util = _percent(notes.get(UTIL_ANNOTATION))
    return PodGpu(whole or shared, whole <= 0, memory, DEFAULT_UTIL if util is None else util)


class GpuSimulator:
    """Called by the Simulator every tick (its `gpus`) with its nodes and running pods; keeps
    the dcgm series of every GPU node equal to the sum of its pods' use."""

    def __init__(self, exporter: SyntheticExporter) -> None:
        self.series = DcgmSeries()
        exporter.renderers.append(self.series.render)
        self._nodes: dict[str, NodeGpus] = {}
        self._placed: dict[tuple[str, str], tuple[int, ...]] = {}  # (pod, node) -> GPU indices

    def __call__(self, nodes: dict[str, Any], pods: list[Any], now: float, config: Any) -> None:
        wanted = {n: cap.gpu for n, cap in nodes.items() if getattr(cap, "gpu", None) is not None}
        for name in set(self._nodes) - set(wanted):
            self.series.remove_node(name)
            del self._nodes[name]
        for name, gpus in wanted.items():
            if self._nodes.get(name) != gpus:
                self.series.add_node(name, gpus.count, gpus.model, gpus.fb_mib)
                self._nodes[name] = gpus
        running = {(p.key, p.node): p for p in pods if p.node in wanted and getattr(p, "gpu", None)}
        self._placed = {k: v for k, v in self._placed.items() if k in running}
        util: dict[tuple[str, int], float] = {}
        memory: dict[tuple[str, int], float] = {}
        users: dict[tuple[str, int], list[tuple[str, str, str]]] = {}
        for key, pod in sorted(running.items(), key=lambda kv: kv[1].started):
            indices = self._placed.get(key)
            if indices is None:
                indices = self._placed[key] = self._assign(pod, wanted[pod.node].count)
            ramp = 1.0
            if config.ramp_seconds > 0:
                ramp = min(1.0, max(0.0, (now - pod.started) / config.ramp_seconds))
            namespace, name = pod.key.split("/", 1)
            for index in indices:
                gpu = (pod.node, index)
                util[gpu] = util.get(gpu, 0.0) + pod.gpu.util * ramp
                memory[gpu] = memory.get(gpu, 0.0) + pod.gpu.memory_mib * ramp
                users.setdefault(gpu, []).append((namespace, name, "main"))
        for name, gpus in wanted.items():
            for index in range(gpus.count):
                gpu = (name, index)
                self.series.set(
                    name, index, util.get(gpu, 0.0), memory.get(gpu, 0.0), users.get(gpu)
                )

    def assignments(self) -> dict[tuple[str, str], tuple[int, ...]]:
        """(pod namespace/name, node) -> the GPU indices it was given, for pods running now."""
        return dict(self._placed)

    def _assign(self, pod: Any, count: int) -> tuple[int, ...]:
        """The device plugin's choice: whole GPUs on the lowest free indices (any, when
        oversubscribed), a shared replica on the least used GPU."""
        taken: dict[int, int] = dict.fromkeys(range(count), 0)
        for (_, node), indices in self._placed.items():
            if node == pod.node:
                for i in indices:
                    taken[i] = taken.get(i, 0) + 1
        if pod.gpu.shared:
            return (min(range(count), key=lambda i: (taken[i], i)),)
        free = [i for i in range(count) if taken[i] == 0]
        chosen = (free + [i for i in range(count) if i not in free])[: pod.gpu.count]
        return tuple(chosen)
