"""The chaos suite, reduced: every fault of `make chaos` once, under a 10 pods/s stream.

The full run (bench/chaos/run.py, 20 pods/s, each fault three times) writes the figures; this one
holds the same invariants, read from the apiserver at the end: no pod bound twice, none lost,
no node over its allocatable, no process restarted but the killed ones, no 5xx from the watcher.
"""

from __future__ import annotations

import json
from dataclasses import replace

from bench.chaos.run import FAULTS, render, run_chaos
from bench.chaos.run import QUICK as REDUCED  # `python -m bench.chaos --quick` runs the same


def test_every_fault_once_under_load(tmp_path):
    result = run_chaos(replace(REDUCED, state_dir=str(tmp_path)))
    (tmp_path / "chaos.json").write_text(json.dumps(result, indent=1))
    summary = render(result)
    totals = result["totals"]
    assert [e["fault"] for e in result["episodes"]] == ["baseline", *FAULTS], summary
    assert totals["pods_created"] >= 10 * totals["stream_seconds"] * 0.9, summary
    assert totals["bound_twice"] == 0, summary
    assert totals["lost"] == 0 and totals["missing"] == 0, summary
    assert totals["overcommitted_nodes"] == [], summary
    assert totals["unexpected_restarts"] == [], summary
    assert totals["watcher_5xx"] == 0 and totals["watcher_status_5xx"] == 0, summary
    by_fault = {e["fault"]: e for e in result["episodes"]}
    assert by_fault["expire-watch"]["relists"] > 0  # the 410 Gone path ran
    assert by_fault["kill-redis-wipe"]["canary_after_restart"] == 0  # the data really went
    assert by_fault["kill-leader"]["seconds_without_leader"] > 0  # the leader really died
    # The Sentinel promoted the replica and the watchers wrote to it within the episode.
    failover = by_fault["sentinel-failover"]
    assert failover["promoted_after_s"] > 0, summary
    assert failover["writes_resumed_after_s"] >= failover["promoted_after_s"], summary
    assert failover["seconds_without_writes"] < failover["seconds"], summary
    # Before any fault the leader scores every node from load data.
    assert result["per_fault"]["baseline"]["max_seconds_until_load_scores"] == 0.0, summary
