"""The README's headline says what the results say, number for number and word for word.

Results with an A/A pair (issue 44's runs on) need the README's block (bench/harness/headline.py,
`make bench-headline`): every cell's mean and worst window, the A/A spread and every "ahead",
"tie" or "behind" are checked against the results, the words by the rule as it is now. Results
written before that (no verdicts) may have no block; then the placement table the README has
carried since is checked against them as before, median for median.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from bench.harness import headline

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


@pytest.mark.parametrize("family", sorted(headline.FILES))
def test_the_headline_block_matches_the_results(family):
    text = README.read_text()
    try:
        loaded = headline.load(family)
    except headline.NoHeadline as exc:
        assert headline.parse(text, family) is None, (
            f"README.md shows a headline:{family} block, but {exc}"
        )
        return
    shown = headline.parse(text, family)
    # The table may lead with another contender than the results' default (`--lead`, once a
    # rule written before the run picks it): the words are then that contender's.
    lead = headline.lead_of(shown)
    ran = {c for r in loaded["runs"] for c in r["contenders"]} - {loaded["twin"]}
    built = headline.table(
        family, loaded["runs"], loaded["ours"], loaded["twin"], lead if lead in ran else None
    )
    wrong = headline.mismatches(shown, built, family)
    assert not wrong, "README.md's headline against bench/results:\n" + "\n".join(wrong)


# -- the table from before the A/A pair ---------------------------------------------------------
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


def legacy_table() -> dict[str, list[float]]:
    table = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in ROWS:
            table[cells[0]] = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", " ".join(cells[1:]))]
    return table


def test_every_contender_has_its_row_with_the_benchmarks_medians():
    doc = json.loads((ROOT / "bench/results/placement.json").read_text())
    if doc.get("verdicts"):
        return  # the headline block above is the check now; the old table may go
    summary = doc["summary"]
    table = legacy_table()
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
