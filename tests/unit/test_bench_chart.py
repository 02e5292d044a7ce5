"""Ballast in the benchmarks is Ballast as the chart deploys it (bench.harness.chart): the chart's
files read as helm renders them, every benchmark's Ballast config equal to them but for the
listed overlays, and those overlays the ones the docs list."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.harness import chart
from bench.harness import timescale as ts
from bench.placement import run as pl
from bench.rebalance import drift_check, rounds, trace
from bench.rebalance import run as rb
from scheduler.config.loader import ProfileConfig, parse_config
from scheduler.rebalancer import settings

ROOT = Path(__file__).resolve().parents[2]
URL = "http://watcher.test:2020"
# What the chart's templates fill in from the release, absent from chart.*_file.
FROM_THE_RELEASE = {
    "apiVersion",
    "kind",
    "watcherAddress",
    "watcherTokenFile",
    "leaderElection",
    "rebalancer.leaseName",
}


def rendered(key: str) -> dict[str, Any]:
    """A config file as the committed rendering of the chart (k8s/ballast.yaml) holds it."""
    for doc in yaml.safe_load_all((ROOT / "k8s" / "ballast.yaml").read_text()):
        if doc and doc.get("kind") == "ConfigMap" and key in doc.get("data", {}):
            return yaml.safe_load(doc["data"][key])
    raise AssertionError(f"no ConfigMap with {key} in k8s/ballast.yaml")


def test_the_chart_s_files_are_what_helm_renders_less_what_the_release_fills_in():
    scheduler = rendered("scheduler-config.yaml")
    assert chart.differences(scheduler, chart.scheduler_file()) <= FROM_THE_RELEASE
    rebalancer = rendered("rebalancer-config.yaml")
    assert chart.differences(rebalancer, chart.rebalancer_file()) <= FROM_THE_RELEASE
    # the chart's own: LoadVariationRiskBalancing alone, the rebalancer in dry run
    scores = {r.name: r.weight for r in parse_config(chart.scheduler_file()).profiles[0].scores}
    assert scores["LoadVariationRiskBalancing"] == 1 and "TargetLoadPacking" not in scores
    assert chart.rebalancer_settings().dry_run is True


def rebalancer_configs() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Every Ballast rebalancer the benchmarks start and the chart's file, a variant's own keys
    (REBALANCERS, the contenders' table in docs/rebalancer.md) taken out of both."""
    out = {}
    for c, variant in rb.REBALANCERS.items():
        config, deployed = rb.rebalancer_config(URL, c), chart.rebalancer_file()
        for key, value in variant.items():
            assert config["rebalancer"].pop(key) == value
            deployed["rebalancer"].pop(key, None)
        out[c] = (config, deployed)
    out["trace"] = (rb.rebalancer_config(URL, "ballast", trace.TIMING),
                    chart.rebalancer_file())  # fmt: skip
    out["drift-check"] = (rb.rebalancer_config(URL, drift_check.POOL), chart.rebalancer_file())
    return out


def scheduler_configs() -> dict[str, dict[str, Any]]:
    """Every Ballast scheduler the benchmarks start as Ballast's default."""
    return {
        "bench-rebalance": rb.scheduler_config(URL),
        **{c: pl._ballast_config(c, URL) for c in (pl.DEFAULT_PROFILE, pl.AA)},
    }


@pytest.mark.parametrize("name", sorted(rebalancer_configs()))
def test_every_ballast_rebalancer_is_the_chart_s_but_for_the_overlays(name):
    config, deployed = rebalancer_configs()[name]
    assert chart.differences(config, deployed) <= set(chart.OVERLAYS)
    s = settings.parse(config).rebalancer
    assert s.max_per_node == chart.rebalancer_settings().max_per_node == 1  # not the 2 it was
    assert s.dry_run is False and config["watcherAddress"] == URL


@pytest.mark.parametrize("name", sorted(scheduler_configs()))
def test_every_ballast_default_scheduler_is_the_chart_s_but_for_the_overlays(name):
    config = scheduler_configs()[name]
    assert chart.differences(config, chart.scheduler_file()) <= set(chart.OVERLAYS)
    # The profile built from it: the same plugins, weights and typed args as the chart's.
    (ours,) = parse_config(config).profiles
    deployed = copy.deepcopy(parse_config(chart.scheduler_file()).profiles[0])
    deployed.scheduler_name = ours.scheduler_name
    assert isinstance(ours, ProfileConfig) and ours == deployed
    assert parse_config(config).percentage_of_nodes_to_score == 0  # the chart's


