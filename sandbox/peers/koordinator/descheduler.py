"""koord-descheduler against the sandbox: LowNodeLoad on the NodeMetric objects, evicting through
the Eviction API.

Koordinator's own configuration evicts through its MigrationController, which reserves room
for the replacement with a Reservation that koord-scheduler places. Here DefaultEvictor is the
one evict and filter plugin instead: it calls the Eviction API directly (PodDisruptionBudgets
enforced by the apiserver) and never evicts bare, DaemonSet or system-critical pods, as the
rebalancers it is compared with do. LowNodeLoad is not on by default: it is enabled under
`balance`. A node counts as hot only after more than `consecutiveAbnormalities` rounds above
`highThresholds`; koord-descheduler reads a node's usage as `systemUsage` plus its pods'
`podsMetric`, and refuses to act with fewer than 2 Ready nodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests
import yaml

from sandbox.cluster import build, processes, versions
from sandbox.cluster.controlplane import ControlPlane

LOW_NODE_LOAD = "LowNodeLoad"
DEFAULT_EVICTOR = "DefaultEvictor"
API_VERSION = "descheduler/v1alpha2"
# LowNodeLoad's defaults (apis/config/v1alpha2/defaults.go); a partial anomalyCondition zeroes
# the fields it leaves out, so `config` always writes all three.
ANOMALY_TIMEOUT_SECONDS = 60.0
CONSECUTIVE_ABNORMALITIES = 5
CONSECUTIVE_NORMALITIES = 3
# The log line of an eviction the apiserver refused (a PDB at its limit answers 429).
EVICTION_FAILED = "Error evicting pod"
EVICTED = "Evicted pod"
# LowNodeLoad's round with a node above high that is not yet anomalous (logged at --v=4).
NOT_ANOMALOUS = "None of the nodes were detected as anomalous"


def config(
    kubeconfig: Path | str,
    low: dict[str, float],
    high: dict[str, float],
    interval: float = 10.0,
    abnormalities: int = CONSECUTIVE_ABNORMALITIES,
    normalities: int = CONSECUTIVE_NORMALITIES,
    anomaly_timeout: float = ANOMALY_TIMEOUT_SECONDS,
    namespaces: list[str] | None = None,
    node_selector: dict[str, str] | None = None,
    per_node: int | None = None,
    total: int | None = None,
    metric_expiration: int | None = None,
) -> dict[str, Any]:
    """A DeschedulerConfiguration running LowNodeLoad every `interval` seconds on thresholds in
    percent of allocatable (e.g. low {"cpu": 45, "memory": 55}, high {"cpu": 75, ...}).
    `namespaces` limits the evictable namespaces, `node_selector` (labels) the nodes it looks at;
    `per_node` and `total` are its eviction limits per run."""
    args: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "LowNodeLoadArgs",
        "lowThresholds": low,
        "highThresholds": high,
        "anomalyCondition": {
            "timeout": f"{anomaly_timeout:g}s",
            "consecutiveAbnormalities": abnormalities,
            "consecutiveNormalities": normalities,
        },
    }
    if namespaces:
        args["evictableNamespaces"] = {"include": namespaces}
    if metric_expiration is not None:
        args["nodeMetricExpirationSeconds"] = metric_expiration
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "DeschedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 100, "burst": 200},
        # One instance per sandbox: electing a leader would only delay the first round.
        "leaderElection": {"leaderElect": False},
        "deschedulingInterval": f"{interval:g}s",
        "profiles": [
            {
                "name": "koord-descheduler",
                "plugins": {
                    "deschedule": {"disabled": [{"name": "*"}]},
                    "balance": {"disabled": [{"name": "*"}], "enabled": [{"name": LOW_NODE_LOAD}]},
                    "evict": {"disabled": [{"name": "*"}], "enabled": [{"name": DEFAULT_EVICTOR}]},
                    "filter": {
                        "disabled": [{"name": "*"}],
                        "enabled": [{"name": DEFAULT_EVICTOR}],
                    },
                },
                "pluginConfig": [
                    {
                        "name": DEFAULT_EVICTOR,
                        "args": {"apiVersion": API_VERSION, "kind": "DefaultEvictorArgs"},
                    },
                    {"name": LOW_NODE_LOAD, "args": args},
                ],
            }
        ],
    }
    if node_selector:
        doc["nodeSelector"] = {"matchLabels": node_selector}
    if per_node is not None:
        doc["maxNoOfPodsToEvictPerNode"] = per_node
    if total is not None:
        doc["maxNoOfPodsToEvictTotal"] = total
    return doc


def start_koord_descheduler(
    plane: ControlPlane, doc: dict[str, Any], name: str = "koord-descheduler", timeout: float = 60.0
) -> int:
    """Runs koord-descheduler beside the sandbox (log `<name>.log`); returns its health port
    once /healthz answers. Its health and metrics listener defaults to 0.0.0.0:10251 and its
    secure port to 10258: both are moved to free loopback ports."""
    binary = build.binary(versions.koord_descheduler_binary())
    health, secure = processes.free_ports(2)
    doc = {**doc, "healthzBindAddress": f"127.0.0.1:{health}"}
    doc["metricsBindAddress"] = f"127.0.0.1:{health}"
    path = plane.state_dir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    argv = [str(binary), f"--config={path}", "--bind-address=127.0.0.1"]
    argv += [f"--secure-port={secure}", "--v=4"]
    plane.spawn(name, argv)
    url = f"http://127.0.0.1:{health}/healthz"
    with requests.Session() as s:
        s.trust_env = False
        plane.wait_until(name, lambda: s.get(url, timeout=2).ok, timeout)
    return health


def log_lines(plane: ControlPlane, name: str, marker: str) -> list[str]:
    """The lines of the descheduler's log holding `marker` (EVICTED, EVICTION_FAILED, ...)."""
    log = plane.log_dir / f"{name}.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    return [line for line in text.splitlines() if marker in line]
