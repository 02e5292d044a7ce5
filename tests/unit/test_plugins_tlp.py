import pytest

from scheduler.framework import CycleState
from scheduler.framework.resources import go_round
from scheduler.plugins.target_load_packing import Args, Plugin, tlp_score
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats


def tlp_of(pod, node, cpu_stats=None, recent=None, **args):
    loads = {node.name: {"cpu": cpu_stats}} if cpu_stats is not None else {}
    snap = snapshot([node], loads, recent)
    state = CycleState()
    return Plugin(Args(**args)).score(state, pod, node, snap), state


def test_go_round_halves_away_from_zero():
    assert go_round(72.5) == 73
    assert go_round(77.5) == 78
    assert go_round(-2.5) == -3
    assert go_round(0.49999999999999994) == 0
    assert go_round(2.4999) == 2


def test_worked_example_target_40():
    # nodes at 25 %, 50 %, 10 % with an empty pod score 77.5->78, 33, 55
    assert [tlp_score(u, 1000, 0, 0, 40) for u in (25, 50, 10)] == [78, 33, 55]


def test_reference_vectors_node_1000m():
    node = make_node(cpu="1000m")
    empty = make_pod()
    assert tlp_of(empty, node, stats(latest=0))[0] == 40
    assert tlp_of(empty, node, stats(latest=50))[0] == 33
    limited = make_pod(containers=[container(limits={"cpu": "1000m"})])
    assert tlp_of(limited, node, stats(latest=30))[0] == 0  # U = 130


def test_capacity_zero_scores_target():
    assert tlp_score(50, 0, 500, 0, 40) == 40


def test_prediction_uses_multiplier_and_default():
    node = make_node(cpu="2")
    # request 200m * 1.5 = 300m -> U = 15 % -> (60 * 15 / 40) + 40 = 62.5 -> 63
    pod = make_pod(containers=[container(cpu="200m")])
    assert tlp_of(pod, node, stats(avg=0))[0] == 63
    # a container with no cpu at all is predicted at defaultRequests (1000m): U = 50 -> 33
    assert tlp_of(make_pod(containers=[container()]), node, stats(avg=0))[0] == 33


def test_recent_pods_add_to_usage():
    node = make_node(cpu="1000m")
    assert tlp_of(make_pod(), node, stats(avg=0), recent={"n1": 500})[0] == 33


def test_missing_metrics_fall_back_to_allocation():
    node = make_node(cpu="1000m")
    node.add_pod(make_pod("bound", [container(cpu="250m")]))
    score, state = tlp_of(make_pod(), node)
    # requested 250m / 1000m = 25 % instead of upstream's flat 0
    assert score == 78
    assert state.fallbacks == {"missing": 1}


def test_expired_metrics_fall_back_and_recent_pods_not_double_counted():
    node = make_node(cpu="1000m")
    node.add_pod(make_pod("bound", [container(cpu="250m")]))
    score, state = tlp_of(make_pod(), node, stats(avg=90, state="expired"), recent={"n1": 250})
    assert score == 78
    assert state.fallbacks == {"expired": 1}


def test_stale_metrics_blend_toward_allocation():
    node = make_node(cpu="1000m")
    node.add_pod(make_pod("bound", [container(cpu="100m")]))  # allocation 10 %
    # horizon 30, expiry 130, age 80 -> w = 0.5 -> U = 0.5 * 50 + 0.5 * 10 = 30 -> 85
    s = stats(avg=50, state="stale", age=80, horizon=30, expiry=130)
    score, state = tlp_of(make_pod(), node, s)
    assert score == 85
    assert state.fallbacks == {"stale": 1}


def test_target_is_an_argument():
    assert tlp_score(50, 1000, 0, 0, 60) == go_round(40 * 50 / 60 + 60)
    assert tlp_score(80, 1000, 0, 0, 60) == go_round(60 * 20 / 40)


def test_vectorised_scores_equal_node_by_node():
    import random

    rng = random.Random(7)
    nodes, loads, recent = [], {}, {}
    for i in range(300):
        node = make_node(f"n{i}", cpu=f"{rng.choice([0, 500, 1000, 2000, 3333])}m")
        nodes.append(node)
        # multiples of 2.5 % land exactly on .5 scores, where Go's rounding matters
        if i % 5:
            state = rng.choice(["fresh", "fresh", "stale", "expired"])
            loads[node.name] = {"cpu": stats(avg=rng.randrange(0, 50) * 2.5, state=state, age=90)}
        if i % 3 == 0:
            recent[node.name] = rng.choice([0, 100, 250, 999])
        if i % 4 == 0:
            node.add_pod(make_pod(f"b{i}", [container(cpu=f"{rng.randrange(0, 900)}m")]))
    snap = snapshot(nodes, loads, recent)
    for target in (1, 40, 55, 100):
        plugin = Plugin(Args(target_utilization=target))
        pod = make_pod(containers=[container(cpu="150m")])
        one_by_one = [plugin.score(CycleState(), pod, n, snap) for n in nodes]
        assert plugin.score_all(CycleState(), pod, nodes, snap) == one_by_one


