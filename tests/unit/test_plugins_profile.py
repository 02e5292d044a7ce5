"""Profile: filter and score passes, weights, normalisation, failure messages."""

from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.framework import CycleState
from scheduler.framework.status import failure_message
from scheduler.plugins import (
    metric_score,
    node_resources_balanced_allocation,
    node_resources_least_allocated,
)
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats


def test_failure_message_like_kube_scheduler():
    reasons = {f"n{i}": ["Insufficient cpu"] for i in range(3)}
    reasons.update({f"t{i}": ["node(s) had untolerated taint(s)"] for i in range(7)})
    assert failure_message(10, reasons) == (
        "0/10 nodes are available: 3 Insufficient cpu, 7 node(s) had untolerated taint(s)."
    )
    both = {"a": ["Insufficient cpu", "Insufficient memory"], "b": "Insufficient memory"}
    assert failure_message(2, both) == (
        "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."
    )
    assert failure_message(0, {}) == "no nodes available to schedule pods"


def default_profile(doc=None):
    return build_profiles(parse_config(doc))


def test_filter_pass_returns_feasible_nodes_and_first_failing_reason():
    profile = default_profile()["ballast"]
    nodes = [
        make_node("ok"),
        make_node("cordoned", unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}]),
        make_node("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        make_node("small", cpu="100m"),
        make_node("down", ready=False),
    ]
    pod = make_pod(containers=[container(cpu="500m")])
    feasible, reasons = profile.filter(pod, nodes, snapshot(nodes))
    assert [n.name for n in feasible] == ["ok"]
    assert reasons == {
        "cordoned": ["node(s) were unschedulable"],
        "tainted": ["node(s) had untolerated taint(s)"],
        "small": ["Insufficient cpu"],
        "down": ["node(s) were not ready"],
    }
    assert failure_message(len(nodes), reasons).startswith("0/5 nodes are available: 1 Insuff")


def test_default_profile_packs_toward_target_and_counts_fallbacks():
    profile = default_profile()["ballast"]
    nodes = [make_node(n, cpu="2") for n in ("idle", "target", "hot", "nodata")]
    loads = {
        "idle": {"cpu": stats(avg=0)},
        "target": {"cpu": stats(avg=30)},
        "hot": {"cpu": stats(avg=90)},
    }
    pod = make_pod(containers=[container(cpu="100m")])  # predicted 150m = 7.5 %
    state = CycleState()
    scores = profile.score(pod, nodes, snapshot(nodes, loads), state)
    assert scores["target"] > scores["idle"] > scores["hot"]
    assert scores["nodata"] == scores["idle"]  # empty node without data: judged by allocation
    assert state.fallbacks == {"missing": 1}


def test_weights_and_normalisation_are_applied():
    doc = {
        "profiles": [
            {
                "plugins": {
                    "score": {
                        "disabled": [{"name": "*"}],
                        "enabled": [
                            {"name": "MetricScore", "weight": 3},
                            {"name": "NodeAffinity", "weight": 2},
                        ],
                    }
                },
                "pluginConfig": [{"name": "MetricScore", "args": {"metric": "net_rx"}}],
            }
        ]
    }
    profile = default_profile(doc)["ballast"]
    nodes = [make_node("a", labels={"ssd": "1"}), make_node("b")]
    loads = {"a": {"net_rx": stats(avg=100)}, "b": {"net_rx": stats(avg=25)}}
    pref = [
        {"weight": 7, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}
    ]
    pod = make_pod(
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}}
    )
    # MetricScore lower-is-better: a 0, b 75; NodeAffinity normalised: a 100, b 0
    assert profile.score(pod, nodes, snapshot(nodes, loads)) == {"a": 200, "b": 225}


def test_metric_score_directions_and_missing_nodes():
    nodes = [make_node(n) for n in ("a", "b", "c", "d")]
    loads = {
        "a": {"net": stats(avg=10)},
        "b": {"net": stats(avg=40)},
        "c": {"net": stats(avg=5, state="expired")},
    }
    snap = snapshot(nodes, loads)
    lower = metric_score.Plugin(metric_score.Args(metric="net"))
    state = CycleState()
    assert lower.score_all(state, make_pod(), nodes, snap) == [75, 0, 37, 37]
    assert state.fallbacks == {"expired": 1, "missing": 1}
    higher = metric_score.Plugin(metric_score.Args(metric="net", higher_is_better=True))
    assert higher.score_all(CycleState(), make_pod(), nodes, snap) == [25, 100, 62, 62]
    latest = metric_score.Plugin(metric_score.Args(metric="net", statistic="latest"))
    assert latest.score_all(CycleState(), make_pod(), nodes[:2], snap) == [50, 50]


def test_least_allocated_uses_nonzero_requests():
    node = make_node(cpu="1", memory="1Gi")
    node.add_pod(make_pod("a", [container(cpu="400m", memory="512Mi")]))
    plugin = node_resources_least_allocated.Plugin()
    snap = snapshot([node])
    pod = make_pod(containers=[container(cpu="100m", memory="256Mi")])
    # cpu (1000 - 500) * 100 / 1000 = 50, memory (1024 - 768) * 100 / 1024 = 25 -> 37
    assert plugin.score(CycleState(), pod, node, snap) == 37
    # an empty pod still weighs 100m / 200Mi: cpu 50, memory (1024-712)*100//1024 = 30 -> 40
    assert plugin.score(CycleState(), make_pod(containers=[container()]), node, snap) == 40


def test_balanced_allocation():
    node = make_node(cpu="1", memory="1Gi")
    node.add_pod(make_pod("a", [container(cpu="500m", memory="256Mi")]))
    plugin = node_resources_balanced_allocation.Plugin()
    snap = snapshot([node])
    pod = make_pod(containers=[container(cpu="100m", memory="256Mi")])
    # fractions 0.6 and 0.5 -> std 0.05 -> 95
    assert plugin.pre_score(CycleState(), pod, [node], snap)
    assert plugin.score(CycleState(), pod, node, snap) == 95
    assert not plugin.pre_score(CycleState(), make_pod(), [node], snap)


def test_filtering_in_chunks_prepares_the_pod_once():
    profile = default_profile()["ballast"]
    nodes = [make_node(f"n{i}", labels={"zone": "a" if i % 2 else "b"}) for i in range(6)]
    pod = make_pod(nodeSelector={"zone": "a"})
    state, snap = CycleState(), snapshot(nodes)
    first, why1 = profile.filter(pod, nodes[:3], snap, state)
    second, why2 = profile.filter(pod, nodes[3:], snap, state)
    assert [n.name for n in first + second] == ["n1", "n3", "n5"]
    assert sorted({**why1, **why2}) == ["n0", "n2", "n4"]
