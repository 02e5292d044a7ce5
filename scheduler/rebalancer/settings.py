"""The rebalancer's config file: the scheduler's file (profiles, watcherAddress, leaderElection)
plus a `rebalancer:` section, every default here.

```yaml
watcherAddress: http://watcher:2020
leaderElection: {leaderElect: true, resourceNamespace: kube-system}
profiles: [{schedulerName: ballast}]
rebalancer:
  profile: ballast            # the profile whose filters and scores judge a move (default: first)
  schedulers: [ballast]       # only pods with one of these schedulerNames move (default: profile)
  interval: 10s               # one round every interval (a duration, or seconds; over 0)
  roundOnNewSamples: false    # true: a round also as soon as the watcher's client fetches a
                              # newer sample (the watcher polled), not up to an interval later
  dryRun: false               # decide and report, evict nothing
  enabled: true               # false: the kill switch; rounds still observe and report
  killSwitchFile: ""          # while this file exists, nothing is evicted either
  thresholds: absolute        # or deviation: high = cluster mean + high, low = mean - low
  resources:
  - {name: cpu, statistic: avg, high: 80, low: 50}     # statistic: avg | p95 | latest
  consecutive: 3              # fresh observations above high before a node counts as hot
  saturated: 0                # CPU % of the node, above cpu's high; 0 or null: off.
                              # `consecutive` fresh samples in a row at or above it make a node
                              # hot at once, planned at 200 - saturated % (saturation.py)
  gpu: {utilHigh: 90, memoryHigh: 90}  # GPU-hot (profiles with GpuLoad only): a GPU's % busy
                              # (window average) or % of its framebuffer in use above these
  targetsMustBeCold: true     # a move's target must be below low now (LowNodeLoad's rule)
  loadMargin: 5               # CPU points the scheduler may read a node off ours (a poll)
  scoreMargin: 0              # points the target must also outscore the hot node by (0: off)
  minRelief: 2                # percentage points a move must take off the hot node
  evictJobs: false
  evictLocalStorage: false
  excludedNamespaces: [kube-system]
  namespaceSelector: {}       # a label selector: only pods in matching namespaces move ({}: all)
  minReplicas: 2              # a workload with fewer replicas than this never loses one
  nodeSelector: {}            # only nodes with these labels are judged (hot or target)
  systemCriticalPriority: 2000000000
  maxPerNode: 1               # evictions per node per round
  maxPerNamespace: 2          # per namespace per round
  maxPerRound: 5              # in all per round
  evictionsPerMinute: 10      # token bucket, burst maxPerRound
  cooldown: 0                 # seconds a node rests after an eviction; 0: the watcher's window
                              # (scaled by the relief); ended sooner by `consecutive` samples
                              # after the pod's going still above high (rest.py)
  leaseName: ballast-rebalancer
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.config.loader import SchedulerConfig, parse_config
from scheduler.framework import CPU, MAX_NODE_SCORE, MEMORY
from scheduler.framework.errors import ConfigError
from scheduler.framework.fields import Fields
from scheduler.framework.labels import EVERYTHING, LabelSelector
from scheduler.rebalancer.gpuhot import GpuRule

AVG, P95, LATEST = "avg", "p95", "latest"
STATISTICS = (AVG, P95, LATEST)
ABSOLUTE, DEVIATION = "absolute", "deviation"
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000  # system-cluster-critical's value


@dataclass(frozen=True)
class ResourceRule:
    """One resource's statistic and thresholds, in percent of the node (or percentage points
    around the cluster mean in deviation mode)."""

    resource: str
    statistic: str = AVG
    high: float = 80.0
    low: float = 50.0


@dataclass
class RebalancerSettings:
    profile: str = ""
    # parse() sets (profile,) when the file names none; "ballast" is the default profile's name.
    schedulers: tuple[str, ...] = ("ballast",)
    interval: float = 10.0
    dry_run: bool = False
    enabled: bool = True
    kill_switch_file: str = ""
    threshold_mode: str = ABSOLUTE
    rules: tuple[ResourceRule, ...] = (ResourceRule(CPU),)
    consecutive: int = 3
    # A round also as soon as the rebalancer's watcher client fetches a sample newer than any
    # before (the watcher polled), so it is judged on arrival instead of up to `interval` later;
    # rounds still run every `interval` without one. Off: rounds every `interval` only.
    round_on_new_samples: bool = False
    # CPU % of the node at or above which `consecutive` fresh samples in a row make the node hot
    # at once, without waiting for the window's statistic: pinned at its capacity, it throttles
    # its pods now (saturation.py). 0: off.
    saturated: float = 0.0
    gpu: GpuRule = GpuRule()
    targets_must_be_cold: bool = True
    # Percentage points of a node's CPU by which the scheduler's figures may differ from the
    # judge's: one watcher poll moves a 20-sample window's average by at most 100 / 20
    # (margin.py). A move must hold with every node read that far off, against it.
    load_margin: float = 5.0
    # Points of the profile's weighted total the target must outscore the source by, besides:
    # 0 (off) since the load margin, which means the same for every profile.
    score_margin: int = 0
    # Percentage points of the node's hottest resource a move must take off it: an idle replica
    # is not worth an eviction.
    min_relief: float = 2.0
    evict_jobs: bool = False
    evict_local_storage: bool = False
    excluded_namespaces: frozenset[str] = frozenset({"kube-system"})
    namespace_selector: LabelSelector = EVERYTHING
    min_replicas: int = 2
    node_selector: dict[str, str] = field(default_factory=dict)
    system_critical_priority: int = SYSTEM_CRITICAL_PRIORITY
    max_per_node: int = 1
    max_per_namespace: int = 2
    max_per_round: int = 5
    evictions_per_minute: float = 10.0
    cooldown: float = 0.0
    lease_name: str = "ballast-rebalancer"


@dataclass
class RebalancerConfig:
    scheduler: SchedulerConfig
    rebalancer: RebalancerSettings = field(default_factory=RebalancerSettings)


def load(path: str | Path) -> RebalancerConfig:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse(doc)


def parse(doc: Any) -> RebalancerConfig:
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(f"config: expected a mapping, got {type(doc).__name__}")
    rest = {k: v for k, v in doc.items() if k != "rebalancer"}
    cfg = RebalancerConfig(parse_config(rest), parse_section(doc.get("rebalancer")))
    names = [p.scheduler_name for p in cfg.scheduler.profiles]
    if cfg.rebalancer.profile and cfg.rebalancer.profile not in names:
        raise ConfigError(
            f"rebalancer.profile: no profile {cfg.rebalancer.profile!r} (have {', '.join(names)})"
        )
    if not cfg.rebalancer.profile:
        cfg.rebalancer.profile = names[0]
    # Only pods the judging profile's scheduler places: for any other pod the judgement (fits a
    # cooler node, would not come back) says nothing about where its replacement lands.
    for name in cfg.rebalancer.schedulers:
        if name not in names:
            raise ConfigError(
                f"rebalancer.schedulers: no profile {name!r} (have {', '.join(names)})"
            )
    if not cfg.rebalancer.schedulers:
        cfg.rebalancer.schedulers = (cfg.rebalancer.profile,)
    return cfg


def parse_section(doc: Any) -> RebalancerSettings:
    f = Fields(doc, "rebalancer")
    d = RebalancerSettings()
    s = RebalancerSettings(
        profile=f.string("profile", d.profile),
        schedulers=tuple(_strings(f, "schedulers", frozenset())),
        interval=f.duration("interval", d.interval),
        round_on_new_samples=f.boolean("roundOnNewSamples", d.round_on_new_samples),
        dry_run=f.boolean("dryRun", d.dry_run),
        enabled=f.boolean("enabled", d.enabled),
        kill_switch_file=f.string("killSwitchFile", d.kill_switch_file),
        threshold_mode=f.string("thresholds", d.threshold_mode, choices=(ABSOLUTE, DEVIATION)),
        consecutive=f.integer("consecutive", d.consecutive, 1, 100),
        saturated=f.number("saturated", d.saturated, 0, 100),
        gpu=_gpu_rule(f.section("gpu")),
        targets_must_be_cold=f.boolean("targetsMustBeCold", d.targets_must_be_cold),
        load_margin=f.number("loadMargin", d.load_margin, 0, 100),
        score_margin=f.integer("scoreMargin", d.score_margin, 0, 100 * MAX_NODE_SCORE),
        min_relief=f.number("minRelief", d.min_relief, 0, 100),
        evict_jobs=f.boolean("evictJobs", d.evict_jobs),
        evict_local_storage=f.boolean("evictLocalStorage", d.evict_local_storage),
        excluded_namespaces=frozenset(_strings(f, "excludedNamespaces", d.excluded_namespaces)),
        namespace_selector=_selector(f, "namespaceSelector"),
        min_replicas=f.integer("minReplicas", d.min_replicas, 1, 10_000),
        node_selector=_labels(f, "nodeSelector"),
        system_critical_priority=f.integer(
            "systemCriticalPriority", d.system_critical_priority, 0, 2**31 - 1
        ),
        max_per_node=f.integer("maxPerNode", d.max_per_node, 0, 1000),
        max_per_namespace=f.integer("maxPerNamespace", d.max_per_namespace, 0, 10_000),
        max_per_round=f.integer("maxPerRound", d.max_per_round, 0, 10_000),
        evictions_per_minute=f.number("evictionsPerMinute", d.evictions_per_minute, 0.01, 1e6),
        cooldown=f.number("cooldown", d.cooldown, 0, 86_400),
        lease_name=f.string("leaseName", d.lease_name),
    )
    if f.has("schedulers") and not s.schedulers:
        raise f.error("schedulers", "at least one profile name (or leave it out)")
    if f.has("resources"):
        s.rules = tuple(_rule(rf, s.threshold_mode) for rf in f.items("resources"))
        seen = [r.resource for r in s.rules]
        if len(set(seen)) != len(seen):
            raise f.error("resources", "a resource is listed twice")
        if not s.rules:
            raise f.error("resources", "at least one resource")
    else:
        f.raw("resources")
    _check_saturated(f, s)
    f.finish()
    return s


def _check_saturated(f: Fields, s: RebalancerSettings) -> None:
    """Saturation reads the CPU's samples in percent of the node, whatever the thresholds'
    mode; in absolute mode it must sit above the CPU's high, or it is only a faster `high`."""
    if not s.saturated:
        return
    cpu = next((r for r in s.rules if r.resource == CPU), None)
    if cpu is None:
        raise f.error("saturated", "reads the CPU: list cpu under resources, or leave it out")
    if s.threshold_mode == ABSOLUTE and s.saturated <= cpu.high:
        raise f.error("saturated", f"must be above cpu's high ({cpu.high:g}), got {s.saturated:g}")


