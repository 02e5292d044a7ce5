"""`ballast rebalancer`'s --provider-lag: the scheduler's flag, reaching the runtime, bad values
refused before anything starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ballast import cli
from scheduler.backend.recent import PROVIDER_LAG
from scheduler.rebalancer import cli as rebalancer_cli


def parse(*extra: str):
    argv = ["rebalancer", "--config", "/nonexistent.yaml", *extra]
    return cli.build_parser(argv).parse_args(argv)


def test_the_lag_reaches_the_runtime():
    assert rebalancer_cli.options(parse("--provider-lag", "3")).provider_lag == 3.0
    # Unset: the scheduler's default, 15 s.
    assert rebalancer_cli.options(parse()).provider_lag == PROVIDER_LAG == 15.0


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
