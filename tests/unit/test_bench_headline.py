"""The README's headline from the results (bench/harness/headline.py): every cell the mean and
worst window, the verdict word the rule gives, the A/A spread beside them; read back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.harness import headline
from bench.harness.headline import Cell

OURS, TWIN = "ballast-lvrb", "ballast-lvrb-aa"


def _runs() -> list[dict]:
    """Six trace windows and six steady seeds. trace: `far` is higher than Ballast in every
    window by far more than the A/A spread (Ballast ahead), `near` within it (a tie), `low`
    lower everywhere (Ballast behind); `near` also left pods pending."""
    runs = []
    for seed in range(1, 7):
        ours = 50.0 + seed
        trace = {
            OURS: {"node_seconds_over_100": ours, "pending": 0},
            TWIN: {"node_seconds_over_100": ours + (1 if seed % 2 else -1), "pending": 0},
            "far": {"node_seconds_over_100": ours + 40, "pending": 0},
            "near": {"node_seconds_over_100": ours + 0.5, "pending": 3 if seed == 1 else 0},
            "low": {"node_seconds_over_100": ours - 30, "pending": 0},
        }
        steady = {c: {"max_cpu": 90.0 + seed / 5, "pending": 0} for c in (OURS, TWIN, "far")}
        runs.append({"scenario": "trace", "seed": seed, "contenders": trace})
        runs.append({"scenario": "steady", "seed": seed, "contenders": steady})
    return runs


def _results(tmp_path: Path, verdicts: bool = True) -> Path:
    doc = {"runs": _runs()}
    if verdicts:
        one = {"ours": OURS, "twin": TWIN, "measure": "max_cpu", "aa_spread": 0, "peers": {}}
        doc["verdicts"] = {"steady": {"max_cpu": one}}
    (tmp_path / "placement.json").write_text(json.dumps(doc))
    return tmp_path


def test_cells_carry_mean_worst_the_rules_word_and_pending():
    built = headline.table("placement", _runs(), OURS, TWIN)
    assert built["columns"] == [("trace", "node_seconds_over_100"), ("steady", "max_cpu")]
    rows = built["rows"]
    assert list(rows) == [OURS, f"A/A spread ({OURS}, {TWIN})", "far", "near", "low"]
    assert rows[OURS]["trace"] == Cell(53.5, 56.0, None)
    assert rows[f"A/A spread ({OURS}, {TWIN})"]["trace"] == Cell(1.0, None, None)
    assert rows["far"]["trace"] == Cell(93.5, 96.0, "ahead")
    assert rows["near"]["trace"] == Cell(54.0, 56.5, "tie", 0.5)
    assert rows["low"]["trace"] == Cell(23.5, 26.0, "behind")
    assert rows["far"]["steady"].word == "tie"  # equal everywhere
    assert "steady" not in rows["near"]  # not a contender there: "-" in the table


def test_the_block_reads_back_as_written_and_a_wrong_word_is_named(tmp_path: Path):
    text = headline.block("placement", _results(tmp_path))
    assert "| far | 93.5 (96), ahead | 90.7 (91.2), tie |" in text
    assert "| near | 54 (56.5), tie; 0.5 pending | - |" in text
    built = headline.table("placement", _runs(), OURS, TWIN)
    assert headline.mismatches(headline.parse(text, "placement"), built, "placement") == []
    claimed = text.replace("54 (56.5), tie", "54 (56.5), ahead")
    found = headline.mismatches(headline.parse(claimed, "placement"), built, "placement")
    assert found == [
        "near, trace (node_seconds_over_100): README says 'ahead', the rule says 'tie'"
    ]
    moved = text.replace("93.5 (96)", "93.5 (97)")
    assert len(headline.mismatches(headline.parse(moved, "placement"), built, "placement")) == 1
    assert headline.mismatches(None, built, "placement")[0].startswith("README.md has no")


def test_another_contender_can_lead_with_the_defaults_spread(tmp_path: Path):
    built = headline.table("placement", _runs(), OURS, TWIN, lead="far")
    assert list(built["rows"]) == ["far", f"A/A spread ({OURS}, {TWIN})", OURS, "near", "low"]
    assert built["rows"][f"A/A spread ({OURS}, {TWIN})"]["trace"] == Cell(1.0, None, None)
    assert built["rows"][OURS]["trace"].word == "behind"  # far is 40 higher everywhere
    text = headline.block("placement", _results(tmp_path), lead="far")
    assert headline.lead_of(headline.parse(text, "placement")) == "far"
    with pytest.raises(ValueError, match="no contender 'nobody'"):
        headline.table("placement", _runs(), OURS, TWIN, lead="nobody")
    assert headline.main(["--results", str(tmp_path), "--lead", "placement=far"]) == 0
    with pytest.raises(SystemExit):
        headline.main(["--results", str(tmp_path), "--lead", "far"])


def test_write_replaces_only_the_block(tmp_path: Path):
    results = _results(tmp_path)
    readme = tmp_path / "README.md"
    begin, end = headline.BEGIN.format("placement"), headline.END.format("placement")
    readme.write_text(f"before\n{begin} -->\nold table\n{end}\nafter\n")
    assert headline.parse(f"{begin} -->\n{end}\n", "placement") is None  # markers only
    assert headline.main(["--results", str(results), "--write", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("before\n<!-- headline:placement begin") and text.endswith(
        f"{end}\nafter\n"
    )
    assert "old table" not in text and "| far | 93.5 (96), ahead" in text
    with pytest.raises(ValueError, match="markers"):
        headline.replace_block("no markers", "placement", "x")


def test_results_without_an_aa_pair_have_no_headline(tmp_path: Path, capsys):
    with pytest.raises(headline.NoHeadline, match="no verdicts"):
        headline.load("placement", _results(tmp_path, verdicts=False))
    assert headline.main(["--results", str(tmp_path)]) == 2
    assert "no headline" in capsys.readouterr().err


def test_rebalancing_reads_the_files_with_verdicts_and_refuses_a_scenario_twice(tmp_path: Path):
    runs = [
        {"scenario": s, "seed": k, "contenders": {c: {"evictions": k, "node_seconds_over_100": k}
                                                  for c in ("ballast", "ballast-aa", "none")}}
        for s in ("stable", "trace") for k in range(1, 7)
    ]  # fmt: skip
    pair = {"stable": {"evictions": {"ours": "ballast", "twin": "ballast-aa"}}}
    (tmp_path / "rebalance.json").write_text(json.dumps({"runs": runs, "verdicts": pair}))
    old = {"runs": [{"scenario": "trace", "seed": 1, "contenders": {}}]}  # before the A/A pair
    (tmp_path / "rebalance-trace.json").write_text(json.dumps(old))
    loaded = headline.load("rebalance", tmp_path)
    assert (loaded["ours"], loaded["twin"], len(loaded["runs"])) == ("ballast", "ballast-aa", 12)
    built = headline.table("rebalance", loaded["runs"], "ballast", "ballast-aa")
    assert built["columns"] == [("stable", "evictions"), ("trace", "node_seconds_over_100")]
    assert built["rows"]["none"]["trace"] == Cell(3.5, 6.0, "tie")
    (tmp_path / "rebalance-trace.json").write_text(json.dumps({**old, "verdicts": pair}))
    with pytest.raises(ValueError, match="in another result too"):
        headline.load("rebalance", tmp_path)
