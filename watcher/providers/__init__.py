"""Metrics providers, registered by name."""

from __future__ import annotations

from typing import Any

from watcher.config import Config
from watcher.providers.base import Fetch, Provider


def create(config: Config, kube_client: Any = None) -> Provider:
    specs = config.metric_specs()
    if config.provider == "prometheus":
        from watcher.providers.prometheus import PrometheusProvider

        return PrometheusProvider(config, specs)
    if config.provider == "metrics-server":
        from watcher.providers.metrics_server import MetricsServerProvider

        return MetricsServerProvider(config, specs, kube_client)
    raise ValueError(f"unknown provider {config.provider!r}")


__all__ = ["Fetch", "Provider", "create"]
