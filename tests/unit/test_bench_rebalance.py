"""The rebalancing benchmark's pure parts: the plan and the measures."""

from __future__ import annotations

from bench.rebalance import run as rebalance
from bench.rebalance import trace
from sandbox.peers import descheduler
from scheduler.rebalancer import settings


def test_plan_is_seeded_and_changes_only_what_the_scenario_says():
    drift = rebalance.plan(rebalance.SCENARIOS["drift"], 1)
    assert drift == rebalance.plan(rebalance.SCENARIOS["drift"], 1)
    assert len(drift.drifting) == rebalance.DRIFTING and drift.heating == []
    hot = rebalance.plan(rebalance.SCENARIOS["hot-start"], 1)
    assert len(hot.heating) == rebalance.HOT_NODES and hot.drifting == []
    assert all(80 <= b <= 90 for b in hot.hot_background)
    stable = rebalance.plan(rebalance.SCENARIOS["stable"], 1)
    assert stable.drifting == [] and stable.heating == []


def test_workload_of_a_deployment_pod():
    assert rebalance.workload_of("w3-7d9f8c6b5-x2kqp") == "w3"


def test_measure_from_samples():
    change = 100.0
    samples = [(99.0, [120.0, 10.0])]  # before the change: not counted
    samples += [(100.0 + s, [105.0 if s < 5 else 70.0, 85.0 if s < 8 else 40.0]) for s in range(30)]
    evictions = [
        {"time": 103.0, "workload": "w1", "replacement_node": "ballast-1",
         "replacement_index": 1, "bound_at": 104.0},
        {"time": 110.0, "workload": "w1", "replacement_node": "ballast-1",
         "replacement_index": 1, "bound_at": 112.0},
        {"time": 111.0, "workload": "w2", "replacement_node": "", "replacement_index": -1,
         "bound_at": 0.0},
    ]  # fmt: skip
    r = rebalance.measure(samples, change, evictions, {"w1": 1, "w2": 2}, lost=0)
    assert r["node_seconds_over_100"] == 5
    assert r["node_seconds_over_high"] == 5 + 8
    assert r["seconds_until_below_100"] == 4.0 and r["seconds_until_cool"] == 7.0
    assert r["hot_nodes_at_end"] == 0
    # The first replacement landed on node 1 while it was still over 80 %; the second after.
    assert r["bounced"] == 1
    assert r["evictions"] == 3 and r["evictions_per_workload"] == {"w1": 2, "w2": 1}
    assert r["max_unavailable"] == 2 and r["pdb_violations"] == 1


def test_measure_never_cooled():
    samples = [(100.0 + s, [95.0]) for s in range(30)]
    r = rebalance.measure(samples, 100.0, [], {}, lost=1)
    assert r["seconds_until_cool"] is None and r["hot_nodes_at_end"] == 1
    assert r["pods_lost"] == 1


def test_summary_marks_runs_where_it_never_happened():
    runs = [
        {"scenario": "drift", "contenders": {"none": {"seconds_until_cool": None}}},
        {"scenario": "drift", "contenders": {"none": {"seconds_until_cool": 30.0}}},
    ]
    cool = rebalance.summarize(runs)["drift"]["none"]["seconds_until_cool"]
    # never counts as later than any time: the median of {30, never} is never
    assert cool == {"median": None, "min": 30.0, "max": 30.0, "never": 1}
    assert rebalance._cell(cool) == "never in 1, else 30"
    runs.append({"scenario": "drift", "contenders": {"none": {"seconds_until_cool": 10.0}}})
    cool = rebalance.summarize(runs)["drift"]["none"]["seconds_until_cool"]
    assert cool == {"median": 30.0, "min": 10.0, "max": 30.0, "never": 1}


def test_descheduler_policy_uses_the_metric_resource():
    doc = descheduler.policy(
        "q", 50, 80, "http://p:9090", exclude_namespaces=["a"], node_selector="pool=x"
    )
    args = doc["profiles"][0]["pluginConfig"][1]["args"]
    assert doc["metricsProviders"][0]["prometheus"] == {"url": "http://p:9090"}
    assert args["thresholds"] == {"MetricResource": 50}
    assert args["targetThresholds"] == {"MetricResource": 80}
    assert args["metricsUtilization"] == {"source": "Prometheus", "prometheus": {"query": "q"}}
    assert args["evictableNamespaces"] == {"exclude": ["a"]} and doc["nodeSelector"] == "pool=x"


