"""Ballast as its Helm chart deploys it, for the benchmarks: the scheduler's and the rebalancer's
config files as charts/ballast/values.yaml makes them, and the few settings a benchmark puts
over them, each with its reason (OVERLAYS; docs/benchmarks.md has the same table).

The chart renders the scheduler's file from `scheduler.config`, and the rebalancer's from the
same plus `rebalancer.config` with `dryRun` set from `rebalancer.dryRun`
(charts/ballast/templates/). What it fills in from the release (watcherAddress,
watcherTokenFile, the Leases' names and namespace) means nothing outside a cluster and is left
out here, as is `leaderElection` (a benchmark runs one process of each). A benchmark that ran
the built-in profile instead would measure a Ballast nobody installs (issue 44).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from bench.harness.provenance import REPO
from scheduler.rebalancer import settings
from scheduler.rebalancer.settings import RebalancerSettings

VALUES = REPO / "charts" / "ballast" / "values.yaml"
PROFILE = "ballast"  # the chart's profile: the schedulerName its pods name
# What a benchmark sets over the chart's files, and why: nothing else differs
# (tests/unit/test_bench_chart.py builds every benchmark's files and compares them with the
# chart's). Keys are paths in the config file, `[]` any item of a list.
OVERLAYS: dict[str, str] = {
    "watcherAddress": "the run's own watcher, on a loopback port (the chart: its watcher's "
    "Service)",
    "leaderElection": "off: one process a contender, no replica to fail over to (the chart: "
    "two replicas behind a Lease)",
    "profiles[].schedulerName": "bench-placement only: one name a pool, so each pool's pods go "
    "to their own contender",
    "rebalancer.dryRun": "false: the benchmarks measure evictions (the chart starts in dry run "
    "until an operator turns it off)",
    "rebalancer.nodeSelector": "bench-rebalance only: each rebalancer judges its own pool's "
    "nodes (the pools share one cluster)",
    "rebalancer.interval": "rounds scaled as every contender's look-backs: the chart's 10 s "
    "over 5 in the synthetic scenarios (2 s, docs/benchmarks.md), to trace time in the trace "
    "(1 s, docs/trace.md)",
    "rebalancer.evictionsPerMinute": "the token bucket's rate scaled as the rounds: the chart's "
    "10 a minute is 50 a wall minute in the synthetic scenarios and 600 in the trace, 10 a "
    "deployed minute in both (unscaled it was 10 a trace hour); its burst, maxPerRound, is per "
    "round and stays",
}


def values(path: Path = VALUES) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def scheduler_file(path: Path = VALUES) -> dict[str, Any]:
    """The scheduler's config file as the chart renders it, less what it fills in from the
    release and leaderElection: percentageOfNodesToScore and the profiles, among others."""
    config = copy.deepcopy(values(path)["scheduler"]["config"])
    config.pop("leaderElection", None)
    return config


def rebalancer_file(path: Path = VALUES) -> dict[str, Any]:
    """The rebalancer's config file as the chart renders it (the scheduler's, so that it judges
    with the same profiles, plus its `rebalancer:` section), less the same."""
    doc = values(path)
    section = {**copy.deepcopy(doc["rebalancer"]["config"]), "dryRun": doc["rebalancer"]["dryRun"]}
    return {**scheduler_file(path), "rebalancer": section}


def profile(path: Path = VALUES) -> dict[str, Any]:
    """The chart's profile that its pods' schedulerName names."""
    for p in scheduler_file(path)["profiles"]:
        if p.get("schedulerName") == PROFILE:
            return p
    raise KeyError(f"{path}: scheduler.config.profiles has no schedulerName {PROFILE!r}")


def rebalancer_settings(path: Path = VALUES) -> RebalancerSettings:
    """The chart's rebalancer section parsed, every default filled in."""
    return settings.parse(rebalancer_file(path)).rebalancer


def scheduler_config(
    watcher_address: str, profiles: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The chart's scheduler file with the benchmarks' overlays; `profiles`: bench-placement's
    pool (the chart's profile under the pool's name, or a variant of it), else the chart's."""
    config = scheduler_file()
    config.update(watcherAddress=watcher_address, leaderElection={"leaderElect": False})
    if profiles is not None:
        config["profiles"] = profiles
    return config


def rebalancer_config(
    watcher_address: str,
    node_selector: Mapping[str, str] | None = None,
    interval: float | None = None,
    variant: Mapping[str, Any] | None = None,
    evictions_per_minute: float | None = None,
) -> dict[str, Any]:
    """The chart's rebalancer file with the benchmarks' overlays (`interval` in seconds and
    `evictions_per_minute` in wall minutes, each set where it differs from the chart's) and a
    contender's `variant` keys of its section."""
    config = scheduler_config(watcher_address)
    config["rebalancer"] = section = rebalancer_file()["rebalancer"]
    section["dryRun"] = False
    if node_selector:
        section["nodeSelector"] = dict(node_selector)
    if interval is not None and interval != rebalancer_settings().interval:
        section["interval"] = f"{interval:g}s"
    rate = evictions_per_minute
    if rate is not None and rate != rebalancer_settings().evictions_per_minute:
        section["evictionsPerMinute"] = int(rate) if rate == int(rate) else rate
    section.update(copy.deepcopy(dict(variant or {})))
    return config


def differences(config: Any, deployed: Any, path: str = "") -> set[str]:
    """The paths (OVERLAYS' spelling) where `config` differs from `deployed`."""
    if isinstance(config, dict) and isinstance(deployed, dict):
        out: set[str] = set()
        for key in config.keys() | deployed.keys():
            inner = f"{path}.{key}" if path else str(key)
            if key not in config or key not in deployed:
                out.add(inner)
            else:
                out |= differences(config[key], deployed[key], inner)
        return out
    if isinstance(config, list) and isinstance(deployed, list) and len(config) == len(deployed):
        return set().union(
            *(differences(a, b, f"{path}[]") for a, b in zip(config, deployed, strict=True))
        )
    return set() if config == deployed else {path}


def table() -> str:
    """docs/benchmarks.md's table of OVERLAYS."""
    rows = ["| set over the chart's | why |", "| --- | --- |"]
    rows += [f"| `{key}` | {why} |" for key, why in OVERLAYS.items()]
    return "\n".join(rows) + "\n"
