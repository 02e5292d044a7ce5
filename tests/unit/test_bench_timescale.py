"""Trace time faithful to deployment (issue 44 item 1): every contender's look-back and pace,
read in trace time, within one trace step of what it is deployed; the docs' table is the code's."""

from __future__ import annotations

import importlib
from dataclasses import replace
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
    (ts.MIGRATION, "requeue of a job evicting"),
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
    assert len(settings) >= 19  # every scalable look-back and pace is read back
    off = [(s.contender, s.name, s.trace) for s in settings if s.steps_off > 1.0]
    assert off == []


def test_the_old_replay_fails_the_check():
    # Before issue 44: the synthetic scenarios' settings (300 s window, 2 s NodeMetric reports
    # of 15 s means) under a replay of one step every 2 s.
    old = ts.effective(placement.SYNTHETIC, 2.0)
    off = {(s.contender, s.name) for s in old if s.steps_off > 1.0}
    assert ("Ballast watcher", "window") in off
    assert ("Ballast scheduler", "--recent-max-age") in off


PEAK_MODEL = {
    ("Ballast watcher", "peak_bucket_seconds x 24, a pod's max"),
    ("Ballast watcher", "peak_bucket_seconds x 72, a node's max"),
    ("Ballast watcher", "pod_history_half_life"),
    ("Ballast scheduler", "--pod-usage-interval"),
    ("Ballast scheduler", "--pod-usage-max-age"),
}


def test_the_peak_models_look_backs_are_run_scaled():
    timing = ts.trace_timing()
    got = {(s.contender, s.name): s for s in ts.effective(timing, ts.STEP_WALL)}
    assert PEAK_MODEL <= set(got)
    assert [key for key in PEAK_MODEL if got[key].steps_off > 1.0] == []
    assert got[("Ballast watcher", "peak_bucket_seconds x 24, a pod's max")].trace == 86_400
    # The hour and the half-life left real-time, as before: a pod's "last day" is 60 trace days.
    env = {
        k: v
        for k, v in timing.watcher_env.items()
        if k not in ("BALLAST_PEAK_BUCKET_SECONDS", "BALLAST_POD_HISTORY_HALF_LIFE")
    }
    flags = tuple(f for f in timing.scheduler_flags if not f.startswith("--pod-usage"))
    old = ts.effective(replace(timing, watcher_env=env, scheduler_flags=flags), ts.STEP_WALL)
    assert {(s.contender, s.name) for s in old if s.steps_off > 1.0} == PEAK_MODEL