def test_paired_bindings_copy_the_reference_node_indexes_per_workload():
    reference = {"w0": [3, 1, 1], "w1": [0]}
    pending = {"w0": ["w0-b-2", "w0-a-9", "w0-c-1"], "w1": ["w1-x-1", "w1-y-2"]}
    got = rebalance.paired_bindings(reference, pending)
    # by pod name and by index: the same multiset of nodes as the reference, per workload
    assert got == {"w0-a-9": 1, "w0-b-2": 1, "w0-c-1": 3, "w1-x-1": 0}
    # a pod the reference could not place stays pending, for the scheduler
    assert "w1-y-2" not in got
    assert rebalance.paired_bindings({}, {"w2": ["w2-a-1"]}) == {}


def test_quick_covers_every_scenario():
    assert set(rebalance.QUICK_TIMES) == set(rebalance.SCENARIOS)
    assert set(rebalance.QUICK_CONTENDERS) <= set(rebalance.DEFAULT_CONTENDERS)
    assert set(rebalance.DEFAULT_CONTENDERS) | {"ballast-p95", "ballast-n5"} <= set(
        rebalance.CONTENDERS
    )
    assert set(rebalance.REBALANCERS) <= set(rebalance.CONTENDERS)
    # The saturated set in one round, on the first sample: named, not a default until measured.
    n1m3 = rebalance.REBALANCERS["ballast-saturated-n1-m3"]
    assert n1m3 == {"saturated": rebalance.SATURATED, "consecutive": 1, "maxPerNode": 3}
    assert "ballast-saturated-n1-m3" not in rebalance.DEFAULT_CONTENDERS
    rn = rebalance.REBALANCERS["ballast-saturated-n1-m3-rn"]
    assert rn == {**n1m3, "roundOnNewSamples": True}
    assert "ballast-saturated-n1-m3-rn" not in rebalance.DEFAULT_CONTENDERS
    # Targets under high, not only under low: the saturated-n1 rule otherwise.
    warm = rebalance.REBALANCERS["ballast-saturated-n1-warm"]
    assert warm == {"saturated": rebalance.SATURATED, "consecutive": 1, "targetsMustBeCold": False}
    # In the full run since the pilot at 050e544 (drift seed 1: 7 node-s over 100 % against
    # -saturated-n1's 157), in ballast-saturated's pool; --quick keeps to its pairs.
    assert "ballast-saturated-n1-warm" in rebalance.DEFAULT_CONTENDERS
    assert "ballast-saturated-n1-warm" not in rebalance.QUICK_CONTENDERS
    assert "ballast-saturated" not in rebalance.DEFAULT_CONTENDERS
    parsed = settings.parse(rebalance.rebalancer_config("http://w", "ballast-saturated-n1-warm"))
    assert parsed.rebalancer.targets_must_be_cold is False


def test_koord_migration_is_in_the_full_run_not_quick_and_runs_scaled_in_the_trace():
    migration = rebalance.KOORD_MIGRATION
    assert migration in rebalance.CONTENDERS
    # Koordinator as its own configuration evicts: a default of the full run; --quick keeps
    # to the pairs its verdicts read (docs/benchmarks.md says why).
    assert migration in rebalance.DEFAULT_CONTENDERS
    assert migration not in rebalance.QUICK_CONTENDERS
    plain = rebalance.koord_config("/k", rebalance.KOORD, rebalance.SYNTHETIC)
    assert plain["profiles"][0]["plugins"]["evict"]["enabled"] == [{"name": "DefaultEvictor"}]
    doc = rebalance.koord_config("/k", migration, rebalance.SYNTHETIC)
    (profile,) = doc["profiles"]
    assert profile["plugins"]["evict"]["enabled"] == [{"name": "MigrationController"}]
    args = profile["pluginConfig"][0]["args"]
    assert args["defaultJobMode"] == "EvictDirectly"  # Ballast's scheduler places replacements
    assert args["namespaces"] == {"include": [rebalance.namespace(migration)]}
    # The synthetic scenarios: its 5-minute defaults over their 5x compression.
    assert args["defaultJobTTL"] == "60s"
    assert args["objectLimiters"] == {"workload": {"duration": "60s"}}
    assert doc["nodeSelector"] == {"matchLabels": {rebalance.POOL_LABEL: migration}}
    traced = rebalance.koord_config("/k", migration, trace.TIMING)
    args = traced["profiles"][0]["pluginConfig"][0]["args"]
    assert args["defaultJobTTL"] == "9s"  # 5 minutes at 60x, floored at three 3 s requeues
    assert args["objectLimiters"] == {"workload": {"duration": "5s"}}
