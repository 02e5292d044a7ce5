"""Filter plugins on kube-scheduler-like cases."""

import pytest

from scheduler.framework import CycleState
from scheduler.plugins import (
    load_threshold,
    node_affinity,
    node_ready,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats


def run(plugin, pod, node, snap=None):
    snap = snap or snapshot([node])
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        plugin.pre_filter(state, pod, snap)
    return plugin.filter(state, pod, node, snap)


def test_fit_reports_every_missing_resource():
    node = make_node(cpu="1", memory="1Gi", pods=2, **{"nvidia.com/gpu": "1"})
    node.add_pod(make_pod("a", [container(cpu="600m", memory="512Mi")]))
    node.add_pod(make_pod("b", [container()]))
    pod = make_pod(
        containers=[container(cpu="500m", memory="600Mi", requests={"nvidia.com/gpu": "2"})]
    )
    status = run(node_resources_fit.Plugin(), pod, node)
    assert not status.ok
    assert status.reasons == (
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient nvidia.com/gpu",
    )


def test_fit_request_above_the_whole_node_is_unresolvable():
    """v1.34: a request no eviction can make room for is UnschedulableAndUnresolvable, so
    preemption skips the node; one that fits the empty node stays resolvable."""
    node = make_node(cpu="4", memory="1Gi", pods=1)
    node.add_pod(make_pod("a", [container(cpu="3")]))
    too_big = run(node_resources_fit.Plugin(), make_pod(containers=[container(cpu="9")]), node)
    assert too_big.reasons == ("Too many pods", "Insufficient cpu") and too_big.unresolvable
    crowded = run(node_resources_fit.Plugin(), make_pod(containers=[container(cpu="2")]), node)
    assert crowded.reasons == ("Too many pods", "Insufficient cpu")
    assert not crowded.unresolvable


def test_fit_accepts_exact_fit_and_counts_init_containers():
    node = make_node(cpu="1", memory="1Gi")
    assert run(node_resources_fit.Plugin(), make_pod(containers=[container(cpu="1")]), node).ok
    pod = make_pod(containers=[container(cpu="100m")], initContainers=[container(cpu="1100m")])
    assert run(node_resources_fit.Plugin(), pod, node).reasons == ("Insufficient cpu",)


def test_fit_extended_resource_absent_on_node_and_ignored_resources():
    node = make_node()
    pod = make_pod(
        containers=[container(requests={"example.com/foo": "1", "ephemeral-storage": "1"})]
    )
    assert run(node_resources_fit.Plugin(), pod, node).reasons == (
        "Insufficient ephemeral-storage",
        "Insufficient example.com/foo",
    )
    args = node_resources_fit.Args(frozenset({"ephemeral-storage"}), frozenset({"example.com"}))
    assert run(node_resources_fit.Plugin(args), pod, node).ok


TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "toleration,ok",
    [
        (None, False),
        ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, True),
        ({"key": "dedicated", "value": "gpu"}, True),  # empty effect matches every effect
        ({"key": "dedicated", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # empty key with Exists tolerates everything
        ({"key": "dedicated", "value": "cpu"}, False),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_taint_toleration_filter(toleration, ok):
    node = make_node(taints=[TAINT])
    pod = make_pod(tolerations=[toleration] if toleration else [])
    status = run(taint_toleration.Plugin(), pod, node)
    assert status.ok is ok
    if not ok:
        assert status.reason == "node(s) had untolerated taint(s)"


def test_prefer_no_schedule_does_not_filter_but_scores():
    soft = {"key": "spot", "value": "", "effect": "PreferNoSchedule"}
    a, b = make_node("a", taints=[soft, dict(soft, key="old")]), make_node("b")
    plugin = taint_toleration.Plugin()
    pod = make_pod()
    assert run(plugin, pod, a).ok
    snap, state = snapshot([a, b]), CycleState()
    assert plugin.pre_score(state, pod, [a, b], snap)
    scores = {n.name: plugin.score(state, pod, n, snap) for n in (a, b)}
    assert scores == {"a": 2, "b": 0}
    plugin.normalize(state, pod, scores)
    assert scores == {"a": 0, "b": 100}
    tolerant = make_pod(tolerations=[{"key": "spot", "operator": "Exists"}])
    assert plugin.score(state, tolerant, a, snap) == 1
    assert not plugin.pre_score(state, pod, [b], snapshot([b]))


def affinity(required=None, preferred=None):
    node_affinity_spec = {}
    if required is not None:
        node_affinity_spec["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": required
        }
    if preferred is not None:
        node_affinity_spec["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return {"nodeAffinity": node_affinity_spec}


def expr(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


@pytest.mark.parametrize(
    "expression,ok",
    [
        (expr("zone", "In", "a", "b"), True),
        (expr("zone", "In", "c"), False),
        (expr("zone", "NotIn", "c"), True),
        (expr("missing", "NotIn", "x"), True),
        (expr("zone", "Exists"), True),
        (expr("zone", "DoesNotExist"), False),
        (expr("missing", "DoesNotExist"), True),
        (expr("cores", "Gt", "8"), True),
        (expr("cores", "Gt", "16"), False),
        (expr("cores", "Lt", "17"), True),
        (expr("zone", "Gt", "1"), False),  # not an integer label
        (expr("cores", "Gt", "1", "2"), False),  # Gt takes exactly one value
    ],
)
def test_required_affinity_operators(expression, ok):
    node = make_node(labels={"zone": "a", "cores": "16"})
    pod = make_pod(affinity=affinity([{"matchExpressions": [expression]}]))
    status = run(node_affinity.Plugin(), pod, node)
    assert status.ok is ok
    if not ok:
        assert status.reason == "node(s) didn't match Pod's node affinity/selector"


def test_affinity_terms_or_and_fields_and_selector():
    node = make_node("n7", labels={"zone": "a"})
    plugin = node_affinity.Plugin()
    terms = [
        {"matchExpressions": [expr("zone", "In", "b")]},
        {"matchFields": [expr("metadata.name", "In", "n7")]},
    ]
    assert run(plugin, make_pod(affinity=affinity(terms)), node).ok
    both = [
        {
            "matchExpressions": [expr("zone", "In", "a")],
            "matchFields": [expr("metadata.name", "NotIn", "n7")],
        }
    ]
    assert not run(plugin, make_pod(affinity=affinity(both)), node).ok
    assert not run(plugin, make_pod(affinity=affinity([{}])), node).ok  # empty term: nothing
    assert not run(plugin, make_pod(affinity=affinity([])), node).ok
    assert run(plugin, make_pod(nodeSelector={"zone": "a"}), node).ok
    assert not run(plugin, make_pod(nodeSelector={"zone": "a", "gpu": "yes"}), node).ok
    assert run(plugin, make_pod(), node).ok


def test_preferred_affinity_scores_normalised():
    a, b, c = (
        make_node("a", labels={"ssd": "1", "zone": "x"}),
        make_node("b", labels={"ssd": "1"}),
        make_node("c"),
    )
    preferred = [
        {"weight": 30, "preference": {"matchExpressions": [expr("ssd", "Exists")]}},
        {"weight": 10, "preference": {"matchExpressions": [expr("zone", "In", "x")]}},
    ]
    pod, plugin, state = (
        make_pod(affinity=affinity(preferred=preferred)),
        node_affinity.Plugin(),
        CycleState(),
    )
    snap = snapshot([a, b, c])
    assert plugin.pre_score(state, pod, [a, b, c], snap)
    scores = {n.name: plugin.score(state, pod, n, snap) for n in (a, b, c)}
    assert scores == {"a": 40, "b": 30, "c": 0}
    plugin.normalize(state, pod, scores)
    assert scores == {"a": 100, "b": 75, "c": 0}


def test_unschedulable_node_unless_tolerated():
    node = make_node(unschedulable=True)
    plugin = node_unschedulable.Plugin()
    assert run(plugin, make_pod(), node).reason == "node(s) were unschedulable"
    tol = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    assert run(plugin, make_pod(tolerations=[tol]), node).ok
    assert run(plugin, make_pod(), make_node()).ok


def test_not_ready_node_unless_tolerated():
    plugin = node_ready.Plugin()
    assert run(plugin, make_pod(), make_node(ready=False)).reason == "node(s) were not ready"
    assert run(plugin, make_pod(tolerations=[{"operator": "Exists"}]), make_node(ready=False)).ok
    assert run(plugin, make_pod(), make_node()).ok


def test_load_threshold_uses_usage_prediction_and_recent_pods():
    node = make_node(cpu="2", memory="1Gi")
    plugin = load_threshold.Plugin(load_threshold.Args(cpu_threshold=80, memory_threshold=90))
    pod = make_pod(containers=[container(cpu="200m", memory="128Mi")])  # predicted 300m = 15 %
    fresh = {"n1": {"cpu": stats(avg=60), "memory": stats(avg=70)}}
    assert run(plugin, pod, node, snapshot([node], fresh)).ok  # 75 % cpu, 82.5 % memory
    hot = {"n1": {"cpu": stats(avg=66), "memory": stats(avg=70)}}
    assert run(plugin, pod, node, snapshot([node], hot)).reasons == (
        "node(s) were above the cpu load threshold",
    )
    assert not run(plugin, pod, node, snapshot([node], fresh, recent={"n1": 200})).ok
    full = {"n1": {"cpu": stats(avg=10), "memory": stats(avg=80)}}
    assert run(plugin, pod, node, snapshot([node], full)).reasons == (
        "node(s) were above the memory load threshold",
    )
