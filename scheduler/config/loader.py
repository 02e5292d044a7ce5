"""The scheduler's YAML configuration: KubeSchedulerConfiguration's shape plus Ballast's keys.

```yaml
watcherAddress: http://watcher:2020       # Trimaran's name; also accepted inside plugin args
watcherTokenFile: /var/run/ballast/token  # or watcherToken: ...; when the watcher wants one
percentageOfNodesToScore: 0               # 0 = kube-scheduler's adaptive default
podInitialBackoffSeconds: 1               # a failed pod's retry delay, doubling per failure
podMaxBackoffSeconds: 10                  # ... up to this
parallelism: 16
leaderElection: {leaderElect: true, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s,
                 resourceName: ballast-scheduler, resourceNamespace: kube-system}
profiles:
- schedulerName: ballast
  plugins:
    filter: {enabled: [{name: LoadThreshold}], disabled: [{name: NodeReady}]}
    score:  {enabled: [{name: LoadVariationRiskBalancing, weight: 2}], disabled: [{name: "*"}]}
  pluginConfig:
  - name: TargetLoadPacking
    args: {targetUtilization: 60}
```
Enabled plugins are added to the defaults (an enabled default takes the new weight), disabled
ones removed, "*" removes every default. Unknown keys are refused, so a typo never passes
silently. Every default lives here or in the plugin's own Args.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.config import registry
from scheduler.framework.errors import ConfigError
from scheduler.framework.fields import Fields

DEFAULT_SCHEDULER_NAME = "ballast"
# Upstream's default order (a node reports only its first failing filter, so the order shapes
# the FailedScheduling text); NodeReady is Ballast's stand-in for the not-ready taint that the
# node lifecycle controller would add.
DEFAULT_FILTERS = (
    "NodeUnschedulable",
    "NodeReady",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
)
# Preference plugins only separate nodes when the pod states a preference (or a node carries
# PreferNoSchedule taints, or the pod has spread constraints or pod affinity); otherwise they
# give every node the same score and cost nothing. Weights as upstream's default profile.
DEFAULT_SCORES = (
    ("TargetLoadPacking", 1),
    ("NodeAffinity", 2),
    ("TaintToleration", 3),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
)
# Upstream's only default PostFilter: preemption for pods that fit nowhere.
DEFAULT_POST_FILTERS = ("DefaultPreemption",)
DEFAULT_PARALLELISM = 16
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1  # kube-scheduler's defaults
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10
MAX_WEIGHT = 100
EXTENSION_POINTS = ("filter", "score", "postFilter", "multiPoint")


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int = 1


@dataclass
class ProfileConfig:
    scheduler_name: str
    filters: list[str]
    scores: list[PluginRef]
    args: dict[str, Any] = field(default_factory=dict)  # plugin name -> its typed Args
    post_filters: list[str] = field(default_factory=lambda: list(DEFAULT_POST_FILTERS))


@dataclass
class LeaderElectionConfig:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = "ballast-scheduler"
    resource_namespace: str = "kube-system"


@dataclass
class SchedulerConfig:
    watcher_address: str = ""  # empty: no watcher, every node scored from allocation
    watcher_token: str = ""  # bearer token for the watcher's API
    watcher_token_file: str = ""  # or a file holding it, re-read when it changes
    percentage_of_nodes_to_score: int = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    parallelism: int = DEFAULT_PARALLELISM
    pod_initial_backoff_seconds: float = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    pod_max_backoff_seconds: float = DEFAULT_POD_MAX_BACKOFF_SECONDS
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    profiles: list[ProfileConfig] = field(default_factory=list)


def load_config(path: str | Path) -> SchedulerConfig:
    """Read and validate a config file; ConfigError names the file or the bad field."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(doc)


def parse_config(doc: Any) -> SchedulerConfig:
    """Validate a decoded config document and fill in every default."""
    f = Fields(doc, "")
    f.string("apiVersion", "")
    f.string("kind", "KubeSchedulerConfiguration", choices=("KubeSchedulerConfiguration",))
    cfg = SchedulerConfig(
        watcher_address=_address(f, "watcherAddress"),
        watcher_token=f.string("watcherToken", "").strip(),
        watcher_token_file=f.string("watcherTokenFile", "").strip(),
        percentage_of_nodes_to_score=f.integer(
            "percentageOfNodesToScore", DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE, 0, 100
        ),
        parallelism=f.integer("parallelism", DEFAULT_PARALLELISM, 1, 1024),
        # Numbers, not only kube-scheduler's integers: sub-second backoff helps tests and demos.
        pod_initial_backoff_seconds=f.number(
            "podInitialBackoffSeconds", DEFAULT_POD_INITIAL_BACKOFF_SECONDS, 0.001, 3600
        ),
        pod_max_backoff_seconds=f.number(
            "podMaxBackoffSeconds", DEFAULT_POD_MAX_BACKOFF_SECONDS, 0.001, 3600
        ),
        leader_election=_leader_election(f.section("leaderElection")),
    )
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        raise f.error(
            "podMaxBackoffSeconds",
            f"must be >= podInitialBackoffSeconds ({cfg.pod_initial_backoff_seconds:g}), "
            f"got {cfg.pod_max_backoff_seconds:g}",
        )
    names: set[str] = set()
    profiles = f.items("profiles") or [Fields({}, "profiles[0]")]
    for pf in profiles:
        profile = _profile(pf)
        if profile.scheduler_name in names:
            raise pf.error("schedulerName", f"duplicate profile {profile.scheduler_name!r}")
        names.add(profile.scheduler_name)
        cfg.profiles.append(profile)
    f.finish()
    if not cfg.watcher_address:
        cfg.watcher_address = _watcher_from_args(cfg.profiles)
    _check_token(cfg)
    return cfg


