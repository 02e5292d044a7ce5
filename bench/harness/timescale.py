"""Trace time, faithful to deployment: how fast the trace plays, and every contender's timing.

A trace step is 5 minutes of production; the benchmarks play one in STEP_WALL seconds. A
contender's constant left at its real-time value would then look back SPEED times further in
trace time than it does deployed (a 5-minute window averaging hours), so every setting that
looks back or sets a pace is given here as its deployed value divided by SPEED. Three limits
decide the speed: a window must hold several polls to have a standard deviation
(MIN_WINDOW_SAMPLES), a poll is no faster than the machine can serve (FASTEST_POLL), and the
benchmarks must fit their budgets. Where a scaled value would be faster than the machine can go
it is floored, and a floored value must stay within one trace step of the deployed one
(tests/unit/test_bench_timescale.py), else the replay is to be slowed instead.

Settings a peer's binary fixes in real time (Trimaran's fetch and its recently-bound pods,
load-watcher's fetch) cannot follow; they are listed with `fixed` saying why, so the table shows
how far off they are. load-watcher's windows, hard-coded in its queries, follow through a proxy
that scales their ranges (sandbox/peers/loadwatcher/serve.py).
docs/trace.md's table is `table()`'s output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sandbox.load.nodemetric import NodeMetricConfig
from sandbox.load.trace import STEP_SECONDS
from scheduler.rebalancer.settings import RebalancerSettings
from scheduler.runtime import RuntimeOptions
from watcher import defaults as watcher_defaults

STEP_WALL = 5.0  # wall seconds one 5-minute trace step lasts
SPEED = STEP_SECONDS / STEP_WALL  # trace seconds per wall second: 60
LOAD_WATCHER_SPEED = SPEED  # RangeProxy's factor for load-watcher's query ranges
FASTEST_POLL = 1.0  # wall seconds: Prometheus's scrape and the watcher's poll on 2 busy cores
MIN_WINDOW_SAMPLES = 5  # polls a window holds, so its deviation means something
LOOK_BACK, PACE = "look-back", "pace"


@dataclass(frozen=True)
class Setting:
    contender: str
    name: str
    kind: str  # LOOK_BACK: how far back a figure reaches; PACE: how often something happens
    deployed: float  # seconds of real time, the deployed default
    source: str  # where the deployed value is from
    wall: float  # seconds of wall time, as the benchmarks set it
    fixed: str = ""  # set: the binary fixes it in real time; why it cannot follow
    speed: float = SPEED  # trace seconds per wall second of the replay it runs in

    @property
    def trace(self) -> float:
        """The setting in trace time."""
        return self.wall * self.speed

    @property
    def steps_off(self) -> float:
        """How far, in trace steps, it is from its deployed value."""
        return abs(self.trace - self.deployed) / STEP_SECONDS


def scaled(deployed: float, floor: float = 0.0) -> float:
    """`deployed` real seconds in wall seconds at SPEED, never under `floor`."""
    return max(round(deployed / SPEED, 3), floor)


_RUNTIME = RuntimeOptions()
_REBALANCER = RebalancerSettings()
# koordlet v1.8.0's defaults (docs/koordinator.md; sandbox.load.nodemetric): a report every 60 s of
# 300 s means, aggregates over 5, 10 and 30 minutes; LoadAwareScheduling's expiry 180 s.
KOORDLET_REPORT, KOORDLET_MEAN, KOORDLET_DURATIONS = 60.0, 300.0, (300.0, 600.0, 1800.0)
LOAD_AWARE_EXPIRATION = 180.0
# koord-descheduler's anomalyCondition.timeout default (LowNodeLoadArgs).
KOORD_ANOMALY_TIMEOUT = 60.0
# Its MigrationController's (MigrationControllerArgs defaults; controllers/migration): a job fails
# 5 minutes after it is made, a workload's pods are evicted at most its limit per 5 minutes, the
# arbitrator admits jobs every 500 ms, 10 evictions a second (Koordinator's configuration), and
# a job waiting on its eviction is looked at again 3 s later (a constant).
MIGRATION = "koord-descheduler MigrationController"
MIGRATION_TTL, MIGRATION_LIMITER, MIGRATION_ARBITRATION = 300.0, 300.0, 0.5
MIGRATION_EVICT_GAP, MIGRATION_REQUEUE = 0.1, 3.0
# The pace of every rebalancer's rounds: Ballast's default interval, given to all of them so their
# rounds pair (the descheduler and koord-descheduler deployed run as often as they are told).
ROUNDS = _REBALANCER.interval
SCRAPE = 30.0  # kube-prometheus's node-exporter scrape interval

# The peak model's maxima: a pod's over its last 24 buckets, a node's over 72 (watcher/podstats.py,
# watcher/nodepeaks.py); the bucket is the setting, the look-backs are what a table reads.
POD_PEAK_BUCKETS, NODE_PEAK_BUCKETS = 24, 72
PEAK_BUCKET_WALL = scaled(watcher_defaults.PEAK_BUCKET_SECONDS)
# The scheduler fetches the per-pod statistics every six node fetches unless told otherwise.
POD_USAGE_INTERVAL = _RUNTIME.pod_usage_interval or 6 * _RUNTIME.watcher_interval

POLL_WALL = scaled(watcher_defaults.POLL_INTERVAL, FASTEST_POLL)
WINDOW_WALL = scaled(watcher_defaults.WINDOW)
# irate needs two scrapes in its range: three make it robust to a late one.
RATE_RANGE_WALL = max(scaled(60.0), 3 * FASTEST_POLL)

SETTINGS: tuple[Setting, ...] = (
    Setting("Prometheus", "scrape interval", PACE, SCRAPE, "kube-prometheus", FASTEST_POLL),
    Setting("Ballast watcher", "poll_interval", PACE, watcher_defaults.POLL_INTERVAL,
            "watcher/defaults.py", POLL_WALL),
    Setting("Ballast watcher", "window", LOOK_BACK, watcher_defaults.WINDOW,
            "watcher/defaults.py", WINDOW_WALL),
    Setting("Ballast watcher", "rate_range", LOOK_BACK, 60.0, "watcher/defaults.py (1m)",
            RATE_RANGE_WALL),
    Setting("Ballast watcher", "profile_window", LOOK_BACK, watcher_defaults.PROFILE_WINDOW,
            "watcher/defaults.py", scaled(watcher_defaults.PROFILE_WINDOW)),
    Setting("Ballast watcher", "pod_history_half_life", LOOK_BACK,
            watcher_defaults.POD_HISTORY_HALF_LIFE, "watcher/defaults.py",
            scaled(watcher_defaults.POD_HISTORY_HALF_LIFE)),
    Setting("Ballast watcher", "peak_bucket_seconds x 24, a pod's max", LOOK_BACK,
            POD_PEAK_BUCKETS * watcher_defaults.PEAK_BUCKET_SECONDS, "watcher/defaults.py",
            POD_PEAK_BUCKETS * PEAK_BUCKET_WALL),
    Setting("Ballast watcher", "peak_bucket_seconds x 72, a node's max", LOOK_BACK,
            NODE_PEAK_BUCKETS * watcher_defaults.PEAK_BUCKET_SECONDS, "watcher/defaults.py",
            NODE_PEAK_BUCKETS * PEAK_BUCKET_WALL),
    Setting("Ballast scheduler", "--watcher-interval", PACE, _RUNTIME.watcher_interval,
            "scheduler/runtime.py", scaled(_RUNTIME.watcher_interval, FASTEST_POLL)),
    Setting("Ballast scheduler", "--provider-lag", LOOK_BACK, _RUNTIME.provider_lag,
            "scheduler/runtime.py", scaled(_RUNTIME.provider_lag)),
    Setting("Ballast scheduler", "--recent-max-age", LOOK_BACK, _RUNTIME.recent_max_age,
            "scheduler/runtime.py", scaled(_RUNTIME.recent_max_age)),
    Setting("Ballast scheduler", "--pod-usage-interval", PACE, POD_USAGE_INTERVAL,
            "scheduler/runtime.py (6 watcher fetches)", scaled(POD_USAGE_INTERVAL, FASTEST_POLL)),
    Setting("Ballast scheduler", "--pod-usage-max-age", LOOK_BACK, _RUNTIME.pod_usage_max_age,
            "scheduler/runtime.py", scaled(_RUNTIME.pod_usage_max_age)),
    Setting("Ballast rebalancer", "interval", PACE, _REBALANCER.interval,
            "scheduler/rebalancer/settings.py", scaled(ROUNDS, FASTEST_POLL)),
    Setting("Koordinator (koordlet)", "reportIntervalSeconds", PACE, KOORDLET_REPORT,
            "koordlet default", scaled(KOORDLET_REPORT, FASTEST_POLL)),
    Setting("Koordinator (koordlet)", "aggregateDurationSeconds", LOOK_BACK, KOORDLET_MEAN,
            "koordlet default", scaled(KOORDLET_MEAN)),
    *(
        Setting("Koordinator (koordlet)", f"aggregated over {d / 60:g} min", LOOK_BACK, d,
                "koordlet default", scaled(d))
        for d in KOORDLET_DURATIONS
    ),
    # Floored at 5 reports: one late write on a busy machine must not expire a node.
    Setting("Koordinator LoadAware", "nodeMetricExpirationSeconds", LOOK_BACK,
            LOAD_AWARE_EXPIRATION, "LoadAwareSchedulingArgs default",
            scaled(LOAD_AWARE_EXPIRATION, 5 * scaled(KOORDLET_REPORT, FASTEST_POLL))),
    Setting("koord-descheduler", "deschedulingInterval", PACE, ROUNDS, "as Ballast's rounds",
            scaled(ROUNDS, FASTEST_POLL)),
    Setting("koord-descheduler", "anomalyCondition.timeout", LOOK_BACK, KOORD_ANOMALY_TIMEOUT,
            "LowNodeLoadArgs default", scaled(KOORD_ANOMALY_TIMEOUT, FASTEST_POLL)),
    # Floored at three requeues: a job sees its pod gone one requeue after evicting it, and must
    # before it times out, with room for a busy machine (0.8 steps off).
    Setting(MIGRATION, "defaultJobTTL", LOOK_BACK, MIGRATION_TTL,
            "MigrationControllerArgs default", scaled(MIGRATION_TTL, 3 * MIGRATION_REQUEUE)),
    Setting(MIGRATION, "objectLimiters.workload.duration", LOOK_BACK, MIGRATION_LIMITER,
            "MigrationControllerArgs default", scaled(MIGRATION_LIMITER)),
    # Faster than deployed only adds work: both stay at it, well within a step.
    Setting(MIGRATION, "arbitrationArgs.interval", PACE, MIGRATION_ARBITRATION,
            "MigrationControllerArgs default", MIGRATION_ARBITRATION),
    Setting(MIGRATION, "evictQPS 10: the gap between evictions", PACE, MIGRATION_EVICT_GAP,
            "Koordinator's descheduler-config.yaml", MIGRATION_EVICT_GAP),
    Setting(MIGRATION, "requeue of a job evicting", PACE, MIGRATION_REQUEUE,
            "controllers/migration defaultRequeueAfter", MIGRATION_REQUEUE,
            fixed="a constant of the MigrationController"),
    Setting("descheduler", "--descheduling-interval", PACE, ROUNDS, "as Ballast's rounds",
            scaled(ROUNDS, FASTEST_POLL)),
    Setting("simulated pods", "ramp to their use after start", PACE, 0.0,
            "a container's start", STEP_WALL),
    Setting("Trimaran", "watcher fetch", PACE, 30.0, "scheduler-plugins collector", 30.0,
            fixed="a constant of scheduler-plugins' Trimaran collector"),
    Setting("Trimaran", "recently bound pods", LOOK_BACK, 60.0, "scheduler-plugins", 60.0,
            fixed="a constant of scheduler-plugins' Trimaran"),
    # Hard-coded in its queries; RangeProxy (sandbox/peers/loadwatcher/serve.py) scales them.
    Setting("load-watcher", "window (through RangeProxy)", LOOK_BACK, 900.0,
            "load-watcher v0.2.4", scaled(900.0)),
    Setting("load-watcher", "fetch", PACE, 60.0, "load-watcher v0.2.4", 60.0,
            fixed="load-watcher sleeps a hard-coded minute between fetches"),
)  # fmt: skip


@dataclass(frozen=True)
class Timing:
    """What a benchmark run sets from these settings: the watcher's environment, the NodeMetric
    writer, the scheduler's flags and LoadAwareScheduling's arguments."""

    watcher_env: dict[str, str]
    node_metrics: NodeMetricConfig
    scheduler_flags: tuple[str, ...] = ()
    load_aware_args: dict[str, Any] = field(default_factory=dict)
    rounds: float | None = None  # every rebalancer's round period; None: the benchmark's own
    load_watcher_speed: float | None = None  # RangeProxy's factor; None: load-watcher as built
    anomaly_timeout: float | None = None  # koord-descheduler's; None: the benchmark's own
    # The MigrationController's job TTL and workload limiter; None: its defaults.
    migration_ttl: float | None = None
    migration_limiter: float | None = None

    def record(self) -> dict[str, Any]:
        """For a result's setup: what the contenders ran with."""
        return {
            "watcher": self.watcher_env,
            "node_metrics": asdict(self.node_metrics),
            "scheduler_flags": list(self.scheduler_flags),
            "load_aware_args": self.load_aware_args,
            "rounds": self.rounds,
            "load_watcher_speed": self.load_watcher_speed,
            "anomaly_timeout": self.anomaly_timeout,
            "migration_ttl": self.migration_ttl,
            "migration_limiter": self.migration_limiter,
        }


