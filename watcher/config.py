"""The watcher's configuration: defaults < config file < environment < command-line flags.

Every setting has a flat snake_case name, used as the key in the YAML file and, upper-cased with
a `BALLAST_` prefix, as the environment variable. load-watcher's own variables are honoured too,
so a load-watcher Deployment can switch its image to Ballast unchanged.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from shared import durations, listen, logs, wire
from watcher import defaults
from watcher.errors import ConfigError

PRESETS: dict[str, dict[str, tuple[str, str]]] = {
    # metric key -> (name shown in the envelope, PromQL). `$label` and `$range` are substituted.
    "node-exporter": {
        # irate, not rate: rate() extrapolates a series younger than its range and reads a new
        # node as busy for a whole range (61 % for a 25 % node in our measurements); irate uses
        # the last two samples, exact from the second scrape on. The window smooths instead.
        "cpu": (
            "node_cpu_utilisation",
            '100 * (1 - avg by ($label) (irate(node_cpu_seconds_total{mode="idle"}[$range])))',
        ),
        "memory": (
            "node_memory_utilisation",
            "100 * (1 - avg by ($label) (node_memory_MemAvailable_bytes)"
            " / avg by ($label) (node_memory_MemTotal_bytes))",
        ),
    },
    # The recording rules load-watcher hard-codes (kube-prometheus's node rules).
    "load-watcher": {
        "cpu": ("instance:node_cpu:ratio", "100 * instance:node_cpu:ratio"),
        "memory": (
            "instance:node_memory_utilisation:ratio",
            "100 * instance:node_memory_utilisation:ratio",
        ),
    },
}

PROVIDERS = ("prometheus", "metrics-server")
# load-watcher's METRICS_PROVIDER_NAME values -> ours
LOAD_WATCHER_PROVIDERS = {
    "prometheus": "prometheus",
    "kubernetesmetricsserver": "metrics-server",
}
PERCENT = "percent"


@dataclass(frozen=True)
class MetricSpec:
    """One metric the watcher polls: `key` in /api/v1, `name` and `type` in the envelope."""

    key: str
    name: str
    type: str
    query: str
    unit: str = PERCENT

    @property
    def is_percent(self) -> bool:
        return self.unit == PERCENT


@dataclass
class Config:
    provider: str = defaults.PROVIDER
    prometheus_url: str = ""
    prometheus_token: str = ""
    prometheus_token_file: str = ""
    prometheus_ca_file: str = ""
    insecure_skip_verify: bool = False
    # Basic auth (the password or a file holding it), the other way stores guard their API.
    prometheus_username: str = ""
    prometheus_password: str = ""
    prometheus_password_file: str = ""
    # A client certificate, for a store that requires one (mutual TLS).
    prometheus_cert_file: str = ""
    prometheus_key_file: str = ""
    # Sent with every query: a tenant (Mimir's X-Scope-OrgID, Thanos's THANOS-TENANT).
    prometheus_headers: dict[str, str] = field(default_factory=dict)
    provider_timeout: float = defaults.PROVIDER_TIMEOUT
    node_label: str = defaults.NODE_LABEL
    query_preset: str = defaults.QUERY_PRESET
    rate_range: str = defaults.RATE_RANGE
    cpu_query: str = ""
    memory_query: str = ""
    extra_metrics: list[dict[str, Any]] = field(default_factory=list)
    use_capacity: bool = False
    redis_url: str = ""
    key_prefix: str = defaults.KEY_PREFIX
    poll_interval: float = defaults.POLL_INTERVAL
    poll_jitter: float = defaults.POLL_JITTER
    lock_ttl: float = defaults.LOCK_TTL
    warm_start: bool = defaults.WARM_START
    window: float = defaults.WINDOW
    tolerance: float = defaults.STALENESS_TOLERANCE
    horizon_min: float = 0.0  # 0: HORIZON_MIN_POLLS poll intervals
    horizon_max: float = 0.0  # 0: the expiry
    expiry: float = 0.0  # 0: the window
    listen: str = defaults.LISTEN
    workers: int = defaults.WORKERS
    threads: int = defaults.THREADS
    api_token: str = ""
    log_level: str = "INFO"  # DEBUG, INFO, WARNING, ERROR
    log_format: str = "text"  # or json: one object a line
    # Served without the token even when api_token is set: Trimaran reads /watcher and cannot
    # send one, so a cluster with both leaves that path open.
    api_open_paths: list[str] = field(default_factory=list)
    cors_origins: list[str] = field(default_factory=list)
    # The scheduler whose decisions the dashboard explains (its status address, such as
    # http://ballast-scheduler:10259), asked by this watcher on the page's behalf
    # (/api/v1/scheduler/decisions, watcher/decisions_proxy.py), with this token if it wants one.
    scheduler_url: str = ""
    scheduler_token_file: str = ""
    # The rebalancer whose rounds and decisions the dashboard shows (its status address, such
    # as http://ballast-rebalancer:10260), asked the same way (/api/v1/rebalancer/...).
    rebalancer_url: str = ""
    rebalancer_token_file: str = ""
    kubeconfig: str = ""
    map_node_addresses: bool = True
    kube_refresh: float = defaults.KUBE_REFRESH
    snapshot_check: float = defaults.SNAPSHOT_CHECK
    # Pod usage and workload profiles (watcher/pods.py); queries return one series per pod.
    pod_usage: bool = defaults.POD_USAGE
    pod_cpu_query: str = defaults.POD_CPU_QUERY
    pod_memory_query: str = defaults.POD_MEMORY_QUERY
    profile_window: float = defaults.PROFILE_WINDOW
    max_profiles: int = defaults.MAX_PROFILES
    pod_history_half_life: float = defaults.POD_HISTORY_HALF_LIFE
    peak_bucket_seconds: float = defaults.PEAK_BUCKET_SECONDS
    # GPUs from dcgm-exporter (watcher/gpus.py); Prometheus provider only.
    gpu_metrics: bool = defaults.GPU_METRICS
    gpu_node_label: str = defaults.GPU_NODE_LABEL
    gpu_util_query: str = defaults.GPU_UTIL_QUERY
    gpu_fb_used_query: str = defaults.GPU_FB_USED_QUERY
    gpu_fb_free_query: str = defaults.GPU_FB_FREE_QUERY
    gpu_pod_query: str = defaults.GPU_POD_QUERY

    # -- derived values -----------------------------------------------------------------------
    @property
    def expiry_seconds(self) -> float:
        return self.expiry or self.window

    @property
    def horizon_bounds(self) -> tuple[float, float]:
        low = self.horizon_min or defaults.HORIZON_MIN_POLLS * self.poll_interval
        high = self.horizon_max or self.expiry_seconds
        return low, max(low, high)

    @property
    def listen_address(self) -> tuple[str, int]:
        host, port = listen.split(self.listen)
        return listen.resolve(host), port

    @property
    def source(self) -> str:
        return "Prometheus" if self.provider == "prometheus" else "KubernetesMetricsServer"

    def metric_specs(self) -> list[MetricSpec]:
        preset = PRESETS[self.query_preset]
        specs = []
        for key, mtype, override in (
            ("cpu", wire.CPU, self.cpu_query),
            ("memory", wire.MEMORY, self.memory_query),
        ):
            name, query = preset[key]
            specs.append(MetricSpec(key, name, mtype, self._expand(override or query)))
        for extra in self.extra_metrics:
            specs.append(
                MetricSpec(
                    key=extra["key"],
                    name=extra.get("name", extra["key"]),
                    type=extra.get("type", wire.UNKNOWN),
                    query=self._expand(extra["query"]),
                    unit=extra.get("unit", PERCENT),
                )
            )
        return specs

    def pod_queries(self) -> dict[str, str]:
        """The per-pod usage queries, `$range` substituted: CPU in cores, memory in bytes."""
        return {
            "cpu": self.pod_cpu_query.replace("$range", self.rate_range),
            "memory": self.pod_memory_query.replace("$range", self.rate_range),
        }

    def gpu_queries(self) -> dict[str, str]:
        """dcgm-exporter's queries by GPU metric key, `$label` as gpu_node_label."""
        return {
            key: query.replace("$label", self.gpu_node_label)
            for key, query in (
                ("util", self.gpu_util_query),
                ("fbUsed", self.gpu_fb_used_query),
                ("fbFree", self.gpu_fb_free_query),
                ("pods", self.gpu_pod_query),
            )
        }

    def _expand(self, query: str) -> str:
        return query.replace("$label", self.node_label).replace("$range", self.rate_range)

    def token(self) -> str:
        if self.prometheus_token_file:
            try:
                return Path(self.prometheus_token_file).read_text().strip()
            except OSError as exc:
                raise ConfigError(f"prometheus_token_file: {exc}") from exc
        return self.prometheus_token

    def validate(self) -> Config:
        problems = []
        if self.provider not in PROVIDERS:
            problems.append(f"provider must be one of {', '.join(PROVIDERS)}")
        if self.provider == "prometheus" and not self.prometheus_url:
            problems.append("prometheus_url is required for the prometheus provider")
        if self.provider == "prometheus":
            problems.extend(_provider_problems(self))
        if self.log_level not in logs.LEVELS:
            problems.append(f"log_level must be one of {', '.join(logs.LEVELS)}")
        if self.log_format not in logs.FORMATS:
            problems.append(f"log_format must be one of {', '.join(logs.FORMATS)}")
        if self.query_preset not in PRESETS:
            problems.append(f"query_preset must be one of {', '.join(PRESETS)}")
        # Finite: NaN passes `<= 0`, then polls in a busy loop or keeps no sample, and an
        # infinite wait raises in the thread that waits (shared/durations.py).
        for name, zero in (
            ("poll_interval", False),
            ("window", False),
            ("lock_ttl", False),
            ("provider_timeout", False),
            ("profile_window", False),
            ("pod_history_half_life", False),
            ("peak_bucket_seconds", False),
            # 0: no jitter, the derived horizon and expiry, a refresh or check each time
            ("poll_jitter", True),
            ("horizon_min", True),
            ("horizon_max", True),
            ("expiry", True),
            ("kube_refresh", True),
            ("snapshot_check", True),
        ):
            problems.append(durations.refusal(name, getattr(self, name), zero))
        problems.append(durations.refusal("tolerance", self.tolerance, unit="percentage points"))
        if self.max_profiles <= 0:
            problems.append("max_profiles must be > 0")
        for name in ("scheduler_url", "rebalancer_url"):
            url = getattr(self, name)
            if url and not url.startswith(("http://", "https://")):
                problems.append(f"{name} must be an http(s) URL, not {url!r}")
        for path in self.api_open_paths:
            if not path.startswith(("/watcher", "/api/")):
                problems.append(f"api_open_paths: {path!r} is not a /watcher or /api/ path")
        if self.gpu_metrics and not self.gpu_node_label.strip():
            problems.append("gpu_node_label must name the label that carries the node")
        if self.workers < 1 or self.threads < 1:
            problems.append("workers and threads must be >= 1")
        try:
            self.listen_address  # noqa: B018 (parses)
        except ValueError:
            problems.append(f"listen must be HOST:PORT, not {self.listen!r}")
        keys = {"cpu", "memory"}
        for i, extra in enumerate(self.extra_metrics):
            if not isinstance(extra, dict) or not extra.get("key") or not extra.get("query"):
                problems.append(f"extra_metrics[{i}] needs at least `key` and `query`")
                continue
            if extra["key"] in keys:
                problems.append(f"extra_metrics[{i}]: key {extra['key']!r} is used twice")
            keys.add(extra["key"])
            if extra.get("type", wire.UNKNOWN) not in wire.METRIC_TYPES:
                problems.append(f"extra_metrics[{i}].type must be one of {wire.METRIC_TYPES}")
        problems = [p for p in problems if p]
        if problems:
            raise ConfigError("invalid configuration: " + "; ".join(problems))
        return self