def _rule(f: Fields, mode: str) -> ResourceRule:
    d = ResourceRule(CPU)
    # Percent of the node, or percentage points away from the mean in deviation mode.
    top = 100.0 if mode == ABSOLUTE else 1000.0
    rule = ResourceRule(
        resource=f.string("name", CPU, choices=(CPU, MEMORY)),
        statistic=f.string("statistic", d.statistic, choices=STATISTICS),
        high=f.number("high", d.high, 0.0, top),
        low=f.number("low", d.low, 0.0, top),
    )
    if mode == ABSOLUTE and rule.low >= rule.high:
        raise f.error("low", f"must be below high ({rule.high:g}), got {rule.low:g}")
    f.finish()
    return rule


def _gpu_rule(f: Fields) -> GpuRule:
    d = GpuRule()
    rule = GpuRule(
        util_high=f.number("utilHigh", d.util_high, 0.0, 100.0),
        memory_high=f.number("memoryHigh", d.memory_high, 0.0, 100.0),
    )
    f.finish()
    return rule


def _labels(f: Fields, key: str) -> dict[str, str]:
    value = f.raw(key, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise f.error(key, f"expected a mapping of label names to values, got {value!r}")
    return dict(value)


def _selector(f: Fields, key: str) -> LabelSelector:
    value = f.raw(key, {})
    if not isinstance(value, dict) or set(value) - {"matchLabels", "matchExpressions"}:
        raise f.error(key, f"expected a label selector (matchLabels/matchExpressions): {value!r}")
    try:
        return LabelSelector.parse(value)
    except (ValueError, AttributeError, TypeError) as exc:
        raise f.error(key, str(exc)) from None


def _strings(f: Fields, key: str, default: frozenset[str]) -> list[str]:
    value = f.raw(key, sorted(default))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise f.error(key, f"expected a list of strings, got {value!r}")
    return value
