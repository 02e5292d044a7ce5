"""The load-watcher wire format (paypal/load-watcher v0.2.x), shared by the watcher and clients.

The Go client decodes only `data.NodeMetricsMap`; `type` and `operator` are compared as exact,
case-sensitive strings; values are percentages for CPU and Memory; times are Unix seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Metric types and operators exactly as load-watcher spells them.
CPU = "CPU"
MEMORY = "Memory"
BANDWIDTH = "Bandwidth"
STORAGE = "Storage"
ENERGY = "Energy"
UNKNOWN = "Unknown"
METRIC_TYPES = (CPU, MEMORY, BANDWIDTH, STORAGE, ENERGY, UNKNOWN)

AVG = "AVG"
STD = "STD"
LATEST = "Latest"
OPERATORS = (AVG, STD, LATEST, UNKNOWN)

SOURCES = ("KubernetesMetricsServer", "Prometheus", "SignalFx", "Datadog")
METRICS_SERVER, PROMETHEUS = SOURCES[:2]

# What paypal/load-watcher v0.2.4 answers for a node, by source
# (pkg/watcher/internal/metricsprovider): from Prometheus, avg_over_time of every metric, then
# stddev_over_time of every metric, and no Latest; from metrics-server, CPU then Memory as
# Latest, with an empty name and rollup. Trimaran's TargetLoadPacking keeps the last CPU metric
# marked AVG or Latest, so a Latest beside AVG changes what it schedules on.
UPSTREAM_OPERATORS = {PROMETHEUS: (AVG, STD), METRICS_SERVER: (LATEST,)}
UNNAMED_SOURCES = (METRICS_SERVER,)


def upstream_operators(source: str) -> tuple[str, ...]:
    """The operators load-watcher answers for `source`, in its order (Prometheus's for a source
    it has no provider of ours for)."""
    return UPSTREAM_OPERATORS.get(source, UPSTREAM_OPERATORS[PROMETHEUS])


def parse_operators(text: str) -> tuple[str, ...]:
    """`AVG,STD,Latest` (a query parameter) as operators in the order given; WireFormatError
    names an unknown or repeated one."""
    known = (AVG, STD, LATEST)
    ops = tuple(text.split(","))
    for op in ops:
        if op not in known:
            raise WireFormatError(f"operators: {op!r} is not one of {', '.join(known)}")
    if len(set(ops)) != len(ops):
        raise WireFormatError("operators: each operator at most once")
    return ops


class WireFormatError(ValueError):
    """An envelope that does not follow the load-watcher format."""


@dataclass(frozen=True)
class Metric:
    name: str
    type: str
    operator: str
    rollup: str
    value: float

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "operator": self.operator,
            "rollup": self.rollup,
            "value": self.value,
        }


@dataclass(frozen=True)
class Window:
    duration: str
    start: int
    end: int


@dataclass
class Envelope:
    timestamp: int
    window: Window
    source: str
    nodes: dict[str, list[Metric]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "window": {
                "duration": self.window.duration,
                "start": self.window.start,
                "end": self.window.end,
            },
            "source": self.source,
            "data": {
                "NodeMetricsMap": {
                    node: {
                        "metrics": [m.to_json() for m in metrics],
                        "tags": {},
                        "metadata": {"dataCenter": ""},
                    }
                    for node, metrics in self.nodes.items()
                }
            },
        }


def number(value: Any, where: str) -> float:
    """`value` as a float; a JSON bool is no number, though Python counts it as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WireFormatError(f"{where}: expected a number, got {value!r}")
    return float(value)


def parse_envelope(doc: Any) -> Envelope:
    """Parse a decoded `GET /watcher` answer, raising WireFormatError naming the bad field."""
    if not isinstance(doc, dict):
        raise WireFormatError("envelope: expected a JSON object")
    window = doc.get("window")
    if not isinstance(window, dict):
        raise WireFormatError("window: expected an object")
    data = doc.get("data")
    if not isinstance(data, dict):
        raise WireFormatError("data: expected an object")
    node_map = data.get("NodeMetricsMap")
    if node_map is None:
        node_map = {}
    if not isinstance(node_map, dict):
        raise WireFormatError("data.NodeMetricsMap: expected an object")
    nodes: dict[str, list[Metric]] = {}
    for node, entry in node_map.items():
        where = f"data.NodeMetricsMap[{node!r}]"
        if not isinstance(entry, dict):
            raise WireFormatError(f"{where}: expected an object")
        raw_metrics = entry.get("metrics") or []
        if not isinstance(raw_metrics, list):
            raise WireFormatError(f"{where}.metrics: expected a list")
        metrics = []
        for i, m in enumerate(raw_metrics):
            if not isinstance(m, dict):
                raise WireFormatError(f"{where}.metrics[{i}]: expected an object")
            metrics.append(
                Metric(
                    name=str(m.get("name", "")),
                    type=str(m.get("type", "")),
                    operator=str(m.get("operator", "")),
                    rollup=str(m.get("rollup", "")),
                    value=number(m.get("value"), f"{where}.metrics[{i}].value"),
                )
            )
        nodes[str(node)] = metrics
    return Envelope(
        timestamp=int(number(doc.get("timestamp"), "timestamp")),
        window=Window(
            duration=str(window.get("duration", "")),
            start=int(number(window.get("start"), "window.start")),
            end=int(number(window.get("end"), "window.end")),
        ),
        source=str(doc.get("source", "")),
        nodes=nodes,
    )