# An HTTP header name (RFC 9110's token).
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def _provider_problems(config: Config) -> list[str]:
    """The Prometheus provider's URL, credentials, TLS files and headers, checked before the
    first query so a mistake is one clear message at start, not a poll failing every interval."""
    problems = []
    url = urlsplit(config.prometheus_url)
    if config.prometheus_url and (url.scheme not in ("http", "https") or not url.netloc):
        problems.append(f"prometheus_url must be an http(s) URL, not {config.prometheus_url!r}")
    if re.search(r"/api/v1(/[a-z_]*)?/?$", url.path):
        problems.append(
            "prometheus_url is the base URL the store serves /api/v1 under (with its path "
            f"prefix, such as /select/0/prometheus), not {url.path!r}"
        )
    tls = [n for n in ("prometheus_ca_file", "prometheus_cert_file") if getattr(config, n)]
    if tls and url.scheme == "http":
        problems.append(f"{' and '.join(tls)} set, but prometheus_url is not https")
    if bool(config.prometheus_cert_file) != bool(config.prometheus_key_file):
        problems.append("prometheus_cert_file and prometheus_key_file go together")
    token = config.prometheus_token or config.prometheus_token_file
    password = config.prometheus_password or config.prometheus_password_file
    if token and config.prometheus_username:
        problems.append("use a bearer token or basic auth (prometheus_username), not both")
    if password and not config.prometheus_username:
        problems.append("prometheus_password(_file) needs prometheus_username")
    if config.prometheus_username and not password:
        problems.append("prometheus_username needs prometheus_password or _password_file")
    for name in (
        "prometheus_token_file",
        "prometheus_password_file",
        "prometheus_ca_file",
        "prometheus_cert_file",
        "prometheus_key_file",
    ):
        path = getattr(config, name)
        if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            problems.append(f"{name}: {path} is not a readable file")
    for name, value in config.prometheus_headers.items():
        if not HEADER_NAME.match(name):
            problems.append(f"prometheus_headers: {name!r} is not a header name")
        elif "\r" in value or "\n" in value:
            problems.append(f"prometheus_headers: the value of {name} has a line break")
        elif name.lower() == "authorization" and (token or config.prometheus_username):
            problems.append("prometheus_headers sets Authorization, and so do the credentials")
    return problems


