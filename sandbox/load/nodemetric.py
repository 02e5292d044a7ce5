"""NodeMetric objects as Koordinator's node agent (koordlet) writes them, from the simulator's load.

Koordinator's koord-scheduler (LoadAwareScheduling) and koord-descheduler (LowNodeLoad) read
node and pod usage only from `slo.koordinator.sh/v1alpha1` NodeMetric objects, one per node,
which koordlet fills on every node. The sandbox has no kubelets, so the simulator stands in:
at every tick it hands the same load it gives the exporter (what Prometheus scrapes) to
`NodeMetricWriter.observe`, and the writer keeps koordlet's books and writes them.

What koordlet (v1.8.0, statesinformer/impl/states_nodemetric.go) does, and this writer with it:
- It samples every second and writes the status every `reportIntervalSeconds` (default 60).
- `nodeUsage`, `systemUsage` and each pod's `podUsage` are averages over the last
  `aggregateDurationSeconds` (default 300), so a step in load shows in full only after that.
- `podsMetric` lists the pods running now, sorted by namespace and name: a pod that is gone is
  not listed again.
- `aggregatedNodeUsages` holds avg, p50, p90, p95 and p99 of the node's use for each duration of
  `nodeAggregatePolicy`, left out while the samples cover less than half the duration (its cold
  start). A percentile is the sorted samples' element at int(n x p) - 1.
- The spec's `metricCollectPolicy` says the report interval and durations; LoadAwareScheduling
  reads `reportIntervalSeconds` to decide which recently placed pods the figures include.
Where the simulator's node is over 100 %, the exporter serves 100 %; `nodeUsage` says the same,
and the pods' use is scaled down pro rata (as throttling would), so `systemUsage` plus the
pods' sum, which koord-descheduler reads, equals `nodeUsage`, which koord-scheduler reads.

The writer also does what Koordinator's slo-controller does for the objects themselves: it
creates a node's NodeMetric (with the spec) when it first sees the node and deletes it when the
node is gone. Writes go through the status subresource (a merge patch, so `podsMetric`, a list,
is replaced whole) on the writer's own thread, never on the simulator's tick.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.load.simulator import NodeCapacity, PodUse, SimulatorConfig, node_loads, pod_use

log = logging.getLogger(__name__)

GROUP = "slo.koordinator.sh"
VERSION = "v1alpha1"
PLURAL = "nodemetrics"
REQUEST_TIMEOUT = 10.0
# koordlet's aggregation types, in its order.
PERCENTILES = (("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99))
# koordlet reports an aggregate only once its samples span this share of the duration.
COLD_START_RATIO = 0.5


@dataclass(frozen=True)
class NodeMetricConfig:
    # koordlet's defaults: report every 60 s, averages over 300 s, aggregates over 5 minutes.
    report_seconds: float = 60.0
    aggregate_seconds: float = 300.0
    durations: tuple[float, ...] = (300.0,)
    # As a koordlet that has run long before the benchmark: a node first seen gets its longest
    # window of history at its first sample's load, and the first report goes out at once.
    warm_start: bool = False

    def __post_init__(self) -> None:
        if self.report_seconds <= 0 or self.aggregate_seconds <= 0:
            raise ValueError(
                "report_seconds and aggregate_seconds must be > 0, got "
                f"{self.report_seconds} and {self.aggregate_seconds}"
            )
        if any(d <= 0 for d in self.durations):
            raise ValueError(f"durations must be > 0, got {self.durations}")

    @property
    def history_seconds(self) -> float:
        return max(self.aggregate_seconds, *self.durations)


@dataclass(frozen=True)
class Tick:
    """One second of truth, in millicores and bytes: each node's use, the part not from pods,
    and each running pod's use (pod key -> (node, cpu, memory))."""

    at: float
    node: dict[str, tuple[float, float]]
    system: dict[str, tuple[float, float]]
    pods: dict[str, tuple[str, float, float]]


def tick(
    nodes: dict[str, NodeCapacity], pods: list[PodUse], now: float, config: SimulatorConfig
) -> Tick:
    """The load the exporter serves at `now` (node_loads, clamped at 100 %), split as koordlet
    reports it: the node's background is its system use, the rest is the pods'."""
    loads = node_loads(nodes, pods, now, config)
    background = node_loads(nodes, [], now, config)
    uses = {p.key: (p.node, *pod_use(p, now, config)) for p in pods if p.node in nodes}
    demand: dict[str, list[float]] = {name: [0.0, 0.0] for name in nodes}
    for node, cpu, memory in uses.values():
        demand[node][0] += cpu
        demand[node][1] += memory
    node_use, system, scale = {}, {}, {}
    for name, cap in nodes.items():
        cpu = loads[name][0] * cap.cpu_m / 100
        memory = loads[name][1] * cap.memory_bytes / 100
        sys_cpu = min(background[name][0] * cap.cpu_m / 100, cpu)
        sys_memory = min(background[name][1] * cap.memory_bytes / 100, memory)
        node_use[name], system[name] = (cpu, memory), (sys_cpu, sys_memory)
        # 1 unless the node is clamped: then the pods share what is left after the system.
        scale[name] = (
            _share(cpu - sys_cpu, demand[name][0]),
            _share(memory - sys_memory, demand[name][1]),
        )
    pod_uses = {
        key: (node, cpu * scale[node][0], memory * scale[node][1])
        for key, (node, cpu, memory) in uses.items()
    }
    return Tick(now, node_use, system, pod_uses)


