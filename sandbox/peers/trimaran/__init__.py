"""Upstream Trimaran on the sandbox: kube-scheduler with sigs.k8s.io/scheduler-plugins' load-aware
plugins, reading Ballast's watcher through its load-watcher endpoint (`/watcher`).

The Go wrapper module beside this file is built by `ballast sandbox build --with-trimaran` into
the sandbox's binary cache. Profiles follow the plugins' upstream READMEs (service mode, i.e.
`watcherAddress`), with the plugins' own defaults for everything else, so what runs is what a
user of scheduler-plugins would deploy against a load-watcher.
"""

from __future__ import annotations

from typing import Any

from sandbox.cluster import processes, versions
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.kube_scheduler import start_kube_scheduler

TARGET_LOAD_PACKING = "TargetLoadPacking"
LOAD_VARIATION_RISK_BALANCING = "LoadVariationRiskBalancing"
PLUGINS = (TARGET_LOAD_PACKING, LOAD_VARIATION_RISK_BALANCING)
# Trimaran's own log lines when a node has no load data: the interop test requires none.
MISSING_METRICS_LINES = ("Failed to get metrics", "Unable to find metrics")


def profile(
    plugin: str, watcher_url: str, scheduler_name: str, args: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One KubeSchedulerConfiguration profile running `plugin` against the watcher.

    TargetLoadPacking's README turns the allocation scores off (they would pull pods towards
    empty nodes against its packing); LoadVariationRiskBalancing's README adds it to the
    defaults. NodeResourcesFit stands for the README's NodeResourcesLeastAllocated, merged
    into it since Kubernetes 1.23.
    """
    if plugin not in PLUGINS:
        raise ValueError(f"unknown Trimaran plugin {plugin!r}; one of {', '.join(PLUGINS)}")
    score: dict[str, Any] = {"enabled": [{"name": plugin}]}
    if plugin == TARGET_LOAD_PACKING:
        allocation = ("NodeResourcesBalancedAllocation", "NodeResourcesFit")
        score["disabled"] = [{"name": n} for n in allocation]
    return {
        "schedulerName": scheduler_name,
        "plugins": {"score": score},
        "pluginConfig": [{"name": plugin, "args": {**(args or {}), "watcherAddress": watcher_url}}],
    }


def start_trimaran(
    plane: ControlPlane,
    watcher_url: str,
    plugin: str = TARGET_LOAD_PACKING,
    scheduler_name: str = "trimaran",
    name: str = "trimaran",
    args: dict[str, Any] | None = None,
) -> int:
    """Starts the Trimaran scheduler beside the sandbox (log `<name>.log` in its log folder);
    returns its secure port once /healthz answers. It reads the watcher once at start and then
    every 30 s (upstream's fixed interval), so start it after the watcher has data."""
    overrides = {"profiles": [profile(plugin, watcher_url, scheduler_name, args)]}
    return start_kube_scheduler(plane, overrides, name=name, binary_name=versions.trimaran_binary())


def stop_scheduler(plane: ControlPlane, name: str, timeout: float = 10.0) -> bool:
    """Stops the scheduler process `name` of this sandbox, nothing else; True if it ran."""
    for rec in processes.recorded(plane.pid_dir):
        if rec.name == name:
            return processes.stop(rec, timeout)
    return False


def missing_metrics_lines(plane: ControlPlane, name: str = "trimaran") -> list[str]:
    """The lines of the scheduler's log in which Trimaran found no load data for a node."""
    log = plane.log_dir / f"{name}.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    return [line for line in text.splitlines() if any(m in line for m in MISSING_METRICS_LINES)]
