"""The README's headline table is the placement benchmark's result file, row for row."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROWS = {
    "Ballast, LoadVariationRiskBalancing": "ballast-lvrb",
    "Ballast, TargetLoadPacking": "ballast-tlp",
    "Trimaran, TargetLoadPacking": "trimaran-tlp",
    "Trimaran, LoadVariationRiskBalancing": "trimaran-lvrb",
    "kube-scheduler": "kube-scheduler",
    "Koordinator, its defaults": "koordinator",
    "Koordinator, p95 of 60 s aggregates": "koordinator-agg",
}
# The columns: hottest node and nodes over 100 % per scenario, then the trace's node-seconds.
SCENARIOS = (
    "steady", "burst", "heterogeneous", "misleading", "learnable", "hot-nodes", "idle-scale-out"
)  # fmt: skip


def headline() -> dict[str, list[float]]:
    table = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in ROWS:
            table[cells[0]] = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", " ".join(cells[1:]))]
    return table


def test_every_contender_has_its_row_with_the_benchmarks_medians():
    doc = json.loads((ROOT / "bench/results/placement.json").read_text())
    summary = doc["summary"]
    table = headline()
    assert set(table) == set(ROWS), "a contender of bench/results/placement.json is missing"
    contenders = set(summary["steady"])
    assert set(ROWS.values()) >= contenders, contenders - set(ROWS.values())
    trace = [r for r in doc["runs"] if r["scenario"] == "trace"]
    for row, key in ROWS.items():
        expected = []
        for scenario in SCENARIOS:
            measures = summary[scenario][key]
            expected += [measures["max_cpu"]["median"], measures["nodes_over_100"]["median"]]
            if measures["pending"]["median"]:
                expected.append(measures["pending"]["median"])
        expected.append(
            statistics.median(r["contenders"][key]["node_seconds_over_100"] for r in trace)
        )
        pending = statistics.median(r["contenders"][key]["pending"] for r in trace)
        if pending:
            expected.append(pending)
        assert table[row] == expected, row