def _share(left: float, demand: float) -> float:
    return min(1.0, left / demand) if demand > 0 else 0.0


def _resources(cpu_m: float, memory: float) -> dict[str, dict[str, str]]:
    return {"resources": {"cpu": f"{round(cpu_m)}m", "memory": str(round(memory))}}


def _mean(values: list[tuple[float, float]]) -> tuple[float, float]:
    return sum(v[0] for v in values) / len(values), sum(v[1] for v in values) / len(values)


def percentile(values: list[float], p: float) -> float:
    """koordlet's percentile: the sorted values' element at int(n x p) - 1 (at least the first)."""
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * p) - 1)]


def _duration(seconds: float) -> str:
    return f"{seconds:g}s"  # a Go duration, as metav1.Duration reads it


def spec(config: NodeMetricConfig) -> dict:
    return {
        "metricCollectPolicy": {
            "aggregateDurationSeconds": round(config.aggregate_seconds),
            "reportIntervalSeconds": max(1, round(config.report_seconds)),
            "nodeAggregatePolicy": {"durations": [_duration(d) for d in config.durations]},
        }
    }


class Books:
    """koordlet's books, without I/O: every node's samples for the longest window and every
    pod's for the averaging window; `status` reads them as koordlet's report would."""

    def __init__(self, config: NodeMetricConfig) -> None:
        self.config = config
        # node -> (time, cpu, memory, system cpu, system memory)
        self._nodes: dict[str, deque[tuple[float, float, float, float, float]]] = {}
        # pod key -> (time, node, cpu, memory)
        self._pods: dict[str, deque[tuple[float, str, float, float]]] = {}
        self._last: Tick | None = None

    def add(self, sample: Tick) -> None:
        for name, (cpu, memory) in sample.node.items():
            system = sample.system[name]
            if self.config.warm_start and name not in self._nodes:
                span = int(self.config.history_seconds)
                self._nodes[name] = deque(
                    (sample.at - k, cpu, memory, *system) for k in range(span, 0, -1)
                )
            self._nodes.setdefault(name, deque()).append((sample.at, cpu, memory, *system))
        for key, (node, cpu, memory) in sample.pods.items():
            self._pods.setdefault(key, deque()).append((sample.at, node, cpu, memory))
        self._last = sample
        self._forget(self._nodes, sample.at - self.config.history_seconds)
        self._forget(self._pods, sample.at - self.config.aggregate_seconds)

    @staticmethod
    def _forget(books: dict[str, deque], before: float) -> None:
        for key in list(books):
            samples = books[key]
            while samples and samples[0][0] <= before:
                samples.popleft()
            if not samples:
                del books[key]

    def nodes(self) -> list[str]:
        """The nodes the last tick saw: the ones to report."""
        return sorted(self._last.node) if self._last is not None else []

    def status(self, node: str, now: float) -> dict | None:
        """The node's NodeMetric status at `now`, or None when no sample is in the window."""
        samples = self._nodes.get(node, ())
        window = [s for s in samples if s[0] > now - self.config.aggregate_seconds]
        if not window:
            return None
        info = {
            "nodeUsage": _resources(*_mean([(s[1], s[2]) for s in window])),
            "systemUsage": _resources(*_mean([(s[3], s[4]) for s in window])),
        }
        aggregated = self._aggregated(samples, now)
        if aggregated:
            info["aggregatedNodeUsages"] = aggregated
        stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"updateTime": stamp, "nodeMetric": info, "podsMetric": self._pods_metric(node, now)}

    def _pods_metric(self, node: str, now: float) -> list[dict]:
        last = self._last.pods if self._last is not None else {}
        running = sorted(
            (key for key, (where, _, _) in last.items() if where == node),
            key=lambda k: tuple(k.split("/", 1)),
        )
        found = []
        for key in running:
            since = now - self.config.aggregate_seconds
            use = [(s[2], s[3]) for s in self._pods.get(key, ()) if s[0] > since and s[1] == node]
            if not use:
                continue
            namespace, name = key.split("/", 1)
            usage = _resources(*_mean(use))
            found.append({"namespace": namespace, "name": name, "podUsage": usage})
        return found

    def _aggregated(self, samples: Iterable[tuple], now: float) -> list[dict]:
        aggregated = []
        for duration in self.config.durations:
            window = [s for s in samples if s[0] > now - duration]
            if not window or window[-1][0] - window[0][0] < COLD_START_RATIO * duration:
                continue  # koordlet's cold start: too short a span to report
            use = [(s[1], s[2]) for s in window]
            usage = {"avg": _resources(*_mean(use))}
            for name, p in PERCENTILES:
                cpu = percentile([u[0] for u in use], p)
                usage[name] = _resources(cpu, percentile([u[1] for u in use], p))
            aggregated.append({"duration": _duration(duration), "usage": usage})
        return aggregated


