"""`ballast scheduler` refuses a wrong config, and flags' seconds that cannot work, at start,
naming the field or the flag."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scheduler import cli as scheduler_cli


def run(tmp_path, config: str, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "scheduler.yaml"
    path.write_text(config)
    return subprocess.run(
        [sys.executable, "-m", "ballast.cli", "scheduler", "--config", str(path), *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bad_plugin_arg_is_refused_naming_the_field(tmp_path):
    config = """
profiles:
- schedulerName: ballast
  pluginConfig:
  - name: TargetLoadPacking
    args: {targetUtilization: 140}
"""
    result = run(tmp_path, config, "--kubeconfig", str(tmp_path / "none"))
    assert result.returncode == 2
    assert "profiles[0].pluginConfig[0].args.targetUtilization" in result.stderr


def test_unknown_top_level_key_is_refused(tmp_path):
    result = run(tmp_path, "watcherAdress: http://x:2020\n", "--kubeconfig", "/nonexistent")
    assert result.returncode == 2
    assert "watcherAdress: unknown field" in result.stderr


def test_missing_kubeconfig_is_a_clear_error(tmp_path):
    result = run(tmp_path, "{}\n", "--kubeconfig", str(tmp_path / "missing-kubeconfig"))
    assert result.returncode == 2
    assert "no cluster access" in result.stderr


# -- seconds that cannot work, refused at start before the config is read ----------------------
def parse(*extra: str):
    from ballast import cli

    argv = ["scheduler", "--config", "/nonexistent.yaml", *extra]
    return cli.build_parser(argv).parse_args(argv)


@pytest.mark.parametrize(
    ("flag", "value", "bound"),
    [
        # 0, less or NaN: the metrics client's wait returns at once, a busy loop on the watcher;
        # infinity: its wait raises in the fetching thread, long after start.
        ("--watcher-interval", "0", ">"),
        ("--watcher-interval", "-1", ">"),
        ("--watcher-interval", "nan", ">"),
        ("--watcher-interval", "inf", ">"),
        # NaN never ends a bound pod's count on a sample (a comparison with NaN is false).
        ("--provider-lag", "-1", ">="),
        ("--provider-lag", "nan", ">="),
        ("--provider-lag", "inf", ">="),
        # NaN or infinity: a bound pod counts on its node until a sample shows it, or forever.
        ("--recent-max-age", "0", ">"),
        ("--recent-max-age", "nan", ">"),
        ("--recent-max-age", "inf", ">"),
        ("--pod-usage-interval", "-1", ">="),
        ("--pod-usage-interval", "nan", ">="),
        ("--pod-usage-interval", "inf", ">="),
        ("--pod-usage-max-age", "0", ">"),
        ("--pod-usage-max-age", "nan", ">"),
        ("--pod-usage-max-age", "inf", ">"),
    ],
)
def test_seconds_that_cannot_work_are_refused_naming_the_flag(flag, value, bound):
    refused = scheduler_cli.refusal(parse(f"{flag}={value}"))
    assert refused == f"{flag}: seconds {bound} 0, not {float(value):g}"


def test_the_defaults_and_zeros_that_work_are_accepted():
    assert scheduler_cli.refusal(parse()) == ""
    zeros = ("--provider-lag=0", "--pod-usage-interval=0", "--watcher-interval=0.5")
    assert scheduler_cli.refusal(parse(*zeros)) == ""


def test_a_nan_watcher_interval_stops_the_start_before_the_config_is_read(tmp_path):
    result = run(tmp_path, "{}\n", "--watcher-interval=nan", "--recent-max-age=nan",
                 "--kubeconfig", str(tmp_path / "none"))  # fmt: skip
    assert result.returncode == 2
    assert ("ballast scheduler: --watcher-interval: seconds > 0, not nan; "
            "--recent-max-age: seconds > 0, not nan") in result.stderr  # fmt: skip
    assert "no cluster access" not in result.stderr
