"""bench.harness.common's pure parts: the raw binder's one rule for repeated watch events, the /proc
readers and the spread of a figure over rounds."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import common


class Submitted:
    """Stands in for the binder's thread pool: what it would bind, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def submit(self, fn: Any, *args: Any) -> None:
        self.calls.append(args)


def pod(name: str, node: str = "", scheduler: str = common.RAW_BIND, ns: str = "a") -> dict:
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"schedulerName": scheduler, "nodeName": node},
    }


def test_raw_binder_queues_a_pod_once_whatever_the_events() -> None:
    binder = common.RawBinder(None, ["n1", "n2"])  # never started: no watch, no API call
    binder._pool = Submitted()  # type: ignore[assignment]
    for event in [pod("p"), pod("p"), pod("q"), pod("p", ns="b"), pod("q"), pod("r", node="n1")]:
        binder._seen(event)
    binder._seen(pod("s", scheduler="ballast"))
    # p, q and b/p once each, round robin over the nodes; bound and others' pods left alone
    assert binder._pool.calls == [("a", "p", "n1"), ("a", "q", "n2"), ("b", "p", "n1")]


def test_spread_is_median_min_max() -> None:
    assert common.spread([3.0, 1.0, 2.0, 10.0]) == {"median": 2.5, "min": 1.0, "max": 10.0}


def test_proc_readers_read_this_process_and_its_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        assert child.pid in common.child_pids(os.getpid())
        assert 0 < common.process_rss_mb(os.getpid()) <= common.process_rss_peak_mb(os.getpid())
        assert common.process_cpu_seconds(os.getpid()) > 0
    finally:
        child.communicate(b"")
    assert common.child_pids(2**22 + 1) == []  # no such process: no children, no error


def test_sized_fills_only_what_the_command_line_left_unset() -> None:
    args = argparse.Namespace(quick=True, nodes=None, pods=50)
    common.sized(args, {"nodes": 200, "pods": 500}, {"nodes": 1000, "pods": 2000})
    assert (args.nodes, args.pods) == (200, 50)
    args = argparse.Namespace(quick=False, nodes=None, pods=None)
    common.sized(args, {"nodes": 200, "pods": 500}, {"nodes": 1000, "pods": 2000})
    assert (args.nodes, args.pods) == (1000, 2000)


def test_a_quick_scheduler_run_never_writes_the_result_the_docs_quote() -> None:
    from bench.scheduler.run import default_name

    assert default_name("plain", 1000) == "scheduler.json"
    assert default_name("plain", 1000, quick=True) == "scheduler-quick.json"
    assert default_name("spread", 5000) == "scheduler-spread-5000.json"
    assert default_name("spread", 1000, quick=True) == "scheduler-spread-quick.json"


def test_a_quick_watcher_run_never_writes_the_result_the_docs_quote() -> None:
    from bench.watcher.run import result_name

    assert result_name("watcher", 5000, quick=False) == "watcher"
    assert result_name("watcher", 10000, quick=False) == "watcher-10000"
    assert result_name("watcher", 500, quick=True) == "watcher-quick"
    assert (
        result_name("watcher-vs-load-watcher", 5000, quick=True) == "watcher-vs-load-watcher-quick"
    )


def test_scenario_table_gives_the_median_and_the_extent_where_runs_differ() -> None:
    def run(scenario: str, **hot: int) -> dict:
        return {
            "scenario": scenario,
            "contenders": {c: {"hot": h, "lost": 0} for c, h in hot.items()},
        }

    doc = {
        "setup": {"contenders": ["a", "b"]},
        "runs": [
            run("trace", a=3, b=1),
            run("trace", a=9, b=2),
            run("trace", a=4),
            run("other", a=99),
        ],
    }
    table = common.scenario_table(doc, "trace", (("hot", "hot s"), ("lost", "lost")))
    assert table.splitlines() == [
        "| trace | hot s | lost |",
        "| --- | --- | --- |",
        "| a | 4 (3..9) | 0 |",
        "| b | 1.5 (1..2) | 0 |",
    ]
    assert common.scenario_table(doc, "none", (("hot", "hot s"),)) == ""


def test_draw_scenarios_hands_each_scenario_its_own_runs() -> None:
    doc = {
        "setup": {"x": 1},
        "runs": [
            {"scenario": "s", "seed": 1},
            {"scenario": "t", "seed": 1},
            {"scenario": "s", "seed": 2},
        ],
    }
    drawn: list[tuple[str, list[int], str]] = []

    def draw(scenario: str, setup: dict, runs: list[dict], path: Any) -> Any:
        assert setup == {"x": 1}
        drawn.append((scenario, [r["seed"] for r in runs], path.name))
        return path

    paths = common.draw_scenarios(doc, Path("/nowhere"), "bench", draw)
    assert drawn == [("s", [1, 2], "bench-s.png"), ("t", [1], "bench-t.png")]
    assert [p.name for p in paths] == ["bench-s.png", "bench-t.png"]
