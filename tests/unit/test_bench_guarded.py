"""Every benchmark command runs under the run guard (bench/harness/runguard.py, issue 44 item 6).

A command is any module under bench/ with a `main`; each one that runs something must offer
`--allow-dirty` and stop, before it measures anything, when the guard refuses (a dirty tree or
another benchmark on the machine). The few that only read earlier results are named below with
why, and may not write a result of their own. A new benchmark without the guard fails here.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import io
from pathlib import Path

import pytest

from bench.harness import runguard

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Commands that run nothing: they read results already written (and stamped by a guarded run).
READ_ONLY = {
    "bench.harness.headline": "writes the README's headline from result files",
    "bench.placement.choice": "applies docs/placement.md's rule to a result file",
    "bench.placement.floor": "reads a result's trace windows against the trace, offline",
    "bench.placement.online": "replays a result's trace windows with policies, offline",
    "bench.placement.why": "reads a result's decision records again, offline",
    "bench.rebalance.defaults": "applies the defaults rule to result files",
    "bench.scheduler.preemption_plot": "draws result files",
    "bench.watcher.plot": "draws result files",
}
# Arguments a command needs before it gets as far as the guard.
REQUIRED = {"bench.scheduler.inprocess": ["topology"]}


def _module(path: Path) -> str:
    parts = path.relative_to(BENCH.parent).with_suffix("").parts
    return ".".join(parts)


@functools.cache
def commands() -> dict[str, ast.FunctionDef]:
    """Module name -> its `main`, for every module of bench/ that has one."""
    found = {}
    for path in sorted(BENCH.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "main":
                found[_module(path)] = node
    return found


def _calls(func: ast.FunctionDef) -> set[str]:
    """Dotted names of everything `func` calls (runguard.start_run, write_result, ...)."""
    names = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            target = node.func
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                names.add(f"{target.value.id}.{target.attr}")
            elif isinstance(target, ast.Name):
                names.add(target.id)
    return names


GUARDED = sorted(set(commands()) - set(READ_ONLY))


def test_the_scan_finds_the_benchmarks():
    found = set(commands())
    assert {"bench.placement.__main__", "bench.scheduler.run", "bench.peaks.__main__"} <= found
    assert set(READ_ONLY) <= found, "a read-only command named here no longer exists"
    assert len(GUARDED) >= 14


@pytest.mark.parametrize("name", sorted(READ_ONLY))
def test_read_only_commands_write_no_result(name):
    calls = _calls(commands()[name])
    assert not {"write_result", "provenance.write_result"} & calls, name


@pytest.mark.parametrize("name", GUARDED)
def test_every_benchmark_takes_allow_dirty_and_calls_the_guard(name, capsys):
    assert "runguard.start_run" in _calls(commands()[name]), name
    module = importlib.import_module(name)
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0
    assert "--allow-dirty" in capsys.readouterr().out


@pytest.mark.parametrize("name", GUARDED)
def test_a_refused_run_stops_before_it_measures(name, monkeypatch):
    """The guard refusing (here: as on a dirty tree) ends the command with exit 2 and its
    reason; nothing started, no result written."""

    def refuse(*args, **kwargs):
        raise runguard.DirtyTree("the tree has uncommitted changes (test)")

    monkeypatch.setattr(runguard, "begin", refuse)
    module = importlib.import_module(name)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as done:
        module.main(REQUIRED.get(name, []))
    assert done.value.code == 2
    assert "uncommitted changes (test)" in err.getvalue()
