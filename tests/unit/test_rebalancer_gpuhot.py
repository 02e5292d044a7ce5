"""GPU-hot classification and candidate choice (scheduler/rebalancer/gpuhot.py)."""

from __future__ import annotations

from scheduler.framework.gpus import GpuLoads, GpuStats
from scheduler.framework.profile import Profile
from scheduler.framework.resources import node_info
from scheduler.framework.snapshot import snapshot_of
from scheduler.plugins import gpu_load, node_resources_fit
from scheduler.rebalancer import gpuhot
from scheduler.rebalancer.classify import UNKNOWN, HotStreaks, classify_gpus
from scheduler.rebalancer.gpuhot import GpuRule
from scheduler.rebalancer.judge import ELSEWHERE, Judge
from scheduler.rebalancer.settings import RebalancerSettings
from tests.unit import test_rebalancer_judge as tj
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


# --- the judge: a GPU-hot node loses GPU pods only -----------------------------------------
def gpu_node_doc(name: str):
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", GPU: "2"}
    return node_info(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def running(name: str, gpus: int = 0):
    requests = {"cpu": "500m", **({GPU: str(gpus)} if gpus else {})}
    body = {"metadata": {"name": name}, "spec": {"containers": [container(requests=requests)]}}
    return tj.replica(body, "ml", f"{name}-rs")


def gpu_cluster(gpu_c_cpu: float = 20):
    nodes = [gpu_node_doc(n) for n in ("gpu-a", "gpu-b", "gpu-c")]
    placed = [
        (running("web"), "gpu-a"),
        (running("train", 1), "gpu-a"),
        (running("serve", 1), "gpu-a"),
    ]
    # gpu-a's CPU is normal (under high 80, over low 50); gpu-b and gpu-c are cold.
    loads_ = {"gpu-a": tj.cpu_load(60), "gpu-b": tj.cpu_load(20), "gpu-c": tj.cpu_load(gpu_c_cpu)}
    return snapshot_of(nodes, placed, loads_)


def gpu_judge():
    return Judge(
        tj.PROFILE,
        RebalancerSettings(score_margin=0, max_per_node=3),
        tj.ESTIMATOR,
        lambda w: False,
        NAMES,
    )


def test_a_gpu_hot_node_loses_one_gpu_pod_the_one_on_its_hot_gpu_to_a_node_not_gpu_hot():
    # gpu-c, GPU-hot, is cooler on CPU than gpu-b: this profile (no GpuLoad) scores it lower.
    snap = gpu_cluster(gpu_c_cpu=5)
    hot = {"gpu-a": [gpu("1", 99, 1, pods=("ml/train",))], "gpu-c": [gpu("0", 99, 1)]}
    plan = gpu_judge().plan(tj.view_of(snap), ["gpu-a"], snap, hot, frozenset({"gpu-a"}))
    assert [(m.pod.name, m.source, m.target, m.reason) for m in plan.moves] == [
        ("train", "gpu-a", "gpu-b", gpuhot.GPU_HOT)
    ]
    assert "GPU-hot" in plan.moves[0].note()
    # Scored alike (both cold at 20 %), the scheduler may pick the GPU-hot node: no move.
    snap = gpu_cluster()
    plan = gpu_judge().plan(tj.view_of(snap), ["gpu-a"], snap, hot, frozenset({"gpu-a"}))
    assert plan.moves == []
    assert [(s.pod, s.reason) for s in plan.skips if s.pod == "ml/train"] == [
        ("ml/train", ELSEWHERE)
    ]


def test_without_gpu_hot_figures_a_cpu_normal_node_loses_nothing():
    snap = gpu_cluster()
    assert gpu_judge().plan(tj.view_of(snap), ["gpu-a"], snap).moves == []
    # GPU-hot but not confirmed so (`gpu_only`): the CPU rules, which find it not over high.
    hot = {"gpu-a": [gpu("1", 99, 1)]}
    assert gpu_judge().plan(tj.view_of(snap), ["gpu-a"], snap, hot).moves == []


def test_gpu_streaks_count_new_samples_and_start_over_on_stale_figures():
    streaks = HotStreaks()

    def observe(age: float, util: float = 99.0) -> int:
        _, view = classify_gpus(["n"], loads({"n": (gpu("0", util, 1, age=age),)}), NOW, RULE)
        streaks.observe(view)
        states.append(view.state["n"])
        return streaks.count.get("n", 0)

    states: list[str] = []
    assert observe(5.0) == 1
    assert observe(5.0) == 1  # the same sample again: no new evidence
    assert observe(1.0) == 2
    assert observe(31.0) == 0  # past its horizon: unknown, the streak starts over
    assert states[-1] == UNKNOWN
    assert observe(0.5) == 1
    assert observe(0.2, util=10.0) == 0  # cooler
    hot, view = classify_gpus(["n", "none"], loads({}), NOW, RULE)
    assert hot == {} and view.state == {"n": UNKNOWN, "none": UNKNOWN}
