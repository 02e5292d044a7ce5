"""Every benchmark target installs the `bench` extra before it runs.

A benchmark that imports matplotlib (or numpy's plotting helpers) at the end of a long run
must not lose that run to a missing package on a fresh clone, so each `bench-*` target (and
`chaos`, which benchmarks faults) lists `$(VENV)/.bench-installed` among its prerequisites.
"""

from __future__ import annotations

import re
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def rules(text: str) -> dict[str, list[str]]:
    """Target -> prerequisites, for plain `target: prereqs` lines (continuations joined)."""
    joined = text.replace("\\\n", " ")
    found: dict[str, list[str]] = {}
    for line in joined.splitlines():
        match = re.match(r"^([A-Za-z0-9_.$()/-]+):(?!=)\s*(.*)$", line)
        if match and not line.startswith("\t"):
            found[match.group(1)] = match.group(2).split()
    return found


def benchmark_targets(found: dict[str, list[str]]) -> list[str]:
    return sorted(t for t in found if t.startswith("bench-") or t == "chaos")


def test_rules_parser_reads_prerequisites() -> None:
    text = "a: b c\n\techo a\nbench-x: d \\\n  e\n"
    assert rules(text) == {"a": ["b", "c"], "bench-x": ["d", "e"]}


def test_every_benchmark_target_installs_the_bench_extra() -> None:
    found = rules(MAKEFILE.read_text())
    targets = benchmark_targets(found)
    assert "bench-placement" in targets and "bench-scheduler" in targets
    missing = [t for t in targets if "$(VENV)/.bench-installed" not in found[t]]
    assert not missing, f"benchmark targets without the bench extra: {missing}"
