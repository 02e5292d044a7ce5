"""Turn a provider's raw values into accepted samples, rejecting bad ones per sample by reason."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from watcher.nodenames import NodeNamer

REASONS = (
    "not_a_number",
    "nan",
    "inf",
    "negative",
    "over_100",
    "duplicate",
    "no_node_label",
    "unknown_node",
)


def to_float(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None


def check_value(raw: Any, percent: bool) -> tuple[float | None, str | None]:
    """(value, None) when acceptable, else (None, reason)."""
    value = to_float(raw)
    if value is None:
        return None, "not_a_number"
    if math.isnan(value):
        return None, "nan"
    if math.isinf(value):
        return None, "inf"
    if value < 0:
        return None, "negative"
    if percent and value > 100.0:
        return None, "over_100"
    return value, None


def node_of(raw: Any, namer: NodeNamer) -> tuple[str | None, str | None]:
    """(Kubernetes node name, None) for a raw label value, else (None, why): `no_node_label`
    or `unknown_node`."""
    if not isinstance(raw, str) or not raw:
        return None, "no_node_label"
    node = namer.name(raw)
    return (node, None) if node is not None else (None, "unknown_node")


def gpu_index(labels: dict[str, Any]) -> str | None:
    """A GPU device's index on its node from dcgm-exporter's labels: `gpu`, or for a MIG
    instance (`GPU_I_ID` set) `<gpu>-mig<GPU_I_ID>`, a device of its own; None without `gpu`."""
    index, instance = labels.get("gpu"), labels.get("GPU_I_ID")
    if not isinstance(index, str) or not index:
        return None
    if isinstance(instance, str) and instance:
        return f"{index}-mig{instance}"
    return index


def validate(
    series: list[tuple[str | None, Any]], percent: bool, namer: NodeNamer
) -> tuple[dict[str, float], Counter[str]]:
    """Accepted values by node name, and how many samples were rejected for which reason.

    Two series naming the same node make both untrustworthy: that node gets no value this poll.
    """
    accepted: dict[str, float] = {}
    duplicates: Counter[str] = Counter()  # node -> how many of its series were dropped
    rejected: Counter[str] = Counter()
    for raw_node, raw_value in series:
        node, reason = node_of(raw_node, namer)
        if node is None:
            rejected[reason or "unknown_node"] += 1
            continue
        value, reason = check_value(raw_value, percent)
        if reason is not None:
            rejected[reason] += 1
            continue
        if node in accepted or node in duplicates:
            duplicates[node] += 1
            continue
        accepted[node] = value
    for node, repeats in duplicates.items():
        accepted.pop(node, None)
        rejected["duplicate"] += repeats + 1  # the first one goes too
    return accepted, rejected
