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

The synthetic scenarios of both benchmarks use the same settings at one compression of their
own, SYNTHETIC_SPEED (`settings(SYNTHETIC_SPEED)`, `synthetic_timing()`): there each contender
looks back its deployed value over 5, within one watcher poll (the same test).
docs/trace.md's table is `table()`'s output, docs/benchmarks.md's `synthetic_table()`'s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sandbox.load.nodemetric import NodeMetricConfig
from sandbox.load.trace import STEP_SECONDS
from sandbox.peers.koordinator import descheduler as koord_descheduler
from scheduler.rebalancer.runtime import Options as RebalancerRuntimeOptions
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
    def wall_off(self) -> float:
        """How far, in wall seconds, it is from its deployed value over its speed (the
        synthetic scenarios' measure: one watcher poll at most)."""
        return abs(self.wall - self.deployed / self.speed)

    @property
    def steps_off(self) -> float:
        """How far, in trace steps, it is from its deployed value."""
        return abs(self.trace - self.deployed) / STEP_SECONDS


def scaled(deployed: float, floor: float = 0.0, speed: float = SPEED) -> float:
    """`deployed` real seconds in wall seconds at `speed`, never under `floor`."""
    return max(round(deployed / speed, 3), floor)


_RUNTIME = RuntimeOptions()
_REBALANCER = RebalancerSettings()
# koordlet v1.8.0's defaults (docs/koordinator.md; sandbox.load.nodemetric): a report every 60 s of
# 300 s means, aggregates over 5, 10 and 30 minutes; LoadAwareScheduling's expiry 180 s.
KOORDLET_REPORT, KOORDLET_MEAN, KOORDLET_DURATIONS = 60.0, 300.0, (300.0, 600.0, 1800.0)
LOAD_AWARE_EXPIRATION = 180.0
# koord-descheduler's anomalyCondition.timeout default (LowNodeLoadArgs).
KOORD_ANOMALY_TIMEOUT = 60.0
# Its detectorCacheTimeout: a node's count of hot rounds is dropped once it has not been hot for
# this long (5 minutes; left in wall time, a count would outlive 5 trace hours of the node not
# being hot, 25 deployed minutes in the synthetic scenarios).
KOORD_DETECTOR_CACHE = koord_descheduler.DETECTOR_CACHE_SECONDS
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
RATE_RANGE_WALL = max(scaled(60.0), 3 * FASTEST_POLL)  # as settings() gives it
# The rebalancer fetches the watcher every this many seconds unless told (--watcher-interval).
REBALANCER_FETCH = RebalancerRuntimeOptions().watcher_interval
REBALANCER_LAG = RebalancerRuntimeOptions().provider_lag
REBALANCER_MAX_AGE = RebalancerRuntimeOptions().recent_max_age
# Its token bucket's rate, evictionsPerMinute, as the pace it sets: one eviction every this many
# seconds (its burst, maxPerRound, is per round and follows the rounds). Left in wall minutes, 10
# a minute would be 10 a trace hour (issue 46).
EVICTIONS_PER_MINUTE = _REBALANCER.evictions_per_minute
EVICTION_GAP = 60.0 / EVICTIONS_PER_MINUTE
EVICTION_RATE = f"evictionsPerMinute {EVICTIONS_PER_MINUTE:g}: the gap between evictions"


