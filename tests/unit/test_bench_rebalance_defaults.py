"""The rule that picks the rebalancer's defaults from benchmark runs (issue 35 item 4)."""

from __future__ import annotations

from bench.rebalance import defaults as rd


def _run(scenario: str, **per: tuple[int, int, int]) -> dict:
    """per contender: (node-s > 100 %, evictions, false evictions)"""
    return {
        "scenario": scenario,
        "contenders": {
            c: {"node_seconds_over_100": o, "evictions": e, "false_evictions": f}
            for c, (o, e, f) in per.items()
        },
    }


def test_least_over_100_among_those_with_few_false_and_none_in_stable():
    runs = [
        _run(
            "trace", ballast=(100, 20, 1), **{"ballast-n1": (50, 20, 1), "ballast-h70": (40, 20, 0)}
        ),
        _run(
            "trace", ballast=(120, 20, 1), **{"ballast-n1": (60, 20, 1), "ballast-h70": (30, 20, 0)}
        ),
        _run("stable", ballast=(0, 0, 0), **{"ballast-n1": (0, 0, 0), "ballast-h70": (0, 1, 0)}),
        _run("drift", ballast=(9, 1, 0), **{"ballast-n1": (3, 1, 0), "ballast-h70": (1, 2, 0)}),
        _run("trace", descheduler=(1, 50, 1)),  # not a candidate however good
    ]
    rows = {r["candidate"]: r for r in rd.table(runs)}
    assert list(rows)[0] == "ballast" and "descheduler" not in rows
    assert rows["ballast"]["trace_node_seconds_over_100"] == 110
    assert rows["ballast-n1"]["false_share"] == 0.05 and rows["ballast-n1"]["eligible"]
    assert not rows["ballast-h70"]["eligible"]  # one eviction in stable
    assert rows["ballast-n1"]["drift_node_seconds_over_100"] == 3
    assert rd.choose(list(rows.values())) == "ballast-n1"
    assert "| ballast-n1 | 55 |" in rd.markdown(list(rows.values()))


def test_no_choice_when_every_candidate_evicts_falsely():
    runs = [_run("trace", ballast=(100, 10, 4)), _run("stable", ballast=(0, 0, 0))]
    assert rd.choose(rd.table(runs)) is None