def trace_timing() -> Timing:
    """Every contender of a trace scenario at its deployed defaults, scaled."""
    return Timing(
        watcher_env(),
        node_metrics(),
        tuple(scheduler_flags()),
        load_aware_args(),
        rounds=setting("Ballast rebalancer", "interval").wall,
        load_watcher_speed=LOAD_WATCHER_SPEED,
        anomaly_timeout=setting("koord-descheduler", "anomalyCondition.timeout").wall,
        migration_ttl=setting(MIGRATION, "defaultJobTTL").wall,
        migration_limiter=setting(MIGRATION, "objectLimiters.workload.duration").wall,
    )


def setting(contender: str, name: str) -> Setting:
    for s in SETTINGS:
        if (s.contender, s.name) == (contender, name):
            return s
    raise KeyError(f"no setting {name!r} of {contender!r}")


def watcher_env() -> dict[str, str]:
    """Ballast's watcher in the trace scenarios: its deployed defaults, scaled."""
    return {
        "BALLAST_POLL_INTERVAL": f"{POLL_WALL:g}",
        "BALLAST_POLL_JITTER": "0",
        "BALLAST_WINDOW": f"{WINDOW_WALL:g}",
        "BALLAST_RATE_RANGE": f"{RATE_RANGE_WALL:g}s",
        "BALLAST_PROFILE_WINDOW": f"{setting('Ballast watcher', 'profile_window').wall:g}",
        "BALLAST_POD_HISTORY_HALF_LIFE": (
            f"{setting('Ballast watcher', 'pod_history_half_life').wall:g}"
        ),
        "BALLAST_PEAK_BUCKET_SECONDS": f"{PEAK_BUCKET_WALL:g}",
    }


