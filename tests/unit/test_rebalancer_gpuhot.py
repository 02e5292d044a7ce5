"""GPU-hot classification and candidate choice (scheduler/rebalancer/gpuhot.py)."""

from __future__ import annotations

from scheduler.framework.gpus import GpuLoads, GpuStats
from scheduler.framework.profile import Profile
from scheduler.plugins import gpu_load, node_resources_fit
from scheduler.rebalancer import gpuhot
from scheduler.rebalancer.gpuhot import GpuRule
from tests.unit.plugin_helpers import container, make_pod

NOW = 10_000.0
GPU = "nvidia.com/gpu"
SHARED = "nvidia.com/gpu.shared"
NAMES = (GPU, SHARED)
RULE = GpuRule(util_high=80.0, memory_high=90.0)


def gpu(index: str, util: float, used_gib: float, total_gib: float = 40, age: float = 1.0,
        pods: tuple[str, ...] | None = None):  # fmt: skip
    used = used_gib * 1024
    return GpuStats(index, util, used, total_gib * 1024 - used, NOW - age, 30.0, pods)


def loads(by_node):
    return GpuLoads(by_node, expiry=300.0, built=NOW)


def pod(name: str, resource: str | None = GPU):
    requests = {resource: "1"} if resource else {}
    return make_pod(name, [container(cpu="100m", requests=requests)])


def test_a_node_is_gpu_hot_on_utilisation_or_memory_above_its_threshold():
    view = loads(
        {
            "busy": (gpu("0", 10, 1), gpu("1", 85, 1)),  # one GPU over utilHigh
            "full": (gpu("0", 10, 37),),  # 92.5 % of the framebuffer
            "edge": (gpu("0", 80, 36),),  # exactly at both thresholds: not above
            "calm": (gpu("0", 50, 20),),
        }
    )
    hot = gpuhot.gpu_hot_nodes(["busy", "full", "edge", "calm", "cpu-only"], view, NOW, RULE)
    assert sorted(hot) == ["busy", "full"]
    assert [g.index for g in hot["busy"]] == ["1"]


def test_stale_or_missing_gpu_figures_never_make_a_node_hot():
    view = loads(
        {
            # one GPU past its 30 s horizon: the node's figures are not all fresh
            "stale": (gpu("0", 99, 39), gpu("1", 10, 1, age=31.0)),
            "expired": (gpu("0", 99, 39, age=400.0),),
            "fresh": (gpu("0", 99, 39, age=29.0),),
        }
    )
    hot = gpuhot.gpu_hot_nodes(["stale", "expired", "fresh", "absent"], view, NOW, RULE)
    assert list(hot) == ["fresh"]


def test_only_gpu_pods_are_candidates_those_on_a_hot_gpu_first():
    pods = [pod("cpu", None), pod("a"), pod("b", SHARED), pod("c"), pod("other", "example/x")]
    hot = [gpu("1", 99, 1, pods=("ns/c",))]
    chosen = gpuhot.gpu_candidates(pods, NAMES, hot)
    assert [p.name for p in chosen] == ["c", "a", "b"]
    assert [p.name for p in gpuhot.gpu_candidates(pods, NAMES)] == ["a", "b", "c"]
    assert gpuhot.gpu_candidates(pods, ()) == []


def test_the_gpu_resource_names_come_from_the_profiles_gpu_load():
    args = gpu_load.Args(resource_names=("example.com/gpu",))
    with_gpus = Profile("p", [], [(gpu_load.Plugin(args), 1)])
    assert gpuhot.gpu_resource_names(with_gpus) == ("example.com/gpu",)
    without = Profile("p", [node_resources_fit.Plugin()], [])
    assert gpuhot.gpu_resource_names(without) is None
