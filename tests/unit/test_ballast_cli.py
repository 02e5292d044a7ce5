"""`ballast`'s command table: a package left out of an install drops its commands, nothing else."""

from __future__ import annotations

import sys

import pytest

from ballast import cli


def test_a_package_missing_from_the_install_drops_its_command(monkeypatch):
    # The image installs no `sandbox` package: `ballast --help` must still list the rest.
    monkeypatch.setattr(cli, "COMMANDS", {"ghost": "ghost_pkg.cli", "top": "watcher.top"})
    choices = cli.build_parser([]).format_help()
    assert "top" in choices and "ghost" not in choices


def test_a_dependency_missing_inside_a_command_is_an_error(monkeypatch, tmp_path):
    # A command whose module is there but imports something absent is broken, not optional.
    (tmp_path / "half_pkg").mkdir()
    (tmp_path / "half_pkg" / "__init__.py").write_text("")
    (tmp_path / "half_pkg" / "cli.py").write_text("import not_installed_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "COMMANDS", {"half": "half_pkg.cli"})
    with pytest.raises(ModuleNotFoundError, match="not_installed_anywhere"):
        cli.build_parser([])
    sys.modules.pop("half_pkg", None)
