"""Kubernetes metrics-server provider: NodeMetrics usage as a percentage of allocatable.

load-watcher divides by capacity; `use_capacity: true` does the same for parity.
"""

from __future__ import annotations

import time
from typing import Any

from shared.quantities import QuantityError, bytes_value, cpu_millis
from watcher.config import Config, MetricSpec
from watcher.errors import ProviderError
from watcher.providers.base import Fetch


def usage_percent(
    metrics: list[dict[str, Any]], nodes: list[dict[str, Any]], use_capacity: bool = False
) -> dict[str, list[tuple[str | None, float]]]:
    """NodeMetrics items + Node items (both as API JSON) -> cpu and memory % per node."""
    field = "capacity" if use_capacity else "allocatable"
    totals: dict[str, tuple[int, int]] = {}
    for node in nodes:
        try:
            amounts = node["status"][field]
            totals[node["metadata"]["name"]] = (
                cpu_millis(amounts["cpu"]),
                bytes_value(amounts["memory"]),
            )
        except (KeyError, TypeError, QuantityError):
            continue
    out: dict[str, list[tuple[str | None, float]]] = {"cpu": [], "memory": []}
    for item in metrics:
        name = (item.get("metadata") or {}).get("name")
        usage = item.get("usage") or {}
        total = totals.get(name)
        if total is None:
            out["cpu"].append((name, float("nan")))
            out["memory"].append((name, float("nan")))
            continue
        for key, parse, denominator in (
            ("cpu", cpu_millis, total[0]),
            ("memory", bytes_value, total[1]),
        ):
            try:
                value = 100.0 * parse(usage[key]) / denominator if denominator else float("nan")
            except (KeyError, QuantityError):
                value = float("nan")
            out[key].append((name, value))
    return out


class MetricsServerProvider:
    source = "KubernetesMetricsServer"

    def __init__(self, config: Config, specs: list[MetricSpec], api_client: Any) -> None:
        from kubernetes import client

        if api_client is None:
            raise ProviderError("no_kube", "metrics-server provider needs a Kubernetes client")
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.timeout = config.provider_timeout
        self.use_capacity = config.use_capacity
        self.keys = [s.key for s in specs if s.key in ("cpu", "memory")]

    def close(self) -> None:
        pass

    def fetch(self) -> Fetch:
        from kubernetes.client.exceptions import ApiException

        result = Fetch(time=time.time())
        try:
            metrics = self.custom.list_cluster_custom_object(
                "metrics.k8s.io", "v1beta1", "nodes", _request_timeout=self.timeout
            )
            nodes = self.core.list_node(_request_timeout=self.timeout).to_dict()
        except ApiException as exc:
            error = ProviderError(f"http_{exc.status}", f"metrics.k8s.io: {exc.reason}")
            result.errors = {k: error for k in self.keys}
            return result
        except Exception as exc:  # urllib3 errors: unreachable, timeout
            error = ProviderError("unreachable", f"metrics.k8s.io: {exc}")
            result.errors = {k: error for k in self.keys}
            return result
        node_items = [
            {"metadata": n["metadata"], "status": n["status"]} for n in nodes.get("items") or []
        ]
        values = usage_percent(metrics.get("items") or [], node_items, self.use_capacity)
        result.series = {k: values[k] for k in self.keys}
        return result

    def history(self, start: float, end: float, step: float) -> list[Fetch]:
        return []  # metrics-server keeps only the latest value
