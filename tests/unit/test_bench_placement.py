"""The placement benchmark's pure parts: the plan, the true demand, the measures and goals."""

from __future__ import annotations

from bench.placement import run as pl
from sandbox.load.simulator import SimulatorConfig, pod_factor


def test_the_plan_is_the_same_for_the_same_seed_and_differs_across_seeds():
    steady = pl.SCENARIOS["steady"]
    assert pl.plan(steady, 1, 50) == pl.plan(steady, 1, 50)
    assert pl.plan(steady, 1, 50) != pl.plan(steady, 2, 50)
    nodes, pods = pl.plan(steady, 1, 50)
    assert len(pods) == 200 and {p.cpu_m for p in pods} == set(pl.REQUESTS_M)
    assert all(pl.BACKGROUND[0] <= n.background_cpu <= pl.BACKGROUND[1] for n in nodes)


def test_scenarios_shape_the_plan():
    nodes, _ = pl.plan(pl.SCENARIOS["hot-nodes"], 3, 50)
    assert sum(n.background_cpu >= pl.HOT_BACKGROUND[0] for n in nodes) == 10
    nodes, _ = pl.plan(pl.SCENARIOS["heterogeneous"], 3, 8)
    assert [n.cpu for n in nodes] == [2, 4, 8, 16, 2, 4, 8, 16]
    _, pods = pl.plan(pl.SCENARIOS["misleading"], 3, 50)
    assert sorted({p.factor for p in pods}) == [0.2, 3.0]
    assert sum(p.factor == 3.0 for p in pods) == len(pods) // 2
    _, pods = pl.plan(pl.SCENARIOS["burst"], 3, 50)
    assert len(pods) == 200
    _, pods = pl.plan(pl.SCENARIOS["idle-scale-out"], 3, 8)
    assert {(p.deployment, p.factor) for p in pods} == {(0, pl.IDLE_FACTOR)} and len(pods) == 24
    placed = {
        "c-p003": ("n1", 0.0),
        "c-p012": ("n1", 0.0),
        "c-p013": ("n1", 0.0),
        "c-p023": ("n2", 0.0),
    }
    assert pl.last_wave_spread(pl.SCENARIOS["idle-scale-out"], placed) == {
        "last_wave_pods_per_node_max": 2,
        "last_wave_nodes_used": 2,
    }


def test_every_pool_gets_the_same_background_and_factors():
    nodes, pods = pl.plan(pl.SCENARIOS["steady"], 1, 4)
    config = pl.simulator_config(1, nodes, pods)
    for c in pl.CONTENDERS:
        assert config.background[pl.node_name(c, 2)][0] == nodes[2].background_cpu
        key = f"{pl.NAMESPACE}/{pl.pod_name(c, 7)}"
        assert pod_factor(1, key, config) == pods[7].factor


def test_true_demand_is_unclamped_and_follows_the_ramp():
    nodes = [pl.NodePlan(cpu=2, background_cpu=50.0, background_memory=10.0)]
    pods = [pl.PodPlan(cpu_m=1000, factor=3.0)]
    factors = {f"{pl.NAMESPACE}/b-p000": 3.0}
    background = {"b-00": (50.0, 10.0)}
    config = SimulatorConfig(
        seed=1, ramp_seconds=10.0, wobble=0.0, background=background, pod_factors=factors
    )
    placed = {"b-p000": ("b-00", 100.0)}
    assert pl.true_cpu("b", nodes, pods, placed, config, 100.0) == [50.0]
    assert pl.true_cpu("b", nodes, pods, placed, config, 105.0) == [125.0]
    assert pl.true_cpu("b", nodes, pods, placed, config, 200.0) == [200.0]


def test_measure_counts_hot_nodes_packing_and_pending():
    cpu = [120.0, 95.0, 55.0, 30.0]
    placed = {"p0": ("n0", 0.0), "p1": ("n0", 0.0), "p2": ("n1", 0.0)}
    m = pl.measure(cpu, placed, pods=5)
    assert m["nodes_over_100"] == 1 and m["nodes_over_90"] == 2
    assert m["nodes_over_target_10"] == 3
    assert m["max_cpu"] == 120.0 and m["mean_cpu"] == 75.0
    assert m["nodes_used"] == 2 and m["pods_per_node_max"] == 2 and m["pending"] == 2


