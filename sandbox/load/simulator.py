"""The closed-loop load simulator: node load follows the pods the scheduler placed.

Each node's CPU and memory use is its own background load plus the use of the pods running on
it. A pod uses its requests times a random factor drawn once per pod from a seeded generator,
reached linearly over a ramp-up delay after the pod is first seen bound; pods without requests
use a small default. The result is served as node-exporter metrics through SyntheticExporter, so
a placement changes what Prometheus scrapes, the watcher aggregates and the scheduler reads.
With `kwok_usage=True` the same load also goes to kwok's simulated kubelets, which metrics-server
scrapes: each pod and node gets its use as annotations once (`sandbox.load.usage`), and kwok
computes the ramp and the background's wobble itself at every scrape. kwok does not clamp a
node at 100 % as the exporter does: its figures are the true demand.

Cluster state comes from list+watch of nodes and pods (re-list on 410 Gone), never per-pod GETs.
`node_loads` is the pure part and takes no I/O; `Simulator` wires it to the apiserver.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from sandbox.load import gpusim, usage
from sandbox.load.exporter import SyntheticExporter
from shared.quantities import QuantityError, bytes_value, cpu_millis

if TYPE_CHECKING:
    from sandbox.load.trace_player import TracePlayer

log = logging.getLogger(__name__)

# Watches end server-side after this many seconds so a stop request is noticed promptly.
WATCH_SECONDS = 5
REQUEST_TIMEOUT = 10.0
POD_CONTAINER = "main"  # the container name of the simulated pods' cAdvisor series


@dataclass(frozen=True)
class SimulatorConfig:
    seed: int = 1
    # Each pod uses requests x a factor drawn uniformly from this range.
    factor_min: float = 0.5
    factor_max: float = 1.1
    ramp_seconds: float = 20.0
    # Background load per node (percent), drawn uniformly per node from these ranges.
    background_cpu: tuple[float, float] = (5.0, 30.0)
    background_memory: tuple[float, float] = (10.0, 30.0)
    # Background load wobbles by this fraction of itself over `wobble_period` seconds, so the
    # window's standard deviation is not zero (LoadVariationRiskBalancing reads it).
    wobble: float = 0.1
    wobble_period: float = 60.0
    # Use of a pod that requests nothing.
    default_cpu_m: int = 100
    default_memory_bytes: int = 128 * 1024**2
    interval: float = 1.0
    # Per-node background overrides (cpu %, memory %), e.g. to make one node busy.
    background: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Per-pod factor overrides by namespace/name, e.g. pods that use 3x what they request.
    pod_factors: dict[str, float] = field(default_factory=dict)
    # A production trace replayed (sandbox.load.trace_player): the pods it knows use what their VM
    # used at that moment instead of requests x factor; the others keep the factor. The
    # exporter follows it; kwok's annotations (`kwok_usage`) are written once and do not.
    trace: TracePlayer | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.factor_min <= self.factor_max:
            raise ValueError(
                f"factor must satisfy 0 <= low <= high, got {self.factor_min}..{self.factor_max}"
            )
        if self.ramp_seconds < 0:
            raise ValueError(f"ramp_seconds must be >= 0, got {self.ramp_seconds}")
        if self.interval <= 0:
            raise ValueError(f"interval must be > 0, got {self.interval}")
        for name, (lo, hi) in (
            ("background_cpu", self.background_cpu),
            ("background_memory", self.background_memory),
        ):
            if not 0 <= lo <= hi <= 100:
                raise ValueError(f"{name} must satisfy 0 <= low <= high <= 100, got {lo}..{hi}")


@dataclass(frozen=True)
class NodeCapacity:
    cpu_m: int
    memory_bytes: int
    gpu: gpusim.NodeGpus | None = None  # a GPU node's GPUs (sandbox/load/gpusim.py)


@dataclass(frozen=True)
class PodUse:
    """A running pod as the simulator sees it: where, what it asks for, since when."""

    key: str  # namespace/name, seeds the pod's factor
    node: str
    cpu_m: int  # requested (0 when none)
    memory_bytes: int
    started: float  # Unix seconds the pod was first seen bound
    gpu: gpusim.PodGpu | None = None  # what it asks of GPUs and uses (sandbox/load/gpusim.py)


def pod_factor(seed: int, key: str, config: SimulatorConfig) -> float:
    """The pod's use/request factor: the same for the same seed and pod, whatever the order."""
    if key in config.pod_factors:
        return config.pod_factors[key]
    return random.Random(f"{seed}:{key}").uniform(config.factor_min, config.factor_max)