def test_a_saturated_pass_of_a_request_based_prediction_stays_upstream():
    # Every node past 100 % scores 0 upstream and the pick is a random tie. orderSaturated ranks
    # such a pass only for a prediction learned from the pod's workload
    # (test_estimator.py::test_target_load_packing_orders_a_saturated_pass_by_the_profile); a
    # request-based one keeps upstream's zeros: ranking by it would amplify the guess.
    nodes = [make_node(f"n{i}", cpu="1000m") for i in range(4)]
    loads = {n.name: {"cpu": stats(avg=a)} for n, a in zip(nodes, (70, 60, 90, 65), strict=True)}
    snap = snapshot(nodes, loads)
    pod = make_pod(containers=[container(limits={"cpu": "500m"})])  # U = 120, 110, 140, 115
    assert Plugin().score_all(CycleState(), pod, nodes, snap) == [0, 0, 0, 0]
    assert [Plugin().score(CycleState(), pod, n, snap) for n in nodes] == [0, 0, 0, 0]
    # `always` ranks it anyway, the least overflow first
    always = Plugin(Args(order_saturated="always"))
    assert always.score_all(CycleState(), pod, nodes, snap) == [67, 100, 0, 83]


def test_saturated_order_leaves_any_scored_pass_as_upstream():
    # one node still under 100 %: upstream's scores stand, zeros and all
    nodes = [make_node(f"n{i}", cpu="1000m") for i in range(3)]
    loads = {n.name: {"cpu": stats(avg=a)} for n, a in zip(nodes, (70, 20, 90), strict=True)}
    snap = snapshot(nodes, loads)
    pod = make_pod(containers=[container(limits={"cpu": "500m"})])  # U = 120, 70, 140
    assert Plugin().score_all(CycleState(), pod, nodes, snap) == [0, 20, 0]
    assert Plugin(Args(order_saturated="never")).score_all(CycleState(), pod, nodes, snap) == [
        0,
        20,
        0,
    ]


def test_order_saturated_is_an_argument():
    from scheduler.framework.fields import Fields
    from scheduler.plugins.target_load_packing import parse_args

    assert parse_args(Fields({}, "a")).order_saturated == "learned"
    assert parse_args(Fields({"orderSaturated": False}, "a")).order_saturated == "never"
    assert parse_args(Fields({"orderSaturated": True}, "a")).order_saturated == "always"
    assert parse_args(Fields({"orderSaturated": "always"}, "a")).order_saturated == "always"
    with pytest.raises(Exception, match="a.orderSaturated: must be one of learned, always, never"):
        parse_args(Fields({"orderSaturated": "sometimes"}, "a"))


def test_tlp_scores_equal_the_scalar_formula_node_by_node():
    """The array pass (both branches rounded at once) against tlp_score, Go's float order,
    on random loads, capacities (zero included), recent CPU and targets."""
    import numpy as np

    from scheduler.plugins.target_load_packing import tlp_score, tlp_scores

    rng = np.random.default_rng(5)
    for trial in range(3000):
        n = int(rng.integers(1, 40))
        used = [
            rng.uniform(0, 130, n),
            rng.integers(0, 101, n).astype(float),
            np.round(rng.uniform(0, 100, n), 1),
        ][trial % 3]
        capacity = rng.choice([0, 1000, 2000, 3500, 4000, 96000], n).astype(float)
        pod_m = float(rng.choice([0, 100, 250, 1000, 1500]))
        recent = rng.integers(0, 3000, n).astype(float) if trial % 2 else np.zeros(n)
        target = int(rng.choice([1, 30, 40, 60, 70, 99, 100]))
        got = tlp_scores(used, capacity, pod_m, recent if trial % 4 else 0.0, target).tolist()
        recent_each = recent if trial % 4 else np.zeros(n)
        want = [
            tlp_score(u, c, pod_m, r, target)
            for u, c, r in zip(used.tolist(), capacity.tolist(), recent_each.tolist(), strict=True)
        ]
        assert got == want, (trial, used, capacity, pod_m, target)
