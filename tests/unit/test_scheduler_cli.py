"""`ballast scheduler` refuses a wrong config at start, naming the field."""

from __future__ import annotations

import subprocess
import sys


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