def record() -> list[dict[str, Any]]:
    """Every setting for a result's setup: deployed, wall and trace seconds, steps off."""
    return [
        {"contender": s.contender, "setting": s.name, "kind": s.kind, "deployed": s.deployed,
         "wall": s.wall, "trace": round(s.trace, 3), "steps_off": round(s.steps_off, 2),
         **({"fixed": s.fixed} if s.fixed else {})}
        for s in SETTINGS
    ]  # fmt: skip


def _seconds(value: float) -> str:
    if value >= 3600 and value % 3600 == 0:
        return f"{value / 3600:g} h"
    if value >= 60:
        return f"{value / 60:g} min"
    return f"{value:g} s"


def table() -> str:
    """docs/trace.md's table: every setting, deployed and here, in trace time."""
    rows = [
        f"Speed: one 5-minute trace step every {STEP_WALL:g} s of wall time ({SPEED:g}x).",
        "",
        "| contender | setting | deployed | here (wall) | here (trace time) | off by |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in SETTINGS:
        off = f"{s.steps_off:.1f} steps" if s.steps_off >= 0.05 else "-"
        if s.fixed:
            off += f"; fixed: {s.fixed}"
        rows.append(
            f"| {s.contender} | {s.name} ({s.kind}) | {_seconds(s.deployed)} | "
            f"{_seconds(s.wall)} | {_seconds(s.trace)} | {off} |"
        )
    return "\n".join(rows) + "\n"


def scheduler_flags() -> list[str]:
    """Ballast's scheduler's runtime settings, scaled."""
    return [
        f"--{name.lstrip('-')}={setting('Ballast scheduler', name).wall:g}"
        for name in (
            "--watcher-interval",
            "--provider-lag",
            "--recent-max-age",
            "--pod-usage-interval",
            "--pod-usage-max-age",
        )
    ]


def node_metrics() -> NodeMetricConfig:
    """The NodeMetric writer as koordlet's defaults, scaled."""
    koordlet = "Koordinator (koordlet)"
    return NodeMetricConfig(
        report_seconds=setting(koordlet, "reportIntervalSeconds").wall,
        aggregate_seconds=setting(koordlet, "aggregateDurationSeconds").wall,
        durations=tuple(setting(koordlet, f"aggregated over {d / 60:g} min").wall
                        for d in KOORDLET_DURATIONS),
        warm_start=True,  # a koordlet that has run long before the window
    )  # fmt: skip


def load_aware_args() -> dict[str, int]:
    """LoadAwareScheduling's arguments that look back, scaled (the rest stay its defaults;
    an int64 of seconds in its Go types)."""
    wall = setting("Koordinator LoadAware", "nodeMetricExpirationSeconds").wall
    return {"nodeMetricExpirationSeconds": round(wall)}


def effective(timing: Timing, step_wall: float) -> list[Setting]:
    """The settings a benchmark run actually has, read back from its Timing, at a replay of one
    trace step every `step_wall` seconds: what the test holds to one step of deployed."""
    env, flags = timing.watcher_env, dict(f.lstrip("-").split("=") for f in timing.scheduler_flags)
    nm = timing.node_metrics
    walls = {
        ("Ballast watcher", "poll_interval"): float(env["BALLAST_POLL_INTERVAL"]),
        ("Ballast watcher", "window"): float(env.get("BALLAST_WINDOW", watcher_defaults.WINDOW)),
        ("Ballast watcher", "rate_range"): _go_seconds(env["BALLAST_RATE_RANGE"]),
        ("Ballast watcher", "profile_window"): float(
            env.get("BALLAST_PROFILE_WINDOW", watcher_defaults.PROFILE_WINDOW)
        ),
        ("Ballast scheduler", "--watcher-interval"): float(
            flags.get("watcher-interval", _RUNTIME.watcher_interval)
        ),
        ("Ballast scheduler", "--provider-lag"): float(
            flags.get("provider-lag", _RUNTIME.provider_lag)
        ),
        ("Ballast scheduler", "--recent-max-age"): float(
            flags.get("recent-max-age", _RUNTIME.recent_max_age)
        ),
        ("Ballast scheduler", "--pod-usage-interval"): float(flags.get("pod-usage-interval", 0.0))
        or 6 * float(flags.get("watcher-interval", _RUNTIME.watcher_interval)),
        ("Ballast scheduler", "--pod-usage-max-age"): float(
            flags.get("pod-usage-max-age", _RUNTIME.pod_usage_max_age)
        ),
        ("Koordinator (koordlet)", "reportIntervalSeconds"): nm.report_seconds,
        ("Koordinator (koordlet)", "aggregateDurationSeconds"): nm.aggregate_seconds,
        ("Koordinator LoadAware", "nodeMetricExpirationSeconds"): float(
            timing.load_aware_args.get("nodeMetricExpirationSeconds", LOAD_AWARE_EXPIRATION)
        ),
    }
    bucket = float(env.get("BALLAST_PEAK_BUCKET_SECONDS", watcher_defaults.PEAK_BUCKET_SECONDS))
    for buckets, whose in ((POD_PEAK_BUCKETS, "a pod's"), (NODE_PEAK_BUCKETS, "a node's")):
        walls[("Ballast watcher", f"peak_bucket_seconds x {buckets}, {whose} max")] = (
            buckets * bucket
        )
    walls[("Ballast watcher", "pod_history_half_life")] = float(
        env.get("BALLAST_POD_HISTORY_HALF_LIFE", watcher_defaults.POD_HISTORY_HALF_LIFE)
    )
    for d, wall in zip(KOORDLET_DURATIONS, nm.durations, strict=False):
        walls[("Koordinator (koordlet)", f"aggregated over {d / 60:g} min")] = wall
    if timing.rounds is not None:
        for key in (("Ballast rebalancer", "interval"),
                    ("koord-descheduler", "deschedulingInterval"),
                    ("descheduler", "--descheduling-interval")):  # fmt: skip
            walls[key] = timing.rounds
    if timing.anomaly_timeout is not None:
        walls[("koord-descheduler", "anomalyCondition.timeout")] = timing.anomaly_timeout
    walls[(MIGRATION, "defaultJobTTL")] = timing.migration_ttl or MIGRATION_TTL
    walls[(MIGRATION, "objectLimiters.workload.duration")] = (
        timing.migration_limiter or MIGRATION_LIMITER
    )
    speed = STEP_SECONDS / step_wall
    return [replace(setting(*key), wall=wall, speed=speed) for key, wall in walls.items()]


def _go_seconds(text: str) -> float:
    """ "3s", "1m", "500ms" in seconds."""
    for unit, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * scale
    raise ValueError(f"not a duration: {text!r}")
