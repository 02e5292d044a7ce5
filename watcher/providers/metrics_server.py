"""Kubernetes metrics-server provider: NodeMetrics usage as a percentage of allocatable.

load-watcher divides by capacity; `use_capacity: true` does the same for parity. metrics-server
keeps only its last two scrapes per node (15 s apart by default) and leaves out a node it could
not scrape, so such a node's data here ages like any other missing sample. `pod_metrics` reads
PodMetrics, each pod's use summed over its containers, for callers that want per-pod use.
"""

from __future__ import annotations

import time
from typing import Any

from shared.quantities import QuantityError, bytes_value, cpu_millis
from watcher.config import Config, MetricSpec
from watcher.errors import ProviderError
from watcher.providers.base import Fetch

NODE_METRICS = ("metrics.k8s.io", "v1beta1", "nodes")


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
                # A node's usage counts what its system daemons use, so it can pass allocatable
                # (never capacity): the node is full, not a bad sample to reject as over_100.
                value = min(value, 100.0)
            except (KeyError, QuantityError):
                value = float("nan")
            out[key].append((name, value))
    return out


def pod_usage(items: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, int]]:
    """PodMetrics items (API JSON) -> (namespace, name) -> (CPU millicores, memory bytes), summed
    over containers. A pod with a container whose usage does not parse is left out, not
    under-counted."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for item in items:
        meta = item.get("metadata") or {}
        cpu = memory = 0
        try:
            for container in item.get("containers") or []:
                cpu += cpu_millis(container["usage"]["cpu"])
                memory += bytes_value(container["usage"]["memory"])
            out[(meta["namespace"], meta["name"])] = (cpu, memory)
        except (KeyError, TypeError, QuantityError):
            continue
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

    def _call(self, method: Any, *args: Any) -> Any:
        """One API call; its failure as a ProviderError (http_503 when the aggregator has no
        available metrics-server behind the APIService)."""
        from kubernetes.client.exceptions import ApiException

        try:
            return method(*args, _request_timeout=self.timeout)
        except ApiException as exc:
            raise ProviderError(f"http_{exc.status}", f"metrics.k8s.io: {exc.reason}") from exc
        except Exception as exc:  # urllib3 errors: unreachable, timeout
            raise ProviderError("unreachable", f"metrics.k8s.io: {exc}") from exc

    def fetch(self) -> Fetch:
        result = Fetch(time=time.time())
        try:
            metrics = self._call(self.custom.list_cluster_custom_object, *NODE_METRICS)
            nodes = self._call(self.core.list_node).to_dict()
        except ProviderError as error:
            result.errors = {k: error for k in self.keys}
            return result
        node_items = [
            {"metadata": n["metadata"], "status": n["status"]} for n in nodes.get("items") or []
        ]
        values = usage_percent(metrics.get("items") or [], node_items, self.use_capacity)
        result.series = {k: values[k] for k in self.keys}
        return result

    def pod_metrics(self, namespace: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
        """Each pod's use (millicores, bytes), in one namespace or all; raises ProviderError."""
        group, version, _ = NODE_METRICS
        if namespace is None:
            doc = self._call(self.custom.list_cluster_custom_object, group, version, "pods")
        else:
            list_pods = self.custom.list_namespaced_custom_object
            doc = self._call(list_pods, group, version, namespace, "pods")
        return pod_usage(doc.get("items") or [])

    def history(self, start: float, end: float, step: float) -> list[Fetch]:
        return []  # metrics-server keeps only the latest value
