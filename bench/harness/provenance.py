"""Where a benchmark result came from: the commit, the machine, the command and the peers.

Every benchmark stamps its result document with `stamp()` before writing it, and writes the
numbers with `write_result()` before it draws: a failing plot must never lose a run. A check in
`make test` (tests/unit/test_bench_provenance.py) reads the stamp back from every result file
the docs cite.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from pathlib import Path
from typing import Any

from bench.harness import runguard
from sandbox.cluster import versions

REPO = Path(__file__).resolve().parents[2]
RESULTS = "bench/results"  # relative to REPO
# The fields a stamp must carry; the check in `make test` asks for each of them.
FIELDS = ("commit", "dirty", "date", "machine", "command", "peers")


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peers() -> dict[str, str]:
    """The pinned versions of every upstream component a benchmark may run beside Ballast."""
    names = {
        "kubernetes": "KUBERNETES_VERSION",
        "etcd": "ETCD_VERSION",
        "kwok": "KWOK_VERSION",
        "scheduler-plugins": "SCHEDULER_PLUGINS_VERSION",
        "metrics-server": "METRICS_SERVER_VERSION",
        "descheduler": "DESCHEDULER_VERSION",
        "helm": "HELM_VERSION",
        "koordinator": "KOORDINATOR_VERSION",
        "victoriametrics": "VICTORIAMETRICS_VERSION",
        "thanos": "THANOS_VERSION",
    }
    return {
        peer: getattr(versions, attr) for peer, attr in names.items() if hasattr(versions, attr)
    }


def stamp(argv: list[str] | None = None) -> dict[str, Any]:
    """The provenance block of a result document: the commit and tree state when the run began
    (runguard.begin), else now; with a run, its lock, `--allow-dirty` and load average."""
    run = runguard.current()
    commit, dirty = (run.commit, run.dirty) if run is not None else runguard.tree_state(REPO)
    block = {
        "commit": commit,
        # A run on a dirty tree is not reproducible from its commit alone: say so.
        "dirty": dirty,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "memory_bytes": _memory_bytes(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "command": " ".join(argv if argv is not None else runguard.command_line()),
        "peers": peers(),
    }
    if run is not None:
        block["run"] = run.block()
    return block


def write_result(path: Path, doc: dict[str, Any], argv: list[str] | None = None) -> Path:
    """Writes doc with its provenance (under "provenance") as JSON; returns the path."""
    stamped = {"provenance": stamp(argv), **{k: v for k, v in doc.items() if k != "provenance"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stamped, indent=1) + "\n")
    return path


# A result written before stamps existed, kept because a doc cites it, carries a stamp recovered
# from git instead: the commit that added it and a note saying so, never a machine, command or
# time nobody recorded.
RECOVERED_FIELDS = ("recovered_from_git", "commit", "note")


def missing_fields(doc: dict[str, Any]) -> list[str]:
    """The provenance fields a result document lacks (empty when it says where it came from)."""
    block = doc.get("provenance")
    if not isinstance(block, dict):
        return list(FIELDS)
    fields = RECOVERED_FIELDS if block.get("recovered_from_git") else FIELDS
    return [f for f in fields if block.get(f) in (None, "", {})]