FIELDS = {f.name: f for f in dataclasses.fields(Config)}


def _coerce(name: str, value: Any) -> Any:
    kind = FIELDS[name].type
    try:
        if kind == "bool":
            if isinstance(value, str):
                if value.strip().lower() in ("1", "true", "yes", "on"):
                    return True
                if value.strip().lower() in ("0", "false", "no", "off", ""):
                    return False
                raise ValueError(value)
            return bool(value)
        if kind == "float":
            return float(value)
        if kind == "int":
            return int(value)
        if kind == "list[str]":
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            return [str(v) for v in value]
        if kind == "dict[str, str]":
            # In the environment as YAML too: `X-Scope-OrgID: team-a`, or `{A: x, B: y}`.
            if isinstance(value, str):
                try:
                    value = yaml.safe_load(value) if value.strip() else {}
                except yaml.YAMLError as exc:
                    raise ValueError(str(exc)) from exc
            if not isinstance(value, dict):
                raise ValueError("expected a mapping")
            return {str(k): str(v) for k, v in value.items()}
        if kind == "list[dict[str, Any]]":
            if isinstance(value, str):
                value = yaml.safe_load(value)
            if not isinstance(value, list):
                raise ValueError("expected a list")
            return value
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: cannot use {value!r} ({kind} expected)") from exc


