"""NodePorts, NodeName and the refusal of unsupported fields: pure unit tests."""

from __future__ import annotations

from scheduler.config.registry import new_plugin
from scheduler.framework import CycleState, snapshot_of
from scheduler.framework.profile import Profile
from scheduler.framework.status import PRE_FILTER_REJECTION, failure_message
from scheduler.framework.unsupported import unsupported_fields
from scheduler.plugins import node_name, node_ports
from tests.unit.plugin_helpers import make_node, make_pod


def _ported(name: str, *ports: dict) -> object:
    return make_pod(name, containers=[{"name": "c", "ports": list(ports)}])


def _verdict(plugin, pod, node, snap):
    state = CycleState()
    plugin.pre_filter(state, pod, snap)
    return plugin.filter(state, pod, node, snap)


def test_host_ports_are_parsed_with_upstream_defaults():
    pod = make_pod(
        "p",
        containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
        initContainers=[
            {
                "name": "side",
                "restartPolicy": "Always",
                "ports": [{"hostPort": 9, "protocol": "UDP"}],
            },
            {"name": "once", "ports": [{"hostPort": 10}]},  # finishes before the app: not held
        ],
    )
    assert sorted(pod.host_ports) == [("TCP", "0.0.0.0", 8080), ("UDP", "0.0.0.0", 9)]
    assert (
        make_pod("q", containers=[{"name": "c", "ports": [{"containerPort": 80}]}]).host_ports == ()
    )


def test_port_conflicts_follow_host_ip_rules():
    used = {("TCP", "10.0.0.1", 80): 1}
    assert node_ports.conflicts((("TCP", "0.0.0.0", 80),), used)  # all IPs include 10.0.0.1
    assert node_ports.conflicts((("TCP", "10.0.0.1", 80),), used)
    assert not node_ports.conflicts((("TCP", "10.0.0.2", 80),), used)
    assert not node_ports.conflicts((("UDP", "10.0.0.1", 80),), used)
    assert not node_ports.conflicts((("TCP", "10.0.0.1", 81),), used)
    wildcard = {("TCP", "0.0.0.0", 80): 1}
    assert node_ports.conflicts((("TCP", "10.0.0.2", 80),), wildcard)


def test_node_ports_filter_counts_placed_pods_and_forgets_removed_ones():
    a, b = make_node("a"), make_node("b")
    first = _ported("first", {"hostPort": 8080})
    snap = snapshot_of([a, b], [(first, "a")])
    plugin = new_plugin(node_ports.NAME)
    second = _ported("second", {"hostPort": 8080})
    refused = _verdict(plugin, second, a, snap)
    assert not refused.ok and refused.reason == node_ports.REASON and not refused.unresolvable
    assert _verdict(plugin, second, b, snap).ok
    a.remove_pod(first)
    assert a.used_ports == {} and _verdict(plugin, second, a, snap).ok
    assert plugin.pre_filter(CycleState(), make_pod("plain"), snap) is False


def test_node_name_filter():
    plugin = new_plugin(node_name.NAME)
    pod = make_pod("p", nodeName="b")
    snap = snapshot_of([make_node("a"), make_node("b")])
    refused = _verdict(plugin, pod, snap.nodes["a"], snap)
    assert refused.reason == node_name.REASON and refused.unresolvable
    assert _verdict(plugin, pod, snap.nodes["b"], snap).ok


def test_unsupported_fields_refuse_the_pod_with_upstream_shaped_text():
    claim = {"name": "gpu", "resourceClaimTemplateName": "t"}
    pod = make_pod("dra", containers=[{"name": "c"}], resourceClaims=[claim])
    assert [f for f, _ in unsupported_fields(pod.raw)] == ["spec.resourceClaims"]
    profile = Profile("ballast", [new_plugin(node_ports.NAME)], [])
    state = CycleState()
    nodes = [make_node("a"), make_node("b")]
    feasible, reasons = profile.filter(pod, nodes, snapshot_of(nodes), state)
    assert feasible == [] and set(reasons) == {"a", "b"}
    assert state[PRE_FILTER_REJECTION].unresolvable
    message = failure_message(2, reasons, state)
    assert message.startswith("0/2 nodes are available: pod uses fields this scheduler does")
    assert "spec.resourceClaims" in message and message.endswith(".")
    assert unsupported_fields(make_pod("plain").raw) == []