def settings(speed: float = SPEED, ramp: float = STEP_WALL) -> tuple[Setting, ...]:
    """Every setting at `speed` (real seconds a wall second): the trace's at SPEED, the
    synthetic scenarios' at SYNTHETIC_SPEED; `ramp`: the pods' ramp, a scenario's own."""

    def at(deployed: float, floor: float = 0.0) -> float:
        return scaled(deployed, floor, speed)

    poll = at(watcher_defaults.POLL_INTERVAL, FASTEST_POLL)
    bucket = at(watcher_defaults.PEAK_BUCKET_SECONDS)
    report = at(KOORDLET_REPORT, FASTEST_POLL)
    rows = (
        Setting("Prometheus", "scrape interval", PACE, SCRAPE, "kube-prometheus", FASTEST_POLL),
        Setting("Ballast watcher", "poll_interval", PACE, watcher_defaults.POLL_INTERVAL,
                "watcher/defaults.py", poll),
        Setting("Ballast watcher", "window", LOOK_BACK, watcher_defaults.WINDOW,
                "watcher/defaults.py", at(watcher_defaults.WINDOW)),
        # irate needs two scrapes in its range: three make it robust to a late one.
        Setting("Ballast watcher", "rate_range", LOOK_BACK, 60.0, "watcher/defaults.py (1m)",
                max(at(60.0), 3 * FASTEST_POLL)),
        Setting("Ballast watcher", "profile_window", LOOK_BACK, watcher_defaults.PROFILE_WINDOW,
                "watcher/defaults.py", at(watcher_defaults.PROFILE_WINDOW)),
        Setting("Ballast watcher", "pod_history_half_life", LOOK_BACK,
                watcher_defaults.POD_HISTORY_HALF_LIFE, "watcher/defaults.py",
                at(watcher_defaults.POD_HISTORY_HALF_LIFE)),
        Setting("Ballast watcher", "peak_bucket_seconds x 24, a pod's max", LOOK_BACK,
                POD_PEAK_BUCKETS * watcher_defaults.PEAK_BUCKET_SECONDS, "watcher/defaults.py",
                POD_PEAK_BUCKETS * bucket),
        Setting("Ballast watcher", "peak_bucket_seconds x 72, a node's max", LOOK_BACK,
                NODE_PEAK_BUCKETS * watcher_defaults.PEAK_BUCKET_SECONDS, "watcher/defaults.py",
                NODE_PEAK_BUCKETS * bucket),
        Setting("Ballast scheduler", "--watcher-interval", PACE, _RUNTIME.watcher_interval,
                "scheduler/runtime.py", at(_RUNTIME.watcher_interval, FASTEST_POLL)),
        Setting("Ballast scheduler", "--provider-lag", LOOK_BACK, _RUNTIME.provider_lag,
                "scheduler/runtime.py", at(_RUNTIME.provider_lag)),
        Setting("Ballast scheduler", "--recent-max-age", LOOK_BACK, _RUNTIME.recent_max_age,
                "scheduler/runtime.py", at(_RUNTIME.recent_max_age)),
        Setting("Ballast scheduler", "--pod-usage-interval", PACE, POD_USAGE_INTERVAL,
                "scheduler/runtime.py (6 watcher fetches)", at(POD_USAGE_INTERVAL, FASTEST_POLL)),
        Setting("Ballast scheduler", "--pod-usage-max-age", LOOK_BACK, _RUNTIME.pod_usage_max_age,
                "scheduler/runtime.py", at(_RUNTIME.pod_usage_max_age)),
        Setting("Ballast rebalancer", "interval", PACE, _REBALANCER.interval,
                "scheduler/rebalancer/settings.py", at(ROUNDS, FASTEST_POLL)),
        Setting("Ballast rebalancer", "--watcher-interval", PACE, REBALANCER_FETCH,
                "scheduler/rebalancer/runtime.py", at(REBALANCER_FETCH, FASTEST_POLL)),
        # How long an evicted node rests past its window's share, how long after a victim's
        # going a sample counts as post-move, and a bound pod's lag: the scheduler's, scaled alike.
        Setting("Ballast rebalancer", "--provider-lag", LOOK_BACK, REBALANCER_LAG,
                "scheduler/rebalancer/runtime.py", at(REBALANCER_LAG)),
        # How long the judge counts a pod the scheduler bound lately, and a move's bound
        # replacement, at most: the scheduler's, scaled alike (a wall 300 s before issue 46).
        Setting("Ballast rebalancer", "--recent-max-age", LOOK_BACK, REBALANCER_MAX_AGE,
                "scheduler/rebalancer/runtime.py", at(REBALANCER_MAX_AGE)),
        Setting("Ballast rebalancer", EVICTION_RATE, PACE, EVICTION_GAP,
                "scheduler/rebalancer/settings.py", at(EVICTION_GAP)),
        Setting("Koordinator (koordlet)", "reportIntervalSeconds", PACE, KOORDLET_REPORT,
                "koordlet default", report),
        Setting("Koordinator (koordlet)", "aggregateDurationSeconds", LOOK_BACK, KOORDLET_MEAN,
                "koordlet default", at(KOORDLET_MEAN)),
        *(
            Setting("Koordinator (koordlet)", f"aggregated over {d / 60:g} min", LOOK_BACK, d,
                    "koordlet default", at(d))
            for d in KOORDLET_DURATIONS
        ),
        # Floored at one report and 4 s more: a write a busy machine delays must not expire a
        # node (5 reports in the trace).
        Setting("Koordinator LoadAware", "nodeMetricExpirationSeconds", LOOK_BACK,
                LOAD_AWARE_EXPIRATION, "LoadAwareSchedulingArgs default",
                at(LOAD_AWARE_EXPIRATION, report + 4 * FASTEST_POLL)),
        # Deployed by Koordinator's own configuration at 10 s, Ballast's rounds.
        Setting("koord-descheduler", "deschedulingInterval", PACE, ROUNDS,
                "Koordinator's descheduler-config.yaml", at(ROUNDS, FASTEST_POLL)),
        Setting("koord-descheduler", "anomalyCondition.timeout", LOOK_BACK, KOORD_ANOMALY_TIMEOUT,
                "LowNodeLoadArgs default", at(KOORD_ANOMALY_TIMEOUT, FASTEST_POLL)),
        Setting("koord-descheduler", "detectorCacheTimeout", LOOK_BACK, KOORD_DETECTOR_CACHE,
                "LowNodeLoadArgs default", at(KOORD_DETECTOR_CACHE)),
        # Floored at three requeues: a job sees its pod gone one requeue after evicting it, and
        # must before it times out, with room for a busy machine (0.8 steps off in the trace).
        Setting(MIGRATION, "defaultJobTTL", LOOK_BACK, MIGRATION_TTL,
                "MigrationControllerArgs default", at(MIGRATION_TTL, 3 * MIGRATION_REQUEUE)),
        Setting(MIGRATION, "objectLimiters.workload.duration", LOOK_BACK, MIGRATION_LIMITER,
                "MigrationControllerArgs default", at(MIGRATION_LIMITER)),
        # Faster than deployed only adds work: both stay at it, well within a step.
        Setting(MIGRATION, "arbitrationArgs.interval", PACE, MIGRATION_ARBITRATION,
                "MigrationControllerArgs default", MIGRATION_ARBITRATION),
        Setting(MIGRATION, "evictQPS 10: the gap between evictions", PACE, MIGRATION_EVICT_GAP,
                "Koordinator's descheduler-config.yaml", MIGRATION_EVICT_GAP),
        Setting(MIGRATION, "requeue of a job evicting", PACE, MIGRATION_REQUEUE,
                "controllers/migration defaultRequeueAfter", MIGRATION_REQUEUE,
                fixed="a constant of the MigrationController"),
        # Its Helm chart runs it every 2 minutes (a CronJob) or 5 (a Deployment); here as
        # often as Ballast's rounds, so the rebalancers' rounds pair.
        Setting("descheduler", "--descheduling-interval", PACE, ROUNDS, "as Ballast's rounds",
                at(ROUNDS, FASTEST_POLL)),
        Setting("simulated pods", "ramp to their use after start", PACE, 0.0,
                "a container's start", ramp),
        Setting("Trimaran", "watcher fetch", PACE, 30.0, "scheduler-plugins collector", 30.0,
                fixed="a constant of scheduler-plugins' Trimaran collector"),
        Setting("Trimaran", "recently bound pods", LOOK_BACK, 60.0, "scheduler-plugins", 60.0,
                fixed="a constant of scheduler-plugins' Trimaran"),
        # Hard-coded in its queries; RangeProxy (sandbox/peers/loadwatcher/serve.py) scales them.
        Setting("load-watcher", "window (through RangeProxy)", LOOK_BACK, 900.0,
                "load-watcher v0.2.4", at(900.0)),
        Setting("load-watcher", "fetch", PACE, 60.0, "load-watcher v0.2.4", 60.0,
                fixed="load-watcher sleeps a hard-coded minute between fetches"),
    )  # fmt: skip
    return tuple(replace(s, speed=speed) for s in rows)