class NodeMetricWriter:
    """Keeps the simulator's ticks for the longest window and, once started, writes every
    node's NodeMetric every `report_seconds` from its own thread. `include(node)` picks the
    nodes it reports (all by default), as koordlet runs only where it is installed."""

    def __init__(
        self,
        api: client.ApiClient,
        config: NodeMetricConfig | None = None,
        clock: Callable[[], float] = time.time,
        include: Callable[[str], bool] | None = None,
    ) -> None:
        self.config = config or NodeMetricConfig()
        self.custom = client.CustomObjectsApi(api)
        self.clock = clock
        self.include = include or (lambda _node: True)
        self._books = Books(self.config)
        self._created: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0
        self.writes = 0

    def observe(
        self,
        nodes: dict[str, NodeCapacity],
        pods: list[PodUse],
        now: float,
        sim_config: SimulatorConfig,
    ) -> None:
        """Records one tick of the simulator (cheap: no I/O; the simulator's `on_tick`)."""
        chosen = {name: cap for name, cap in nodes.items() if self.include(name)}
        sample = tick(chosen, [p for p in pods if p.node in chosen], now, sim_config)
        with self._lock:
            self._books.add(sample)

    def start(self) -> NodeMetricWriter:
        """Writes every `report_seconds` from a thread of its own until `stop`."""
        self._thread = threading.Thread(target=self._run, name="nodemetric", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = REQUEST_TIMEOUT) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _nodes(self) -> list[str]:
        with self._lock:
            return self._books.nodes()

    def statuses(self, now: float | None = None) -> dict[str, dict]:
        """Every reported node's status as of `now` (what the next write sends)."""
        now = self.clock() if now is None else now
        with self._lock:
            found = {name: self._books.status(name, now) for name in self._books.nodes()}
        return {name: body for name, body in found.items() if body is not None}

    def write(self) -> int:
        """Writes every node's status now; deletes the objects of nodes gone. Returns writes."""
        bodies = self.statuses()
        for name in sorted(self._created - set(bodies)):
            self._delete(name)
        written = 0
        for name, body in bodies.items():
            if self._ensure(name) and self._patch_status(name, body):
                written += 1
        self.writes += written
        return written

    def _run(self) -> None:
        # The objects once the simulator's first tick is in (as Koordinator's slo-controller
        # makes them for a new node), the first status one report interval later (as koordlet).
        while not self._nodes() and not self._stop.wait(0.2):
            pass
        for name in self._nodes():
            self._ensure(name)
        if self.config.warm_start:
            self.write()
        while not self._stop.wait(self.config.report_seconds):
            try:
                self.write()
            except Exception:  # one failed round must not end the reports
                self.errors += 1
                log.exception("NodeMetric write failed")

    def _ensure(self, name: str) -> bool:
        if name in self._created:
            return True
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "NodeMetric",
            "metadata": {"name": name},
            "spec": spec(self.config),
        }
        try:
            self.custom.create_cluster_custom_object(
                GROUP, VERSION, PLURAL, body, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status != 409:
                return self._failed("create", name, exc)
            # Left by an earlier writer: this one's spec is what its reports follow.
            try:
                self.custom.patch_cluster_custom_object(
                    GROUP,
                    VERSION,
                    PLURAL,
                    name,
                    {"spec": body["spec"]},
                    _request_timeout=REQUEST_TIMEOUT,
                )
            except ApiException as again:
                return self._failed("update the spec of", name, again)
        self._created.add(name)
        return True

    def _patch_status(self, name: str, body: dict) -> bool:
        try:
            self.custom.patch_cluster_custom_object_status(
                GROUP,
                VERSION,
                PLURAL,
                name,
                {"status": body},
                _request_timeout=REQUEST_TIMEOUT,
                _content_type="application/merge-patch+json",
            )
        except ApiException as exc:
            if exc.status == 404:
                self._created.discard(name)  # deleted meanwhile: made again next round
            return self._failed("write the status of", name, exc)
        return True

    def _delete(self, name: str) -> None:
        try:
            self.custom.delete_cluster_custom_object(
                GROUP, VERSION, PLURAL, name, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status != 404:
                self._failed("delete", name, exc)
                return
        self._created.discard(name)

    def _failed(self, what: str, name: str, exc: Exception) -> bool:
        self.errors += 1
        log.warning("could not %s NodeMetric %s: %s", what, name, exc)
        return False


def delete_all(api: client.ApiClient, names: Iterable[str]) -> None:
    """Deletes the named NodeMetrics (a test's nodes), ignoring those already gone."""
    custom = client.CustomObjectsApi(api)
    for name in names:
        try:
            custom.delete_cluster_custom_object(
                GROUP, VERSION, PLURAL, name, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
