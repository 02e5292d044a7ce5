"""The README's headline table is the placement benchmark's result file, row for row."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROWS = {
    "Ballast, TargetLoadPacking": "ballast-tlp",
    "Ballast, LoadVariationRiskBalancing": "ballast-lvrb",
    "Trimaran, TargetLoadPacking": "trimaran-tlp",
    "Trimaran, LoadVariationRiskBalancing": "trimaran-lvrb",
    "kube-scheduler": "kube-scheduler",
}


def headline() -> dict[str, list[float]]:
    table = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in ROWS:
            table[cells[0]] = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", " ".join(cells[1:]))]
    return table


def test_every_contender_has_its_row_with_the_benchmarks_medians():
    summary = json.loads((ROOT / "bench/results/placement.json").read_text())["summary"]
    table = headline()
    assert set(table) == set(ROWS), "a contender of bench/results/placement.json is missing"
    contenders = set(summary["steady"])
    assert set(ROWS.values()) >= contenders, contenders - set(ROWS.values())
    for row, key in ROWS.items():
        steady, burst = summary["steady"][key], summary["burst"][key]
        assert table[row] == [
            steady["max_cpu"]["median"],
            burst["max_cpu"]["median"],
            steady["nodes_over_100"]["median"],
            burst["nodes_over_100"]["median"],
        ], row