SETTINGS = settings()

# The synthetic scenarios of both benchmarks run in wall time, every contender compressed alike:
# Ballast's watcher window, 300 s deployed, is 60 s there, so every look-back and pace is its
# deployed value over SYNTHETIC_SPEED (docs/benchmarks.md's table is synthetic_table()). Their
# pods' ramp is the scenarios' own (50 s deployed: a container reaching its use within a minute);
# the settle times are built on it.
SYNTHETIC_SPEED = 5.0  # deployed seconds per wall second in the synthetic scenarios
SYNTHETIC_RAMP = 10.0
# What the synthetic scenarios leave at a value other than deployed/SYNTHETIC_SPEED, and why.
SYNTHETIC_UNSCALED = {
    ("Prometheus", "scrape interval"): "the sandbox's Prometheus scrapes (and evaluates "
    "load-watcher's rules) every second in every scenario (sandbox/demo/stack.py): irate reads "
    "1 s rates where 5x would read 6 s ones",
    ("simulated pods", "ramp to their use after start"): "the scenarios' own: 50 s deployed, "
    "their settle times are built on it",
}
SYNTHETIC_SETTINGS = tuple(
    replace(s, fixed=SYNTHETIC_UNSCALED.get((s.contender, s.name), s.fixed))
    for s in settings(SYNTHETIC_SPEED, SYNTHETIC_RAMP)
)


