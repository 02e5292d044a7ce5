"""`ballast rebalancer`'s seconds: --provider-lag and --recent-max-age (the scheduler's flags,
reaching the runtime), --watcher-interval and the config's `interval`, values that cannot work
refused before anything starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ballast import cli
from scheduler.backend.recent import MAX_AGE, PROVIDER_LAG
from scheduler.framework.errors import ConfigError
from scheduler.rebalancer import cli as rebalancer_cli
from scheduler.rebalancer import settings


def parse(*extra: str):
    argv = ["rebalancer", "--config", "/nonexistent.yaml", *extra]
    return cli.build_parser(argv).parse_args(argv)


def test_the_lag_reaches_the_runtime():
    assert rebalancer_cli.options(parse("--provider-lag", "3")).provider_lag == 3.0
    # Unset: the scheduler's default, 15 s.
    assert rebalancer_cli.options(parse()).provider_lag == PROVIDER_LAG == 15.0


def test_the_recent_max_age_reaches_the_runtime():
    assert rebalancer_cli.options(parse("--recent-max-age", "5")).recent_max_age == 5.0
    # Unset: the scheduler's default, 300 s.
    assert rebalancer_cli.options(parse()).recent_max_age == MAX_AGE == 300.0


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_a_recent_max_age_that_cannot_work_is_refused(value):
    # 0 or less: a bound pod never counts; NaN or infinity: until a sample shows it, if ever.
    refused = rebalancer_cli.refusal(parse(f"--recent-max-age={value}"))
    assert refused == f"--recent-max-age: seconds > 0, not {float(value):g}"


def run(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ballast.cli", "rebalancer", "--config", "/nonexistent.yaml",
         *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_a_bad_lag_is_refused_naming_the_flag(value):
    result = run(f"--provider-lag={value}")
    assert result.returncode == 2
    assert "--provider-lag: seconds >= 0" in result.stderr
    assert "bad config" not in result.stderr  # refused before the config is read


def test_a_lag_that_is_no_number_is_refused():
    result = run("--provider-lag=15s")
    assert result.returncode == 2
    assert "--provider-lag: invalid float value: '15s'" in result.stderr


def test_help_names_the_flag_and_its_default():
    text = " ".join(run("--help").stdout.split())
    assert "--provider-lag PROVIDER_LAG seconds a sample takes to reach the watcher" in text
    assert "(default 15.0)" in text


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_a_watcher_interval_that_cannot_work_is_refused(value):
    # 0, less or NaN: the metrics client's wait returns at once, a busy loop on the watcher;
    # infinity: its wait raises in the fetching thread.
    refused = rebalancer_cli.refusal(parse(f"--watcher-interval={value}"))
    assert refused == f"--watcher-interval: seconds > 0, not {float(value):g}"


def test_the_defaults_a_zero_lag_and_a_short_interval_are_accepted():
    assert rebalancer_cli.refusal(parse()) == ""
    assert rebalancer_cli.refusal(parse("--provider-lag=0", "--watcher-interval=0.5")) == ""


def test_a_zero_watcher_interval_stops_the_start_naming_the_flag():
    result = run("--watcher-interval=0")
    assert result.returncode == 2
    assert "ballast rebalancer: --watcher-interval: seconds > 0, not 0" in result.stderr
    assert "bad config" not in result.stderr  # refused before the config is read


@pytest.mark.parametrize(
    ("interval", "why"),
    [
        (0, "must be a positive number of seconds, got 0"),
        ("0s", "must be a positive number of seconds, got 0"),
        (-1, "must be a positive number of seconds, got -1"),
        (float("nan"), "must be a positive number of seconds, got nan"),
        (float("inf"), "must be a positive number of seconds, got inf"),
        ("-1s", "expected a duration like 15s"),
    ],
)
def test_a_round_interval_that_cannot_work_is_refused(interval, why):
    with pytest.raises(ConfigError, match=f"rebalancer.interval: {why}"):
        settings.parse_section({"interval": interval})


def test_the_runtime_hands_its_seconds_to_the_judge_and_the_replacements():
    # The flags reach Options (above); this checks Options reaches each part that keeps the
    # scheduler's rule for a bound pod: the judge's model of it and our own moves' bookings.
    from tests.unit.test_rebalancer_safety import offline_rebalancer

    opts = rebalancer_cli.options(parse("--provider-lag", "0.25", "--recent-max-age", "5"))
    reb = offline_rebalancer(opts)
    booked = reb.memory.replacements.bound
    assert (booked.provider_lag, booked.max_age) == (0.25, 5.0)
    assert (reb.rounds.judge.provider_lag, reb.rounds.judge.recent_max_age) == (0.25, 5.0)
    assert reb.memory.cooldowns.lag == reb.actor.provider_lag == 0.25
