"""Trace time faithful to deployment (issue 44 item 1): every contender's look-back and pace,
read in trace time, within one trace step of what it is deployed; the docs' table is the code's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness import timescale as ts

DOCS = Path(__file__).resolve().parents[2] / "docs"
# What the peers' binaries fix in real time; a new one must be named here, and in the table.
FIXED = {
    ("Trimaran", "watcher fetch"),
    ("Trimaran", "recently bound pods"),
    ("load-watcher", "fetch"),
}


@pytest.mark.parametrize("s", [s for s in ts.SETTINGS if not s.fixed], ids=lambda s: s.name)
def test_every_setting_within_one_step_of_its_deployed_value(s):
    assert s.steps_off <= 1.0, f"{s.contender} {s.name}: {s.trace:g} s in trace time"


def test_only_the_peers_binaries_fix_a_setting():
    assert {(s.contender, s.name) for s in ts.SETTINGS if s.fixed} == FIXED


def test_a_window_holds_enough_polls_for_a_deviation():
    assert ts.WINDOW_WALL / ts.POLL_WALL >= ts.MIN_WINDOW_SAMPLES
    assert ts.POLL_WALL >= ts.FASTEST_POLL
    assert ts.RATE_RANGE_WALL >= 2 * ts.setting("Prometheus", "scrape interval").wall


def test_a_stretched_look_back_fails():
    s = ts.setting("Ballast watcher", "window")
    stretched = ts.Setting(s.contender, s.name, s.kind, s.deployed, s.source, 300.0)
    assert stretched.steps_off > 1.0  # the replay's old setting: 12.5 hours at 150x


def test_docs_trace_table_is_the_codes():
    assert ts.table() in (DOCS / "trace.md").read_text()
