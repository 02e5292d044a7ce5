"""Per-pod CPU and memory use from the metrics source, validated like node samples.

Prometheus: two instant queries per poll, whatever the number of pods (`pod_cpu_query`,
`pod_memory_query`; by default cAdvisor's `container_cpu_usage_seconds_total` as an `irate` and
`container_memory_working_set_bytes`, summed by namespace and pod in PromQL, so a pod with
10,000 containers is one series here). `irate` treats a counter that went down as a reset, as
`rate` does, so a restarted container never reads negative. metrics-server: its PodMetrics,
through the provider's `pod_metrics` (already summed per pod).

Per sample: `no_pod_label`, `not_a_number`, `nan`, `inf`, `negative` and `duplicate` (two series
for one pod: neither is kept) are rejected and counted; a pod missing from one of the two
answers is left out this poll (`incomplete`).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from watcher.errors import ProviderError
from watcher.validate import check_value

PodKey = tuple[str, str]  # (namespace, pod)


@dataclass
class PodFetch:
    time: float
    usage: dict[PodKey, tuple[float, float]] = field(default_factory=dict)  # (CPU m, bytes)
    rejected: Counter[str] = field(default_factory=Counter)
    error: ProviderError | None = None


class PodSource(Protocol):
    def fetch(self) -> PodFetch: ...


def validate_pods(items: list[Any], scale: float) -> tuple[dict[PodKey, float], Counter[str]]:
    """Prometheus vector items (`{"metric": {...}, "value": [t, "v"]}`) -> value x `scale` per
    pod, and the rejected samples by reason."""
    accepted: dict[PodKey, float] = {}
    duplicates: set[PodKey] = set()
    rejected: Counter[str] = Counter()
    for item in items:
        try:
            labels, raw = item["metric"], item["value"][1]
            key = (labels["namespace"], labels["pod"])
        except (KeyError, IndexError, TypeError):
            rejected["no_pod_label"] += 1
            continue
        if not all(isinstance(k, str) and k for k in key):
            rejected["no_pod_label"] += 1
            continue
        value, reason = check_value(raw, percent=False)
        if reason is not None:
            rejected[reason] += 1
            continue
        if key in accepted or key in duplicates:
            duplicates.add(key)
            rejected["duplicate"] += 1
            continue
        accepted[key] = value * scale
    for key in duplicates:
        if accepted.pop(key, None) is not None:
            rejected["duplicate"] += 1
    return accepted, rejected


def join(
    cpu: dict[PodKey, float], memory: dict[PodKey, float], rejected: Counter[str]
) -> dict[PodKey, tuple[float, float]]:
    """Pods with both values; the others are counted `incomplete`."""
    both = cpu.keys() & memory.keys()
    rejected["incomplete"] += len(cpu) + len(memory) - 2 * len(both)
    if not rejected["incomplete"]:
        del rejected["incomplete"]
    return {k: (cpu[k], memory[k]) for k in both}


class PrometheusPods:
    """Per-pod use from Prometheus; `provider` is the watcher's PrometheusProvider (its session,
    auth, TLS and error mapping)."""

    def __init__(self, provider: Any, queries: dict[str, str]) -> None:
        self.provider = provider
        self.queries = queries

    def fetch(self) -> PodFetch:
        result = PodFetch(time=time.time())
        values = {}
        try:
            for key, scale in (("cpu", 1000.0), ("memory", 1.0)):
                items, partial = self.provider.answer(self.queries[key], result.time)
                if partial:
                    # A pod's use is a sum over its containers: from part of its series it
                    # reads low, and a profile learns better from no poll than a low one.
                    raise ProviderError("partial", f"pod {key}: partial answer ({partial})")
                values[key], rejected = validate_pods(items, scale)
                result.rejected.update(rejected)
        except ProviderError as exc:
            result.error = exc
            return result
        result.usage = join(values["cpu"], values["memory"], result.rejected)
        return result


class MetricsServerPods:
    """Per-pod use from metrics-server's PodMetrics (already one figure per pod)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def fetch(self) -> PodFetch:
        result = PodFetch(time=time.time())
        try:
            usage = self.provider.pod_metrics()
        except ProviderError as exc:
            result.error = exc
            return result
        result.usage = {k: (float(c), float(m)) for k, (c, m) in usage.items()}
        return result
