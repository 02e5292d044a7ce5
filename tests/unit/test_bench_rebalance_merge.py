"""`python -m bench.rebalance --merge`: a run cut short and the run that finished it, as one."""

from __future__ import annotations

import json
from pathlib import Path

from bench.rebalance import run as rb

CONTENDERS = ["none", "ballast", "ballast-aa"]


def _run(scenario: str, seed: int, over: dict[str, int]) -> dict:
    return {
        "scenario": scenario,
        "seed": seed,
        "contenders": {
            c: {
                "node_seconds_over_100": over[c],
                "node_seconds_over_high": over[c],
                "evictions": 0,
                "bounced": 0,
                "hottest_over_time": [[0.0, 50.0], [1.0, 60.0]],
                "eviction_times": [],
            }
            for c in CONTENDERS
        },
    }


def _part(runs: list[dict], commit: str, **setup: object) -> dict:
    return {
        "provenance": {"commit": commit},
        "runs": runs,
        "seconds": 10,
        "setup": {
            "contenders": CONTENDERS,
            "high": 80,
            "scenarios": {s: s for s in ("drift", "stable", "trace")},
            **setup,
        },
    }


def test_a_run_cut_short_and_its_rest_merge_with_verdicts_and_the_trace_setup(tmp_path: Path):
    # The first part stopped in its second trace window: no verdicts, no trace setup.
    first = _part(
        [_run("stable", k, {"none": 0, "ballast": 0, "ballast-aa": 0}) for k in range(1, 6)]
        + [_run("trace", 1, {"none": 300, "ballast": 200, "ballast-aa": 210})],
        "aaaaaaa",
    )
    # Its stable seed 5 failed the scenario's check: a failed run, kept as one in the whole.
    first["failed_runs"] = [{"scenario": "stable", "seed": 5, "why": "peaked at 80.4 %"}]
    rest = _part(
        [
            _run("trace", w, {"none": 300, "ballast": 200 + w, "ballast-aa": 205})
            for w in range(2, 7)
        ],  # fmt: skip
        "bbbbbbb",
        trace={"windows": "days"},
        trace_windows=[2, 3, 4, 5, 6],
    )
    paths = []
    for name, doc in (("first.json", first), ("rest.json", rest)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(doc))
    out = tmp_path / "rebalance.json"
    assert rb.merge(paths, out, plot=False) == 0
    merged = json.loads(out.read_text())
    assert [p["commit"] for p in merged["parts_provenance"]] == ["aaaaaaa", "bbbbbbb"]
    assert merged["setup"]["trace"] == {"windows": "days"}
    assert merged["setup"]["trace_windows"] == [1, 2, 3, 4, 5, 6]
    trace = merged["verdicts"]["trace"]["node_seconds_over_100"]
    assert trace["ours"] == "ballast" and trace["twin"] == "ballast-aa"
    assert len(merged["runs"]) == 11 and "stable" in merged["verdicts"]
    assert merged["failed_runs"] == first["failed_runs"]


def test_parts_without_the_aa_pair_merge_without_verdicts(tmp_path: Path):
    runs = [_run("drift", 1, {"none": 0, "ballast": 0, "ballast-aa": 0})]
    for r in runs:
        del r["contenders"]["ballast-aa"]
    part = _part(runs, "ccccccc")
    part["setup"]["contenders"] = ["none", "ballast"]
    path = tmp_path / "part.json"
    path.write_text(json.dumps(part))
    out = tmp_path / "merged.json"
    rb.merge([path], out, plot=False)
    assert "verdicts" not in json.loads(out.read_text())