def _check_token(cfg: SchedulerConfig) -> None:
    if cfg.watcher_token and cfg.watcher_token_file:
        raise ConfigError("watcherToken, watcherTokenFile: set one of them, not both")
    given = "watcherToken" if cfg.watcher_token else "watcherTokenFile"
    if (cfg.watcher_token or cfg.watcher_token_file) and not cfg.watcher_address:
        raise ConfigError(f"{given}: set, but there is no watcherAddress to send it to")
    # The file is read when the scheduler starts, not here: a Secret mounted in a pod does not
    # exist where the config is checked (CI, a laptop).


def _address(f: Fields, key: str) -> str:
    address = f.string(key, "").strip().rstrip("/")
    if address and not re.match(r"^https?://[^/\s]+", address):
        raise f.error(key, f"expected an http(s) URL, got {address!r}")
    return address


def _leader_election(f: Fields) -> LeaderElectionConfig:
    d = LeaderElectionConfig()
    le = LeaderElectionConfig(
        leader_elect=f.boolean("leaderElect", d.leader_elect),
        lease_duration=f.duration("leaseDuration", d.lease_duration),
        renew_deadline=f.duration("renewDeadline", d.renew_deadline),
        retry_period=f.duration("retryPeriod", d.retry_period),
        resource_name=f.string("resourceName", d.resource_name),
        resource_namespace=f.string("resourceNamespace", d.resource_namespace),
    )
    f.string("resourceLock", "leases", choices=("leases",))
    f.finish()
    if le.renew_deadline >= le.lease_duration:
        raise f.error("renewDeadline", "must be less than leaseDuration")
    if le.retry_period >= le.renew_deadline:
        raise f.error("retryPeriod", "must be less than renewDeadline")
    if not le.resource_name or not le.resource_namespace:
        raise f.error("resourceName", "resourceName and resourceNamespace must not be empty")
    return le


def _profile(f: Fields) -> ProfileConfig:
    name = f.string("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not name:
        raise f.error("schedulerName", "must not be empty")
    filters = list(DEFAULT_FILTERS)
    scores = {n: w for n, w in DEFAULT_SCORES}
    post_filters = list(DEFAULT_POST_FILTERS)
    plugins = f.section("plugins")
    for point in EXTENSION_POINTS:
        section = plugins.section(point)
        for ref in section.items("disabled"):
            disabled = ref.string("name")
            ref.finish()
            if disabled == "*":
                if point in ("filter", "multiPoint"):
                    filters.clear()
                if point in ("score", "multiPoint"):
                    scores.clear()
                if point in ("postFilter", "multiPoint"):
                    post_filters.clear()
                continue
            registry.check_name(disabled, ref.path("name"))
            if point in ("filter", "multiPoint") and disabled in filters:
                filters.remove(disabled)
            if point in ("score", "multiPoint"):
                scores.pop(disabled, None)
            if point in ("postFilter", "multiPoint") and disabled in post_filters:
                post_filters.remove(disabled)
        for ref in section.items("enabled"):
            plugin = ref.string("name")
            weight = ref.integer("weight", 0, 0, MAX_WEIGHT) or 1
            ref.finish()
            registry.check_name(plugin, ref.path("name"))
            points = registry.points(plugin)
            wanted = points if point == "multiPoint" else {point}
            if not wanted <= points:
                raise ref.error("name", f"{plugin} is not a {point} plugin")
            if "filter" in wanted and plugin not in filters:
                filters.append(plugin)
            if "score" in wanted:
                scores[plugin] = weight
            if "postFilter" in wanted and plugin not in post_filters:
                post_filters.append(plugin)
        section.finish()
    plugins.finish()
    args: dict[str, Any] = {}
    for pc in f.items("pluginConfig"):
        plugin = pc.string("name")
        registry.check_name(plugin, pc.path("name"))
        if plugin in args:
            raise pc.error("name", f"duplicate pluginConfig for {plugin}")
        args[plugin] = registry.parse_args(plugin, pc.section("args"))
        pc.finish()
    for plugin in [*filters, *scores, *post_filters]:
        if plugin not in args:
            args[plugin] = registry.parse_args(plugin, Fields({}, f"pluginConfig[{plugin}].args"))
    f.finish()
    return ProfileConfig(
        scheduler_name=name,
        filters=filters,
        scores=[PluginRef(n, w) for n, w in scores.items()],
        args=args,
        post_filters=post_filters,
    )


def _watcher_from_args(profiles: list[ProfileConfig]) -> str:
    """Trimaran configs carry watcherAddress in each plugin's args; accept one agreed value."""
    found = {
        getattr(a, "watcher_address", "")
        for p in profiles
        for a in p.args.values()
        if getattr(a, "watcher_address", "")
    }
    if len(found) > 1:
        raise ConfigError(
            f"watcherAddress: plugin args name different watchers ({', '.join(sorted(found))}); "
            "set one top-level watcherAddress"
        )
    return found.pop() if found else ""