def _run(scenario, seed, **per_contender):
    return {"scenario": scenario, "seed": seed, "contenders": per_contender}


def test_summary_and_goals_use_medians():
    def result(over100, std, top, pending=0, seconds=10.0):
        return {
            "nodes_over_100": over100,
            "std_cpu": std,
            "max_cpu": top,
            "pending": pending,
            "bind_seconds": seconds,
        }

    runs = [
        _run(
            "s",
            seed,
            **{
                "ballast-tlp": result(0, 2, 80.0 + seed),
                "trimaran-tlp": result(seed - 1, 5, 110.0),
                "ballast-lvrb": result(1, 9, 120.0, seconds=12.0),
                "trimaran-lvrb": result(0, 3, 90.0),
                "kube-scheduler": result(0, 4, 95.0),
            },
        )
        for seed in (1, 2, 3)
    ]
    summary = pl.summarize(runs)
    assert summary["s"]["ballast-tlp"]["max_cpu"] == {"median": 82.0, "min": 81.0, "max": 83.0}
    assert summary["s"]["trimaran-tlp"]["nodes_over_100"]["median"] == 1
    met = pl.goals(summary)["s"]
    assert met["ballast-tlp: 0 nodes over 100 %"] is True
    assert met["ballast-tlp: lower max than trimaran-tlp"] is True
    assert met["ballast-lvrb: 0 nodes over 100 %"] is False
    assert met["ballast-lvrb: lower std of node CPU than trimaran-lvrb"] is False
    assert met["ballast-tlp: lower std of node CPU than trimaran-tlp"] is True
    assert met["ballast-lvrb: all bound within kube-scheduler + 10 %"] is False
    assert met["ballast-tlp: no more pending than kube-scheduler"] is True


def test_the_peak_contender_scores_with_peak_fit_alone_in_the_default_matrix():
    # the chart's load score swapped for PeakFit at its weight (tests/unit/test_bench_chart.py:
    # ballast-lvrb is the chart's profile)
    profile = pl._ballast_config("ballast-peak", "http://watcher")["profiles"][0]
    assert profile["plugins"]["score"]["enabled"] == [{"name": "PeakFit", "weight": 1}]
    disabled = profile["plugins"]["score"]["disabled"]
    assert {"name": "TargetLoadPacking"} in disabled
    assert {"name": "LoadVariationRiskBalancing"} in disabled
    lvrb = pl._ballast_config("ballast-lvrb", "http://watcher")["profiles"][0]
    assert lvrb["plugins"]["score"]["enabled"] == [
        {"name": "LoadVariationRiskBalancing", "weight": 1}
    ]
    # In every default run (its look-backs in trace time: tests/unit/test_bench_timescale.py),
    # beside the default profile and its A/A twin, whose spread the rule in docs/placement.md reads.
    assert {"ballast-peak", pl.DEFAULT_PROFILE, pl.AA} <= set(pl.CONTENDERS)
    assert "ballast-peak" not in pl.VARIANTS


def test_the_wait_for_bindings_ends_when_all_bound_at_the_deadline_or_after_a_quiet_spell():
    from bench.placement.run import BIND_DEADLINE, BIND_QUIET, binding_over

    last_wave = 100.0
    assert binding_over(101.0, last_wave, 101.0, 10, 10)  # every pod bound
    assert not binding_over(101.0, last_wave, 101.0, 9, 10)
    # Bindings still coming: the wait goes on until the deadline, and no longer.
    assert not binding_over(last_wave + BIND_DEADLINE - 1, last_wave, last_wave + 80, 9, 10)
    assert binding_over(last_wave + BIND_DEADLINE, last_wave, last_wave + 89, 9, 10)
    # Nothing bound for BIND_QUIET seconds since the last wave and the last bind: over.
    assert not binding_over(last_wave + BIND_QUIET - 1, last_wave, last_wave - 5, 9, 10)
    assert binding_over(last_wave + BIND_QUIET, last_wave, last_wave - 5, 9, 10)
    assert not binding_over(last_wave + BIND_QUIET + 5, last_wave, last_wave + 10, 9, 10)
