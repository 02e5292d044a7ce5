"""`ballast demo` end to end, as `make demo` runs it: Deployments available through Ballast, the
PDB's status, the scale-up, the table, exit 0, nothing left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sandbox import demo_workload as workload


def running_from(state: Path) -> list[str]:
    """Command lines of live processes that mention the demo's state folder."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(state) in cmdline:
            found.append(cmdline)
    return found


def test_demo_places_the_workload_reports_and_cleans_up(tmp_path):
    state = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "ballast.cli", "demo", "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=280,
    )
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-2000:]
    assert "result: OK" in out
    table = out[out.index("NODE ") :].splitlines()
    for spec in workload.NODES:
        row = next(line for line in table if line.startswith(spec.name + " "))
        assert "fresh" in row, row
    placed = sum(int(line.split()[2]) for line in table[1 : 1 + len(workload.NODES)])
    assert placed == workload.total_pods() - 4  # 3 for the default scheduler, 1 fits nowhere
    for group in workload.GROUPS:
        if group.scheduler and group.name != workload.UNPLACEABLE:
            line = next(x for x in out.splitlines() if x.startswith(f"  {group.name} "))
            assert "available in" in line, line
    pdb, min_available = workload.PDB
    guarded = next(g for g in workload.GROUPS if g.name == pdb)
    allowed = guarded.replicas - min_available
    assert f"counts {guarded.replicas} healthy, allows {allowed} disruption(s)" in out
    name, extra = workload.SCALE_UP
    scaled = next(g for g in workload.GROUPS if g.name == name)
    assert f"scaled {name} from {scaled.replicas} to {scaled.replicas + extra}" in out
    scale = out[out.index(f"scaled {name} from") :].splitlines()[1 : 1 + len(workload.NODES)]
    assert sum(int(line.split()[-1]) for line in scale if "+" in line) == extra
    assert 'FailedScheduling "0/8 nodes are available' in out
    assert "Insufficient cpu" in out
    stopped = next(line for line in out.splitlines() if line.startswith("stopped: "))
    for name in ("scheduler", "watcher", "prometheus", "redis", "simulator", "etcd"):
        assert name in stopped
    assert running_from(state) == []