def load(
    path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the configuration from a YAML file, the environment and explicit overrides."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    path = path or env.get("BALLAST_CONFIG")
    if path:
        try:
            doc = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"config file {path}: {exc}") from exc
        if not isinstance(doc, dict):
            raise ConfigError(f"config file {path}: expected a mapping of settings")
        unknown = sorted(set(doc) - set(FIELDS))
        if unknown:
            raise ConfigError(f"config file {path}: unknown settings {', '.join(unknown)}")
        values.update(doc)
    # load-watcher's variables
    if env.get("METRICS_PROVIDER_NAME"):
        name = env["METRICS_PROVIDER_NAME"].strip().lower()
        if name not in LOAD_WATCHER_PROVIDERS:
            raise ConfigError(f"METRICS_PROVIDER_NAME {env['METRICS_PROVIDER_NAME']!r} unsupported")
        values["provider"] = LOAD_WATCHER_PROVIDERS[name]
    for var, name in (
        ("METRICS_PROVIDER_ADDRESS", "prometheus_url"),
        ("METRICS_PROVIDER_TOKEN", "prometheus_token"),
        ("INSECURE_SKIP_VERIFY", "insecure_skip_verify"),
    ):
        if env.get(var):
            values[name] = env[var]
    for name in FIELDS:
        var = f"BALLAST_{name.upper()}"
        if var in env:
            values[name] = env[var]
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
    return Config(**{name: _coerce(name, value) for name, value in values.items()}).validate()