def background_load(seed: int, node: str, config: SimulatorConfig) -> tuple[float, float]:
    if node in config.background:
        return config.background[node]
    rng = random.Random(f"{seed}:node:{node}")
    return rng.uniform(*config.background_cpu), rng.uniform(*config.background_memory)


def wobble_phase(seed: int, node: str) -> float:
    return random.Random(f"{seed}:phase:{node}").uniform(0, 2 * math.pi)


def full_use(pod: PodUse, config: SimulatorConfig) -> tuple[float, float]:
    """(CPU millicores, memory bytes) the pod uses once its ramp is over."""
    factor = pod_factor(config.seed, pod.key, config)
    cpu = pod.cpu_m or config.default_cpu_m
    memory = pod.memory_bytes or config.default_memory_bytes
    return cpu * factor, memory * factor


def pod_annotations(pod: PodUse, config: SimulatorConfig) -> dict[str, str]:
    """The pod's use for kwok's kubelets (`sandbox.load.usage`): what `pod_use` computes."""
    cpu_m, memory = full_use(pod, config)
    return {
        usage.USAGE_CPU: f"{cpu_m / 1000:.6f}",
        usage.USAGE_MEMORY: f"{memory:.0f}",
        usage.USAGE_SINCE: f"{pod.started:.3f}",
        usage.USAGE_RAMP: f"{config.ramp_seconds:g}",
    }


def node_annotations(node: str, cap: NodeCapacity, config: SimulatorConfig) -> dict[str, str]:
    """The node's background for kwok's kubelets, in cores and bytes: what `node_loads` adds."""
    bg_cpu, bg_mem = background_load(config.seed, node, config)
    return {
        usage.BACKGROUND_CPU: f"{bg_cpu * cap.cpu_m / 100_000:.6f}",
        usage.BACKGROUND_MEMORY: f"{bg_mem * cap.memory_bytes / 100:.0f}",
        usage.BACKGROUND_WOBBLE: f"{config.wobble:g}",
        usage.BACKGROUND_PERIOD: f"{config.wobble_period:g}",
        usage.BACKGROUND_PHASE: repr(wobble_phase(config.seed, node)),
    }


def pod_use(pod: PodUse, now: float, config: SimulatorConfig) -> tuple[float, float]:
    """(CPU millicores, memory bytes) the pod uses at `now`."""
    if config.ramp_seconds > 0:
        ramp = min(1.0, max(0.0, (now - pod.started) / config.ramp_seconds))
    else:
        ramp = 1.0
    traced = config.trace.use(pod.key, now) if config.trace is not None else None
    cpu, memory = traced if traced is not None else full_use(pod, config)
    return cpu * ramp, memory * ramp