@dataclass(frozen=True)
class Timing:
    """What a benchmark run sets from these settings: the watcher's environment, the NodeMetric
    writer, the scheduler's and rebalancers' flags and LoadAwareScheduling's arguments."""

    watcher_env: dict[str, str]
    node_metrics: NodeMetricConfig
    scheduler_flags: tuple[str, ...] = ()
    load_aware_args: dict[str, Any] = field(default_factory=dict)
    rounds: float | None = None  # every rebalancer's round period; None: the benchmark's own
    load_watcher_speed: float | None = None  # RangeProxy's factor; None: load-watcher as built
    anomaly_timeout: float | None = None  # koord-descheduler's; None: the benchmark's own
    detector_cache: float | None = None  # koord-descheduler's detectorCacheTimeout; None: its own
    # The MigrationController's job TTL and workload limiter; None: its defaults.
    migration_ttl: float | None = None
    migration_limiter: float | None = None
    rebalancer_flags: tuple[str, ...] = ()  # Ballast rebalancers' command line
    # Ballast rebalancers' evictionsPerMinute, in wall minutes; None: the chart's.
    evictions_per_minute: float | None = None
    speed: float | None = None  # real seconds a wall second; None: not scaled

    def record(self) -> dict[str, Any]:
        """For a result's setup: what the contenders ran with."""
        return {
            "speed": self.speed,
            "watcher": self.watcher_env,
            "node_metrics": asdict(self.node_metrics),
            "scheduler_flags": list(self.scheduler_flags),
            "rebalancer_flags": list(self.rebalancer_flags),
            "evictions_per_minute": self.evictions_per_minute,
            "load_aware_args": self.load_aware_args,
            "rounds": self.rounds,
            "load_watcher_speed": self.load_watcher_speed,
            "anomaly_timeout": self.anomaly_timeout,
            "detector_cache": self.detector_cache,
            "migration_ttl": self.migration_ttl,
            "migration_limiter": self.migration_limiter,
        }


