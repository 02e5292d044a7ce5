import pytest

from scheduler.framework.resources import effective, node_info, pod_info, predicted_cpu_m
from shared.quantities import QuantityError, bytes_value, cpu_millis
from tests.unit.plugin_helpers import container, make_node, make_pod

GI = 1024**3
MI = 1024**2


def test_requests_sum_containers_and_take_largest_init_container():
    pod = make_pod(
        containers=[container(cpu="100m", memory="100Mi"), container(cpu="200m")],
        initContainers=[container(cpu="500m", memory="50Mi"), container(cpu="50m")],
    )
    assert pod.requests == {"cpu": 500, "memory": 100 * MI}


def test_sidecars_run_beside_later_init_containers_and_the_app():
    spec = {
        "containers": [container(cpu="100m")],
        "initContainers": [
            container(cpu="200m", restartPolicy="Always"),  # sidecar
            container(cpu="250m"),  # runs beside the sidecar: 450m
        ],
    }
    # app phase: 100m + 200m sidecar = 300m; init peak 450m wins
    assert effective(spec, "requests") == {"cpu": 450}
    spec["initContainers"][1] = container(cpu="50m")
    assert effective(spec, "requests") == {"cpu": 300}


def test_overhead_and_extended_resources_and_limits():
    pod = make_pod(
        containers=[
            container(
                cpu="1",
                requests={"nvidia.com/gpu": "2", "ephemeral-storage": "1Gi"},
                limits={"cpu": "2", "memory": "1Gi"},
            )
        ],
        overhead={"cpu": "250m", "memory": "64Mi"},
    )
    assert pod.requests == {
        "cpu": 1250,
        "nvidia.com/gpu": 2,
        "ephemeral-storage": GI,
        "memory": 64 * MI,
    }
    assert pod.limits == {"cpu": 2250, "memory": GI + 64 * MI}


def test_nonzero_requests_default_per_container():
    pod = make_pod(containers=[container(), container(cpu="300m")])
    assert pod.requests == {"cpu": 300}
    assert pod.nonzero_requests == {"cpu": 400, "memory": 400 * MI}


def test_pod_metadata_fields():
    pod = pod_info(
        {
            "metadata": {
                "name": "a",
                "namespace": "x",
                "uid": "u1",
                "creationTimestamp": "2024-01-01T00:00:10Z",
            },
            "spec": {"schedulerName": "ballast", "priority": 7, "containers": []},
            "status": {"phase": "Pending"},
        }
    )
    assert (pod.key, pod.uid, pod.scheduler_name, pod.priority) == ("x/a", "u1", "ballast", 7)
    assert pod.created == 1704067210.0
    assert pod.phase == "Pending" and pod.node_name == ""
    assert pod_info({"metadata": {"name": "b"}, "spec": {}}).scheduler_name == "default-scheduler"


def test_bad_quantity_is_a_clear_error():
    with pytest.raises(QuantityError):
        make_pod(containers=[container(cpu="lots")])


def test_quantities_parsed_once_per_string_give_the_same_values_and_errors():
    cases = {"100m": 100, "1.5": 1500, "2": 2000, "1e-3": 1, "0.0001": 1, 3: 3000, 0.25: 250}
    for _ in range(2):  # the second time from the cache
        assert {q: cpu_millis(q) for q in cases} == cases
        assert bytes_value("1Gi") == GI and bytes_value("1k") == 1000 and bytes_value(5) == 5
    for bad in ("lots", "", "nan", True, {"cpu": "1"}, ["1"]):
        for _ in range(2):  # an error is not remembered as a value
            with pytest.raises(QuantityError):
                cpu_millis(bad)
            with pytest.raises(QuantityError):
                bytes_value(bad)


def test_node_info_capacity_allocatable_ready():
    node = make_node(
        cpu="4", memory="8Gi", allocatable={"cpu": "3800m", "memory": "7Gi", "pods": "50"}
    )
    assert node.capacity["cpu"] == 4000 and node.allocatable["cpu"] == 3800
    assert node.allocatable["pods"] == 50 and node.ready
    assert not make_node(ready=False).ready
    tainted = make_node(taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}])
    assert not tainted.ready
    bare = node_info({"metadata": {"name": "b"}, "status": {"capacity": {"cpu": "1"}}})
    assert bare.allocatable == {"cpu": 1000} and not bare.ready


def test_add_and_remove_pods_keep_sums():
    node = make_node()
    a = make_pod("a", [container(cpu="100m", memory="1Mi", limits={"cpu": "200m"})])
    b = make_pod("b", [container(cpu="300m")])
    node.add_pod(a)
    node.add_pod(b)
    node.add_pod(a)  # the same uid again replaces, never double counts
    assert node.requested == {"cpu": 400, "memory": MI}
    assert node.limits == {"cpu": 200}
    assert node.nonzero_requested == {"cpu": 400, "memory": MI + 200 * MI}
    assert node.limits_or_requests == {"cpu": 500, "memory": MI}  # max(limit, request) per pod
    assert node.remove_pod(a) and not node.remove_pod(a)
    assert node.requested == {"cpu": 300} and node.limits == {}
    assert list(node.pods) == ["uid-b"]
    for _ in range(2):  # a preemption trial takes pods off and on: the sums come back exactly
        assert node.remove_pod(b)
        sums = (node.requested, node.nonzero_requested, node.limits_or_requests, node.limits)
        assert sums == ({}, {}, {}, {})  # nothing left at zero
        node.add_pod(b)
        node.add_pod(a)
        assert node.limits_or_requests == {"cpu": 500, "memory": MI}
        assert node.remove_pod(a)


def test_predicted_cpu_limit_then_request_times_multiplier_then_default():
    pod = make_pod(
        containers=[
            container(cpu="100m", limits={"cpu": "700m"}),  # limit wins: 700
            container(cpu="333m"),  # round(333 * 1.5 = 499.5) = 500 (Go rounds half away)
            container(memory="1Gi"),  # no cpu at all: default 1000
        ],
        initContainers=[container(cpu="4")],  # ignored: finished before the load counts
        overhead={"cpu": "10m"},
    )
    assert predicted_cpu_m(pod) == 700 + 500 + 1000 + 10
    assert predicted_cpu_m(pod, default_m=0, multiplier=1.0) == 700 + 333 + 10