def node_loads(
    nodes: dict[str, NodeCapacity],
    pods: list[PodUse],
    now: float,
    config: SimulatorConfig,
    clamp: bool = True,
) -> dict[str, tuple[float, float]]:
    """Node -> (CPU %, memory %), clamped to 0..100 unless `clamp` is False (the true demand a
    benchmark judges, which can pass 100 %). Pods on unknown nodes are ignored."""
    used: dict[str, list[float]] = {name: [0.0, 0.0] for name in nodes}
    for pod in pods:
        if pod.node in used:
            cpu, memory = pod_use(pod, now, config)
            used[pod.node][0] += cpu
            used[pod.node][1] += memory
    loads = {}
    for name, cap in nodes.items():
        bg_cpu, bg_mem = background_load(config.seed, name, config)
        phase = wobble_phase(config.seed, name)
        wobble = 1.0 + config.wobble * math.sin(2 * math.pi * now / config.wobble_period + phase)
        cpu = bg_cpu * wobble + (100.0 * used[name][0] / cap.cpu_m if cap.cpu_m > 0 else 0.0)
        mem = bg_mem + (100.0 * used[name][1] / cap.memory_bytes if cap.memory_bytes > 0 else 0.0)
        loads[name] = (_clamp(cpu), _clamp(mem)) if clamp else (cpu, mem)
    return loads


def _clamp(value: float) -> float:
    return min(100.0, max(0.0, value))


def node_capacity(node: dict) -> NodeCapacity:
    """Capacity of a Node as the API returns it (dict form); unparseable values count as 0."""
    alloc = (node.get("status") or {}).get("allocatable") or {}
    try:
        cpu = cpu_millis(alloc.get("cpu", 0))
    except QuantityError:
        cpu = 0
    try:
        memory = bytes_value(alloc.get("memory", 0))
    except QuantityError:
        memory = 0
    return NodeCapacity(cpu, memory, gpusim.node_gpus(node))


def pod_requests(pod: dict) -> tuple[int, int]:
    """Sum of the regular containers' CPU (m) and memory (bytes) requests; bad values count 0."""
    cpu = memory = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        try:
            cpu += cpu_millis(requests.get("cpu", 0))
            memory += bytes_value(requests.get("memory", 0))
        except QuantityError:
            continue
    return cpu, memory


# What `Simulator(on_tick=...)` is called with: nodes, running pods, now, the config.
TickObserver = Callable[[dict[str, NodeCapacity], list[PodUse], float, SimulatorConfig], None]