def timing(rows: tuple[Setting, ...] = SETTINGS) -> Timing:
    """Every contender at its deployed defaults, scaled as `rows` say."""
    speed = rows[0].speed
    rebalancer = [
        f"--{name.lstrip('-')}={setting('Ballast rebalancer', name, rows).wall:g}"
        for name in ("--watcher-interval", "--provider-lag", "--recent-max-age")
    ]
    gap = setting("Ballast rebalancer", EVICTION_RATE, rows).wall  # the chart's file's key
    return Timing(
        watcher_env(rows),
        node_metrics(rows),
        tuple(scheduler_flags(rows)),
        load_aware_args(rows),
        rounds=setting("Ballast rebalancer", "interval", rows).wall,
        load_watcher_speed=speed,
        anomaly_timeout=setting("koord-descheduler", "anomalyCondition.timeout", rows).wall,
        detector_cache=setting("koord-descheduler", "detectorCacheTimeout", rows).wall,
        migration_ttl=setting(MIGRATION, "defaultJobTTL", rows).wall,
        migration_limiter=setting(MIGRATION, "objectLimiters.workload.duration", rows).wall,
        rebalancer_flags=tuple(rebalancer),
        evictions_per_minute=round(60.0 / gap, 3),
        speed=speed,
    )


def trace_timing() -> Timing:
    """Every contender of a trace scenario at its deployed defaults, scaled to trace time."""
    return timing(SETTINGS)


def synthetic_timing() -> Timing:
    """Every contender of a synthetic scenario at its deployed defaults over SYNTHETIC_SPEED."""
    return timing(SYNTHETIC_SETTINGS)


def setting(contender: str, name: str, rows: tuple[Setting, ...] = SETTINGS) -> Setting:
    for s in rows:
        if (s.contender, s.name) == (contender, name):
            return s
    raise KeyError(f"no setting {name!r} of {contender!r}")


def watcher_env(rows: tuple[Setting, ...] = SETTINGS) -> dict[str, str]:
    """Ballast's watcher: its deployed defaults, scaled."""

    def wall(name: str) -> str:
        return f"{setting('Ballast watcher', name, rows).wall:g}"

    pod_max = setting("Ballast watcher", "peak_bucket_seconds x 24, a pod's max", rows).wall

    return {
        "BALLAST_POLL_INTERVAL": wall("poll_interval"),
        "BALLAST_POLL_JITTER": "0",
        "BALLAST_WINDOW": wall("window"),
        "BALLAST_RATE_RANGE": f"{wall('rate_range')}s",
        "BALLAST_PROFILE_WINDOW": wall("profile_window"),
        "BALLAST_POD_HISTORY_HALF_LIFE": wall("pod_history_half_life"),
        "BALLAST_PEAK_BUCKET_SECONDS": f"{pod_max / POD_PEAK_BUCKETS:g}",
    }


def record(rows: tuple[Setting, ...] = SETTINGS) -> list[dict[str, Any]]:
    """Every setting for a result's setup: deployed, wall and trace seconds, steps off."""
    return [
        {"contender": s.contender, "setting": s.name, "kind": s.kind, "deployed": s.deployed,
         "wall": s.wall, "trace": round(s.trace, 3), "steps_off": round(s.steps_off, 2),
         **({"fixed": s.fixed} if s.fixed else {})}
        for s in rows
    ]  # fmt: skip


def synthetic_record() -> dict[str, Any]:
    """For a synthetic scenario's setup: the compression and every setting, deployed, the
    wall value it ran with and deployed/SYNTHETIC_SPEED."""
    return {
        "speed": SYNTHETIC_SPEED,
        "settings": [
            {"contender": s.contender, "setting": s.name, "kind": s.kind,
             "deployed": s.deployed, "wall": s.wall, "scaled": round(s.deployed / s.speed, 3),
             **({"fixed": s.fixed} if s.fixed else {})}
            for s in SYNTHETIC_SETTINGS
        ],
    }  # fmt: skip