def test_the_overlays_listed_are_the_ones_made():
    made = set()
    for config, deployed in rebalancer_configs().values():
        made |= chart.differences(config, deployed)
    for config in scheduler_configs().values():
        made |= chart.differences(config, chart.scheduler_file())
    assert made == set(chart.OVERLAYS)


def test_the_variants_differ_from_the_chart_by_what_they_say():
    assert rb.REBALANCERS["ballast"] == rb.REBALANCERS[rb.AA] == {}
    assert rb.rebalancer_config(URL, "ballast-n1")["rebalancer"]["consecutive"] == 1
    deployed = parse_config(chart.scheduler_file()).profiles[0]
    loads = {"LoadVariationRiskBalancing", "TargetLoadPacking", "PeakFit"}
    for contender, load in (("ballast-peak", "PeakFit"), ("ballast-tlp", "TargetLoadPacking")):
        profile = parse_config(pl._ballast_config(contender, URL)).profiles[0]
        assert {r.name: r.weight for r in profile.scores if r.name in loads} == {load: 1}
        # the chart's other scores stay, at their weights
        rest = [r for r in profile.scores if r.name not in loads]
        assert rest == [r for r in deployed.scores if r.name not in loads]
    always = parse_config(pl._ballast_config("ballast-lvrb-always", URL)).profiles[0]
    assert always.scores == deployed.scores
    assert always.args["LoadVariationRiskBalancing"] != deployed.args["LoadVariationRiskBalancing"]


def test_the_thresholds_and_rounds_every_rebalancer_gets_are_the_chart_s():
    rule = next(r for r in chart.rebalancer_settings().rules if r.resource == "cpu")
    assert (rb.HIGH, rb.LOW) == (rule.high, rule.low) == (80.0, 50.0)
    assert rb.INTERVAL == chart.rebalancer_settings().interval == 10.0


def test_the_rounds_benchmark_judges_with_the_chart_s_profile():
    profile, s, _ = rounds.chart_judging()
    assert [p.name for p, _ in profile.scores] == [
        r.name for r in parse_config(chart.scheduler_file()).profiles[0].scores
    ]
    assert s.max_per_node == chart.rebalancer_settings().max_per_node


def test_results_record_the_configs_that_ran():
    setup = rb.document([], [1], ["drift"], ["none", "ballast"], 0)["setup"]
    assert setup["scheduler_config"] == rb.scheduler_config("http://watcher")
    # The synthetic scenarios' rounds: the chart's 10 s over their 5x compression.
    assert setup["rebalancer_config"] == rb.rebalancer_config("http://watcher", timing=rb.SYNTHETIC)
    assert setup["rebalancer_config"]["rebalancer"]["interval"] == "2s"
    assert setup["rebalancer_config"]["rebalancer"]["evictionsPerMinute"] == 50
    assert setup["overlays"] == chart.OVERLAYS
    traced = rb.ballast_setup(trace.TIMING)["rebalancer_config"]["rebalancer"]
    assert traced["interval"] == f"{trace.TIMING.rounds:g}s"
    assert traced["evictionsPerMinute"] == 600


@pytest.mark.parametrize("name", sorted(rebalancer_configs()))
def test_every_ballast_rebalancer_spends_evictions_per_deployed_minute(name):
    # The chart's 10 a minute (issue 46): left in wall minutes it would be 10 a trace hour in
    # the trace, 10 per 5 deployed minutes in the synthetic scenarios.
    config, _ = rebalancer_configs()[name]
    s = settings.parse(config).rebalancer
    speed = ts.SPEED if name == "trace" else ts.SYNTHETIC_SPEED
    assert s.evictions_per_minute == chart.rebalancer_settings().evictions_per_minute * speed
    assert s.max_per_round == chart.rebalancer_settings().max_per_round  # the burst: per round
    assert f" {s.evictions_per_minute:g} " in chart.OVERLAYS["rebalancer.evictionsPerMinute"]


def test_the_docs_list_the_overlays_and_the_synthetic_settings_the_code_makes():
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text()
    assert chart.table() in benchmarks
    assert rb.synthetic_table() in (ROOT / "docs" / "rebalancer.md").read_text()


def test_differences_name_the_paths():
    a = {"x": 1, "l": [{"n": "a", "w": 1}], "s": {"k": 1}}
    b = {"x": 1, "l": [{"n": "a", "w": 2}], "s": {"k": 1, "j": 2}}
    assert chart.differences(a, b) == {"l[].w", "s.j"}
    assert chart.differences(a, a) == set()
    assert chart.differences({"l": [1]}, {"l": [1, 2]}) == {"l"}
