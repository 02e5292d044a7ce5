"""koord-descheduler against the sandbox: LowNodeLoad on the NodeMetric objects, evicting through
the Eviction API, itself or through its MigrationController.

By default DefaultEvictor is the one evict and filter plugin: it calls the Eviction API directly
(PodDisruptionBudgets enforced by the apiserver) and never evicts bare, DaemonSet or
system-critical pods, as the rebalancers it is compared with do. With `migration` (the
arguments `migration_args` writes) the MigrationController is both instead, as in Koordinator's
own configuration (config/manager/descheduler-config.yaml): each eviction becomes a
PodMigrationJob that its arbitrator admits under per-node and per-workload limits before the
controller evicts. Its default mode, ReservationFirst, first has koord-scheduler place a
Reservation and the replacement bind into it; EvictDirectly evicts at once and leaves the
replacement to the pod's own scheduler. LowNodeLoad is not on by default: it is enabled under
`balance`. A node counts as hot only after more than `consecutiveAbnormalities` rounds above
`highThresholds`; koord-descheduler reads a node's usage as `systemUsage` plus its pods'
`podsMetric`, and refuses to act with fewer than 2 Ready nodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests
import yaml
from kubernetes import client

from sandbox.cluster import build, processes, versions
from sandbox.cluster.controlplane import ControlPlane

LOW_NODE_LOAD = "LowNodeLoad"
DEFAULT_EVICTOR = "DefaultEvictor"
MIGRATION_CONTROLLER = "MigrationController"
# PodMigrationJob modes (apis/scheduling/v1alpha1): the default reserves room first.
EVICT_DIRECTLY, RESERVATION_FIRST = "EvictDirectly", "ReservationFirst"
API_VERSION = "descheduler/v1alpha2"
# LowNodeLoad's defaults (apis/config/v1alpha2/defaults.go); a partial anomalyCondition zeroes
# the fields it leaves out, so `config` always writes all three.
ANOMALY_TIMEOUT_SECONDS = 60.0
CONSECUTIVE_ABNORMALITIES = 5
CONSECUTIVE_NORMALITIES = 3
# How long a node's anomaly detector (its count of hot rounds) outlives its last hot round:
# detectorCacheTimeout's default, 5 minutes.
DETECTOR_CACHE_SECONDS = 300.0
# PodMigrationJob's group and version (config/crd/bases).
SCHEDULING_GROUP, SCHEDULING_VERSION = "scheduling.koordinator.sh", "v1alpha1"
REQUEST_TIMEOUT = 10.0
# The log line of an eviction the apiserver refused (a PDB at its limit answers 429).
EVICTION_FAILED = "Error evicting pod"
EVICTED = "Evicted pod"
# The MigrationController's refusal, in ReservationFirst, of a pod another scheduler placed.
NOT_RESERVABLE = "can not be migrated by ReservationFirst mode"
# The MigrationController's log line of a job whose step failed (an eviction refused: a retry).
MIGRATION_FAILED = "Failed to reconcile MigrationJob"
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
    migration: dict[str, Any] | None = None,
    detector_cache: float | None = None,
) -> dict[str, Any]:
    """A DeschedulerConfiguration running LowNodeLoad every `interval` seconds on thresholds in
    percent of allocatable (e.g. low {"cpu": 45, "memory": 55}, high {"cpu": 75, ...}).
    `namespaces` limits the evictable namespaces, `node_selector` (labels) the nodes it looks at;
    `per_node` and `total` are its eviction limits per run. `migration`: MigrationController's
    arguments (`migration_args`), which then evicts and filters in DefaultEvictor's place.
    `detector_cache`: detectorCacheTimeout in seconds (None: its default)."""
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
    if detector_cache is not None:
        args["detectorCacheTimeout"] = f"{detector_cache:g}s"
    evictor = MIGRATION_CONTROLLER if migration is not None else DEFAULT_EVICTOR
    evictor_args = migration or {"apiVersion": API_VERSION, "kind": "DefaultEvictorArgs"}
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
                    "evict": {"disabled": [{"name": "*"}], "enabled": [{"name": evictor}]},
                    "filter": {"disabled": [{"name": "*"}], "enabled": [{"name": evictor}]},
                },
                "pluginConfig": [
                    {"name": evictor, "args": evictor_args},
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


def migration_args(
    mode: str = EVICT_DIRECTLY,
    namespaces: list[str] | None = None,
    job_ttl: float | None = None,
    workload_limiter: float | None = None,
) -> dict[str, Any]:
    """MigrationControllerArgs as Koordinator's own configuration writes them (evictionPolicy
    Eviction, 10 evictions a second, burst 1) in `mode`, evicting only in `namespaces`. The
    rest are its defaults (apis/config/v1alpha2/defaults.go): at most 2 pods migrating per
    node; per workload 1 pod migrating or unavailable of up to 3 replicas, 2 of 4-10, 10 %
    above, and never one of a single replica; a job fails after `job_ttl` seconds (5 minutes),
    and a workload loses at most that many pods per `workload_limiter` seconds (5 minutes).
    The trace scales the last two (docs/trace.md)."""
    args: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "MigrationControllerArgs",
        "defaultJobMode": mode,
        "evictionPolicy": "Eviction",
        "evictQPS": "10",
        "evictBurst": 1,
    }
    if namespaces:
        args["namespaces"] = {"include": namespaces}
    if job_ttl is not None:
        args["defaultJobTTL"] = f"{job_ttl:g}s"
    if workload_limiter is not None:
        args["objectLimiters"] = {"workload": {"duration": f"{workload_limiter:g}s"}}
    return args


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
    return [line for line in _log(plane, name).splitlines() if marker in line]


def used_config(plane: ControlPlane, name: str) -> str:
    """The configuration the descheduler logged it runs (at --v=2: defaults filled in, YAML)."""
    _, found, rest = _log(plane, name).partition('"Using component config" config=<')
    return rest.split("\n >", 1)[0] if found else ""


def _log(plane: ControlPlane, name: str) -> str:
    log = plane.log_dir / f"{name}.log"
    return log.read_text(errors="replace") if log.is_file() else ""


def migration_jobs(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """The PodMigrationJobs (cluster-scoped) for pods of `namespace`."""
    listed = client.CustomObjectsApi(api).list_cluster_custom_object(
        SCHEDULING_GROUP, SCHEDULING_VERSION, "podmigrationjobs", _request_timeout=REQUEST_TIMEOUT
    )
    jobs = listed.get("items") or []
    return [j for j in jobs if (j["spec"].get("podRef") or {}).get("namespace") == namespace]


def job_phases(jobs: list[dict[str, Any]]) -> dict[str, int]:
    """How many jobs end how: "Succeeded", "Failed Timeout" (phase and reason), "Pending" for
    one the controller has not yet looked at."""
    phases: dict[str, int] = {}
    for job in jobs:
        status = job.get("status") or {}
        key = " ".join(filter(None, (status.get("phase"), status.get("reason")))) or "Pending"
        phases[key] = phases.get(key, 0) + 1
    return dict(sorted(phases.items()))