class Simulator:
    """Keeps the exporter's per-node load equal to background plus placed pods' use, and with
    `kwok_usage` the annotations kwok's kubelets report the same load from."""

    def __init__(
        self,
        api: client.ApiClient,
        exporter: SyntheticExporter | None,
        config: SimulatorConfig | None = None,
        clock: Callable[[], float] = time.time,
        kwok_usage: bool = False,
        on_tick: TickObserver | None = None,
    ) -> None:
        self.api = api
        self.exporter = exporter
        # dcgm-exporter's series for GPU nodes, following their GPU pods (sandbox/load/gpusim.py)
        self.gpus = gpusim.GpuSimulator(exporter) if exporter is not None else None
        self.kwok_usage = kwok_usage
        # Handed the state every tick's loads come from (sandbox.load.nodemetric's writer).
        self.on_tick = on_tick
        # What has been annotated already: pod uid -> (node, started); node -> capacity.
        self._annotated_pods: dict[str, tuple[str, float]] = {}
        self._annotated_nodes: dict[str, NodeCapacity] = {}
        self._writer: ThreadPoolExecutor | None = None
        self.config = config or SimulatorConfig()
        self.clock = clock
        self._nodes: dict[str, NodeCapacity] = {}
        self._pods: dict[str, PodUse] = {}  # by uid
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._synced = {"nodes": threading.Event(), "pods": threading.Event()}
        self.errors = 0

    def start(self) -> Simulator:
        specs = (("nodes", self._watch_nodes), ("pods", self._watch_pods), ("tick", self._tick))
        for name, target in specs:
            thread = threading.Thread(target=target, name=f"simulator-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def wait_synced(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        return all(e.wait(max(0.0, deadline - time.monotonic())) for e in self._synced.values())

    def stop(self, timeout: float = WATCH_SECONDS + REQUEST_TIMEOUT) -> None:
        """Ends the loops; a watch in flight ends within WATCH_SECONDS (threads are daemons)."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._writer is not None:
            self._writer.shutdown(wait=False, cancel_futures=True)

    def loads(self) -> dict[str, tuple[float, float]]:
        """The loads as of now, computed the same way the exporter is fed."""
        with self._lock:
            nodes = dict(self._nodes)
            pods = list(self._pods.values())
        return node_loads(nodes, pods, self.clock(), self.config)

    def pods_per_node(self) -> dict[str, int]:
        with self._lock:
            counts = dict.fromkeys(self._nodes, 0)
            for pod in self._pods.values():
                if pod.node in counts:
                    counts[pod.node] += 1
        return counts

    def update(self) -> None:
        """Push the current loads to the exporter (the tick thread calls this every interval)."""
        if self.on_tick is not None:
            with self._lock:
                nodes, pods = dict(self._nodes), list(self._pods.values())
            self.on_tick(nodes, pods, self.clock(), self.config)
        if self.kwok_usage:
            self._annotate()
        if self.exporter is None:
            return
        loads = self.loads()
        for name, (cpu, memory) in loads.items():
            self.exporter.set(name, cpu=cpu, memory=memory)
        for name in set(self.exporter.nodes()) - set(loads):
            self.exporter.remove(name)
        self._export_pods()
        if self.gpus is not None:
            with self._lock:
                nodes, pods = dict(self._nodes), list(self._pods.values())
            self.gpus(nodes, pods, self.clock(), self.config)

    def _export_pods(self) -> None:
        """Each running pod's use as cAdvisor series (one container, `main`), so Prometheus
        holds per-pod figures as a real cluster's kubelets give them: the same numbers
        `node_loads` adds to the pod's node."""
        now = self.clock()
        with self._lock:
            pods = list(self._pods.values())
        running = set()
        for pod in pods:
            namespace, name = pod.key.split("/", 1)
            cpu_m, memory = pod_use(pod, now, self.config)
            self.exporter.set_pod(namespace, name, pod.node, {POD_CONTAINER: (cpu_m, memory)})
            running.add((namespace, name))
        for gone in set(self.exporter.pods()) - running:
            self.exporter.remove_pod(*gone)

    def _annotate(self) -> None:
        """Writes the use of pods and nodes not annotated yet (once each, in parallel: a wave of
        pods must not wait for one another's patch, their ramp has begun)."""
        with self._lock:
            pods = [(uid, p) for uid, p in self._pods.items() if self._pod_changed(uid, p)]
            nodes = [(n, c) for n, c in self._nodes.items() if self._annotated_nodes.get(n) != c]
            for uid, pod in pods:
                self._annotated_pods[uid] = (pod.node, pod.started)
            for name, cap in nodes:
                self._annotated_nodes[name] = cap
            gone = set(self._annotated_pods) - set(self._pods)
            for uid in gone:
                del self._annotated_pods[uid]
        if not pods and not nodes:
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(8, thread_name_prefix="simulator-annotate")
        core = client.CoreV1Api(self.api)
        for _, pod in pods:
            namespace, name = pod.key.split("/", 1)
            body = {"metadata": {"annotations": pod_annotations(pod, self.config)}}
            self._writer.submit(self._patch, core.patch_namespaced_pod, name, namespace, body)
        for name, cap in nodes:
            body = {"metadata": {"annotations": node_annotations(name, cap, self.config)}}
            self._writer.submit(self._patch, core.patch_node, name, body)

    def _pod_changed(self, uid: str, pod: PodUse) -> bool:
        return self._annotated_pods.get(uid) != (pod.node, pod.started)

    def _patch(self, patch: Callable, *args: object) -> None:
        try:
            patch(*args, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:  # deleted meanwhile
                self.errors += 1
                log.warning("simulator could not annotate %s: %s", args[0], exc.reason)
        except Exception as exc:
            self.errors += 1
            log.warning("simulator could not annotate %s: %s", args[0], exc)

    def _tick(self) -> None:
        while not self._stop.is_set():
            try:
                self.update()
            except Exception:  # one bad tick must not stop the loop
                self.errors += 1
                log.exception("simulator update failed")
            self._stop.wait(self.config.interval)

    # list+watch, one loop per kind; each event updates the in-memory state only.
    def _watch_nodes(self) -> None:
        core = client.CoreV1Api(self.api)
        self._list_watch("nodes", core.list_node, self._replace_nodes, self._apply_node_event)

    def _watch_pods(self) -> None:
        core = client.CoreV1Api(self.api)
        self._list_watch(
            "pods", core.list_pod_for_all_namespaces, self._replace_pods, self._apply_pod_event
        )

    def _list_watch(
        self,
        kind: str,
        list_func: Callable,
        replace: Callable[[list[dict]], None],
        apply: Callable[[str, dict], None],
    ) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            try:
                response = list_func(_preload_content=False, _request_timeout=REQUEST_TIMEOUT)
                listed = json.loads(response.data)
                replace(listed.get("items") or [])
                self._synced[kind].set()
                rv = listed["metadata"]["resourceVersion"]
                while not self._stop.is_set():
                    rv = self._watch_once(list_func, rv, apply)
                backoff = 0.2
            except _Gone:
                continue  # re-list at once
            except Exception as exc:
                self.errors += 1
                log.warning("simulator %s watch failed, retrying in %.1fs: %s", kind, backoff, exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def _watch_once(self, list_func: Callable, rv: str, apply: Callable[[str, dict], None]) -> str:
        stream = watch.Watch().stream(
            list_func,
            resource_version=rv,
            timeout_seconds=WATCH_SECONDS,
            allow_watch_bookmarks=True,
            _request_timeout=WATCH_SECONDS + REQUEST_TIMEOUT,
        )
        try:
            for event in stream:
                obj = event["raw_object"]
                if event["type"] == "ERROR":
                    if obj.get("code") == 410:
                        raise _Gone()
                    raise RuntimeError(f"watch error: {obj.get('message')}")
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if event["type"] != "BOOKMARK":
                    apply(event["type"], obj)
                if self._stop.is_set():
                    break
        except ApiException as exc:
            if exc.status == 410:
                raise _Gone() from exc
            raise
        return rv

    def _replace_nodes(self, items: list[dict]) -> None:
        nodes = {n["metadata"]["name"]: node_capacity(n) for n in items}
        with self._lock:
            self._nodes = nodes

    def _apply_node_event(self, kind: str, node: dict) -> None:
        name = node["metadata"]["name"]
        with self._lock:
            if kind == "DELETED":
                self._nodes.pop(name, None)
            else:
                self._nodes[name] = node_capacity(node)

    def _replace_pods(self, items: list[dict]) -> None:
        now = self.clock()
        with self._lock:
            old = self._pods
            self._pods = {}
            for pod in items:
                use = self._pod_use(pod, old, now)
                if use is not None:
                    self._pods[pod["metadata"]["uid"]] = use

    def _apply_pod_event(self, kind: str, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        with self._lock:
            use = None if kind == "DELETED" else self._pod_use(pod, self._pods, self.clock())
            if use is None:
                self._pods.pop(uid, None)
            else:
                self._pods[uid] = use

    @staticmethod
    def _pod_use(pod: dict, known: dict[str, PodUse], now: float) -> PodUse | None:
        """The pod's use record, or None when it uses nothing (unbound, finished, deleting)."""
        meta = pod["metadata"]
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node or phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
            return None
        previous = known.get(meta["uid"])
        started = previous.started if previous is not None and previous.node == node else now
        cpu, memory = pod_requests(pod)
        key = f"{meta['namespace']}/{meta['name']}"
        return PodUse(key, node, cpu, memory, started, gpusim.pod_gpu(pod))


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""