def _seconds(value: float) -> str:
    if value >= 3600 and value % 3600 == 0:
        return f"{value / 3600:g} h"
    if value >= 60:
        return f"{value / 60:g} min"
    return f"{value:g} s"


def _table(
    intro: str, columns: tuple[str, str], rows: list[tuple[Setting, float, float, str]]
) -> str:
    """A markdown table of settings: deployed, two columns of seconds, how far off."""
    lines = [
        intro,
        "",
        f"| contender | setting | deployed | {columns[0]} | {columns[1]} | off by |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s, first, second, off in rows:
        if s.fixed:
            off += f"; fixed: {s.fixed}"
        lines.append(
            f"| {s.contender} | {s.name} ({s.kind}) | {_seconds(s.deployed)} | "
            f"{_seconds(first)} | {_seconds(second)} | {off} |"
        )
    return "\n".join(lines) + "\n"


def table() -> str:
    """docs/trace.md's table: every setting, deployed and here, in trace time."""
    return _table(
        f"Speed: one 5-minute trace step every {STEP_WALL:g} s of wall time ({SPEED:g}x).",
        ("here (wall)", "here (trace time)"),
        [(s, s.wall, s.trace, f"{s.steps_off:.1f} steps" if s.steps_off >= 0.05 else "-")
         for s in SETTINGS],
    )  # fmt: skip


def synthetic_poll() -> float:
    """The synthetic scenarios' tolerance: one poll of Ballast's watcher, in wall seconds."""
    return setting("Ballast watcher", "poll_interval", SYNTHETIC_SETTINGS).wall


def synthetic_table() -> str:
    """docs/benchmarks.md's table: every setting, deployed, over SYNTHETIC_SPEED and as run."""
    return _table(
        f"Compression: {SYNTHETIC_SPEED:g}x (Ballast's watcher window, "
        f"{_seconds(watcher_defaults.WINDOW)} deployed, is "
        f"{_seconds(watcher_defaults.WINDOW / SYNTHETIC_SPEED)} here); a setting is off when "
        f"it leaves deployed / {SYNTHETIC_SPEED:g} by more than one watcher poll "
        f"({synthetic_poll():g} s).",
        (f"deployed / {SYNTHETIC_SPEED:g}", "here (wall)"),
        [(s, round(s.deployed / s.speed, 3), s.wall, f"{s.wall_off:g} s" if s.wall_off >= 0.05
          else "-") for s in SYNTHETIC_SETTINGS],
    )  # fmt: skip


def scheduler_flags(rows: tuple[Setting, ...] = SETTINGS) -> list[str]:
    """Ballast's scheduler's runtime settings, scaled."""
    return [
        f"--{name.lstrip('-')}={setting('Ballast scheduler', name, rows).wall:g}"
        for name in (
            "--watcher-interval",
            "--provider-lag",
            "--recent-max-age",
            "--pod-usage-interval",
            "--pod-usage-max-age",
        )
    ]


def node_metrics(rows: tuple[Setting, ...] = SETTINGS) -> NodeMetricConfig:
    """The NodeMetric writer as koordlet's defaults, scaled."""
    koordlet = "Koordinator (koordlet)"
    return NodeMetricConfig(
        report_seconds=setting(koordlet, "reportIntervalSeconds", rows).wall,
        aggregate_seconds=setting(koordlet, "aggregateDurationSeconds", rows).wall,
        durations=tuple(setting(koordlet, f"aggregated over {d / 60:g} min", rows).wall
                        for d in KOORDLET_DURATIONS),
        warm_start=True,  # a koordlet that has run long before the window
    )  # fmt: skip


def load_aware_args(rows: tuple[Setting, ...] = SETTINGS) -> dict[str, int]:
    """LoadAwareScheduling's arguments that look back, scaled (the rest stay its defaults;
    an int64 of seconds in its Go types)."""
    wall = setting("Koordinator LoadAware", "nodeMetricExpirationSeconds", rows).wall
    return {"nodeMetricExpirationSeconds": round(wall)}


def effective(timing: Timing, step_wall: float) -> list[Setting]:
    """The settings a benchmark run actually has, read back from its Timing, at a replay of one
    trace step every `step_wall` seconds: what the test holds to one step of deployed."""
    return effective_at(timing, STEP_SECONDS / step_wall)


def effective_at(timing: Timing, speed: float) -> list[Setting]:
    """The settings a run actually has, read back from its Timing, at `speed` real seconds a
    wall second (the trace's, or SYNTHETIC_SPEED)."""
    env, flags = timing.watcher_env, dict(f.lstrip("-").split("=") for f in timing.scheduler_flags)
    rebalancer = dict(f.lstrip("-").split("=") for f in timing.rebalancer_flags)
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
        ("Ballast rebalancer", "--watcher-interval"): float(
            rebalancer.get("watcher-interval", REBALANCER_FETCH)
        ),
        ("Ballast rebalancer", "--provider-lag"): float(
            rebalancer.get("provider-lag", REBALANCER_LAG)
        ),
        ("Ballast rebalancer", "--recent-max-age"): float(
            rebalancer.get("recent-max-age", REBALANCER_MAX_AGE)
        ),
        ("Ballast rebalancer", EVICTION_RATE): (
            60.0 / (timing.evictions_per_minute or EVICTIONS_PER_MINUTE)
        ),
        ("Koordinator (koordlet)", "reportIntervalSeconds"): nm.report_seconds,
        ("Koordinator (koordlet)", "aggregateDurationSeconds"): nm.aggregate_seconds,
        ("Koordinator LoadAware", "nodeMetricExpirationSeconds"): float(
            timing.load_aware_args.get("nodeMetricExpirationSeconds", LOAD_AWARE_EXPIRATION)
        ),
        ("load-watcher", "window (through RangeProxy)"): 900.0 / (timing.load_watcher_speed or 1),
    }
    bucket = float(env.get("BALLAST_PEAK_BUCKET_SECONDS", watcher_defaults.PEAK_BUCKET_SECONDS))
    for buckets, whose in ((POD_PEAK_BUCKETS, "a pod's"), (NODE_PEAK_BUCKETS, "a node's")):
        walls[("Ballast watcher", f"peak_bucket_seconds x {buckets}, {whose} max")] = (
            buckets * bucket
        )
    walls[("Ballast watcher", "pod_history_half_life")] = float(
        env.get("BALLAST_POD_HISTORY_HALF_LIFE", watcher_defaults.POD_HISTORY_HALF_LIFE)
    )
    # Durations the writer leaves out are missing from its NodeMetrics: read as unset.
    for d, wall in zip(KOORDLET_DURATIONS, nm.durations, strict=False):
        walls[("Koordinator (koordlet)", f"aggregated over {d / 60:g} min")] = wall
    if timing.rounds is not None:
        for key in (("Ballast rebalancer", "interval"),
                    ("koord-descheduler", "deschedulingInterval"),
                    ("descheduler", "--descheduling-interval")):  # fmt: skip
            walls[key] = timing.rounds
    walls[("koord-descheduler", "anomalyCondition.timeout")] = (
        timing.anomaly_timeout or KOORD_ANOMALY_TIMEOUT
    )
    walls[("koord-descheduler", "detectorCacheTimeout")] = (
        timing.detector_cache or KOORD_DETECTOR_CACHE
    )
    walls[(MIGRATION, "defaultJobTTL")] = timing.migration_ttl or MIGRATION_TTL
    walls[(MIGRATION, "objectLimiters.workload.duration")] = (
        timing.migration_limiter or MIGRATION_LIMITER
    )
    return [replace(setting(*key), wall=wall, speed=speed) for key, wall in walls.items()]


def _go_seconds(text: str) -> float:
    """ "3s", "1m", "500ms" in seconds."""
    for unit, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * scale
    raise ValueError(f"not a duration: {text!r}")
