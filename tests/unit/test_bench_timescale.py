"""Trace time faithful to deployment (issue 44 item 1): every contender's look-back and pace,
read in trace time, within one trace step of what it is deployed; the docs' table is the code's."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from bench.harness import timescale as ts
from bench.placement import run as placement

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


@pytest.mark.parametrize("bench", ["placement.trace", "rebalance.trace"])
def test_the_trace_scenarios_run_every_setting_within_one_step(bench):
    module = importlib.import_module(f"bench.{bench}")
    assert module.PLAYER.step_seconds == ts.STEP_WALL
    settings = ts.effective(module.TIMING, module.PLAYER.step_seconds)
    assert len(settings) >= 14  # every scalable look-back and pace is read back
    off = [(s.contender, s.name, s.trace) for s in settings if s.steps_off > 1.0]
    assert off == []


def test_the_old_replay_fails_the_check():
    # Before issue 44: the synthetic scenarios' settings (300 s window, 2 s NodeMetric reports
    # of 15 s means) under a replay of one step every 2 s.
    old = ts.effective(placement.SYNTHETIC, 2.0)
    off = {(s.contender, s.name) for s in old if s.steps_off > 1.0}
    assert ("Ballast watcher", "window") in off
    assert ("Ballast scheduler", "--recent-max-age") in off
