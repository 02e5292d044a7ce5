"""Upstream descheduler on the sandbox: LowNodeUtilization on real usage from Prometheus.

The Go wrapper module beside this file (main.go: upstream's command plus `--prometheus-url`,
since upstream makes its Prometheus client only inside a cluster) is built lazily into the
sandbox's binary cache by `ensure_built` (the rebalancing benchmark calls it; run it under the
heavy-job lock, it is a Go build). `policy` writes LowNodeUtilization's Prometheus mode as the
descheduler's README describes it: one query giving one 0..1 sample per node labelled
`instance` = node name, thresholds and targetThresholds holding the single `MetricResource` key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from sandbox.cluster import build, versions
from sandbox.cluster.controlplane import ControlPlane

MODULE_DIR = Path(__file__).resolve().parent
METRIC_RESOURCE = "MetricResource"


def ensure_built(say: build.Printer = print) -> Path:
    """The descheduler binary, built first when missing (minutes from a cold Go cache)."""
    target = build.bin_dir() / versions.descheduler_binary()
    if target.is_file():
        return target
    go = build.find_go()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(target.name + ".tmp")
    say(f"building descheduler {versions.DESCHEDULER_VERSION}")
    version = f"v{versions.DESCHEDULER_VERSION}"
    ldflags = f"-s -w -X sigs.k8s.io/descheduler/pkg/version.version={version}"
    cmd = [go, "build", "-buildvcs=false", "-ldflags", ldflags, "-o", str(staging), "."]
    log = target.parent / "build-descheduler.log"
    build._run(cmd, MODULE_DIR, dict(os.environ), log, "descheduler", say)
    staging.chmod(0o755)
    staging.replace(target)
    return target


def policy(
    query: str,
    low: float,
    high: float,
    prometheus_url: str,
    exclude_namespaces: list[str] | None = None,
    node_selector: str = "",
    per_node: int | None = None,
) -> dict[str, Any]:
    """A DeschedulerPolicy running LowNodeUtilization on `query` (0..1 per node). Upstream makes
    a Prometheus client only when `metricsProviders` names one with a URL; the wrapper's
    `--prometheus-url` then stands in for the in-cluster token client."""
    args: dict[str, Any] = {
        "thresholds": {METRIC_RESOURCE: low},
        "targetThresholds": {METRIC_RESOURCE: high},
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": query}},
    }
    if exclude_namespaces:  # LowNodeUtilization takes no inclusion list
        args["evictableNamespaces"] = {"exclude": exclude_namespaces}
    if per_node:
        args["evictionLimits"] = {"node": per_node}
    doc: dict[str, Any] = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "metricsProviders": [{"source": "Prometheus", "prometheus": {"url": prometheus_url}}],
        "profiles": [
            {
                "name": "rebalance",
                "pluginConfig": [
                    {"name": "DefaultEvictor", "args": {}},
                    {"name": "LowNodeUtilization", "args": args},
                ],
                "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
            }
        ],
    }
    if node_selector:
        doc["nodeSelector"] = node_selector
    return doc


def start_descheduler(
    plane: ControlPlane,
    prometheus_url: str,
    doc: dict[str, Any],
    interval: float = 10.0,
    name: str = "descheduler",
) -> None:
    """Runs the descheduler beside the sandbox (log `<name>.log`), every `interval` seconds."""
    binary = build.binary(versions.descheduler_binary())
    path = plane.log_dir / f"{name}-policy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    argv = [str(binary), f"--kubeconfig={plane.kubeconfig}", f"--policy-config-file={path}"]
    argv += [f"--descheduling-interval={interval:g}s", "--secure-port=0"]
    argv += [f"--prometheus-url={prometheus_url}"]
    plane.spawn(name, argv)
