"""GpuLoad (plugins/gpu_load.py) and the GPU answer's parser (backend/gpus_client.py)."""

from __future__ import annotations

import pytest

from scheduler.backend.gpus_client import parse_gpus
from scheduler.config import registry
from scheduler.framework import CycleState
from scheduler.framework.errors import ConfigError
from scheduler.framework.fields import Fields
from scheduler.framework.gpus import GpuLoads, GpuStats
from scheduler.framework.profile import Profile
from scheduler.framework.snapshot import snapshot_of
from scheduler.framework.status import failure_message
from scheduler.plugins import gpu_load, node_resources_fit
from tests.unit.plugin_helpers import container, make_node, make_pod

NOW = 10_000.0
GPU = "nvidia.com/gpu"
SHARED = "nvidia.com/gpu.shared"


def gpu_pod(name: str, count: int = 1, memory: str | None = "8Gi", util: str | None = None,
            resource: str = GPU):  # fmt: skip
    annotations = {}
    if memory is not None:
        annotations["ballast.io/gpu-memory"] = memory
    if util is not None:
        annotations["ballast.io/gpu-util"] = util
    pod = make_pod(name, [container(cpu="100m", requests={resource: str(count)},
                                    limits={resource: str(count)})])  # fmt: skip
    pod.raw["metadata"]["annotations"] = annotations
    return pod


def gpu(index: str, util: float, used_gib: float, total_gib: float = 40, age: float = 1.0,
        pods: tuple[str, ...] | None = None):  # fmt: skip
    used = used_gib * 1024
    return GpuStats(index, util, used, total_gib * 1024 - used, NOW - age, 30.0, pods)


def snap(nodes, gpus: dict[str, tuple[GpuStats, ...]], placed=()):
    s = snapshot_of(nodes, list(placed), now=NOW)
    s.gpus = GpuLoads(gpus, expiry=300.0, built=NOW)
    return s


def gpu_node(name: str, count: int = 2):
    return make_node(name, cpu="8", memory="32Gi", **{GPU: str(count), SHARED: str(4 * count)})


def verdicts(plugin, pod, s):
    state = CycleState()
    active = plugin.pre_filter(state, pod, s)
    return active, {n: plugin.filter(state, pod, node, s) for n, node in s.nodes.items()}


def test_pods_without_gpus_are_skipped_at_once():
    plugin = gpu_load.Plugin()
    pod = make_pod("web", [container(cpu="1")])
    s = snap([gpu_node("g1")], {"g1": (gpu("0", 99, 39),)})
    state = CycleState()
    assert plugin.pre_filter(state, pod, s) is False
    assert plugin.pre_score(state, pod, list(s.nodes.values()), s) is False


def test_filter_refuses_a_node_where_no_gpu_has_the_memory():
    plugin = gpu_load.Plugin()
    nodes = [gpu_node("full"), gpu_node("roomy"), gpu_node("unmeasured"), gpu_node("expired")]
    s = snap(
        nodes,
        {
            "full": (gpu("0", 10, 36), gpu("1", 10, 35)),  # 4 and 5 GiB free
            "roomy": (gpu("0", 90, 36), gpu("1", 90, 30)),  # 10 GiB free on one
            "expired": (gpu("0", 10, 40, age=301),),
        },
    )
    active, result = verdicts(plugin, gpu_pod("train", memory="8Gi"), s)
    assert active is True
    assert result["full"].reasons == ("node(s) had no GPU with 8192 MiB free",)
    assert result["roomy"].ok
    assert result["unmeasured"].ok and result["expired"].ok  # counts only: never by metrics
    # Two GPUs of 8 GiB each: "roomy" has one.
    _, result = verdicts(plugin, gpu_pod("wide", count=2, memory="8Gi"), s)
    assert not result["roomy"].ok
    # No memory need known: nothing to refuse.
    active, result = verdicts(plugin, gpu_pod("any", memory=None), s)
    assert active is False and all(v.ok for v in result.values())


def test_placed_pods_count_before_the_window_shows_them():
    plugin = gpu_load.Plugin()
    measured = {"g1": (gpu("0", 0, 20), gpu("1", 0, 20))}  # 20 GiB free on each GPU

    def verdict(placed_pods: int):
        placed = [(gpu_pod(f"new-{i}", memory="12Gi"), "g1") for i in range(placed_pods)]
        s = snap([gpu_node("g1")], measured, placed)
        return verdicts(plugin, gpu_pod("next", memory="12Gi"), s)[1]["g1"]

    assert verdict(2).ok  # 80 - max(40 measured, 24 placed) = 40 GiB left
    assert verdict(5).ok  # 80 - 60 placed = 20 GiB left
    assert not verdict(6).ok  # 80 - 72 placed = 8 GiB left, though the window says 40


def score(plugin, pod, s):
    state = CycleState()
    nodes = list(s.nodes.values())
    assert plugin.pre_score(state, pod, nodes, s)
    return dict(zip(s.nodes, plugin.score_all(state, pod, nodes, s), strict=True)), state


def test_score_prefers_idle_compute_and_free_memory():
    plugin = gpu_load.Plugin()
    nodes = [gpu_node("busy"), gpu_node("idle"), gpu_node("idle-full"), gpu_node("dark")]
    s = snap(
        nodes,
        {
            "busy": (gpu("0", 90, 10), gpu("1", 80, 10)),
            "idle": (gpu("0", 10, 10), gpu("1", 0, 10)),
            "idle-full": (gpu("0", 10, 38), gpu("1", 0, 38)),
        },
    )
    scores, state = score(plugin, gpu_pod("infer", memory="4Gi", resource=SHARED), s)
    assert scores["idle"] > scores["idle-full"] > scores["busy"]
    # idle: busy 5 % -> 95; memory (80 - 20 - 4) / 80 -> 70; mean 82.5 -> 82 (round half even)
    assert scores["idle"] == 82
    # no GPU data: the mean of the others, counted as a fallback
    known = [scores[n] for n in ("busy", "idle", "idle-full")]
    assert abs(scores["dark"] - sum(known) / 3) <= 1
    assert state.fallbacks.get("missing") == 1


def test_placed_pods_compute_counts_in_the_score():
    plugin = gpu_load.Plugin()
    placed = [(gpu_pod(f"p{i}", memory="1Gi", util="50"), "fresh") for i in range(3)]
    nodes = [gpu_node("fresh"), gpu_node("other")]
    measured = {
        "fresh": (gpu("0", 0, 0), gpu("1", 0, 0)),
        "other": (gpu("0", 40, 3), gpu("1", 40, 0)),
    }
    scores, _ = score(plugin, gpu_pod("next", memory="1Gi"), snap(nodes, measured, placed))
    # fresh: 150 % placed over 2 GPUs = 75 % busy although the window still says 0
    assert scores["other"] > scores["fresh"]


def test_unschedulable_message_names_the_gpu_memory():
    profile = Profile("ballast", [node_resources_fit.Plugin(), gpu_load.Plugin()], [])
    nodes = [gpu_node("a"), gpu_node("b"), make_node("cpu-only", cpu="8", memory="32Gi")]
    s = snap(nodes, {"a": (gpu("0", 0, 39),), "b": (gpu("0", 0, 38),)})
    state = CycleState()
    feasible, reasons = profile.filter(gpu_pod("big", memory="20Gi"), nodes, s, state)
    assert feasible == []
    message = failure_message(len(nodes), reasons, state)
    assert "2 node(s) had no GPU with 20480 MiB free" in message
    assert "1 Insufficient nvidia.com/gpu" in message


def test_args_and_registry():
    assert "GpuLoad" in registry.names() and registry.points("GpuLoad") == {"filter", "score"}
    args = registry.parse_args(
        "GpuLoad",
        Fields({"resourceNames": ["example.com/gpu"], "defaultMemory": "2Gi", "utilWeight": 2},
               "GpuLoad"),
    )  # fmt: skip
    assert args.resource_names == ("example.com/gpu",) and args.default_memory_mib == 2048
    plugin = gpu_load.Plugin(args)
    s = snap([gpu_node("g")], {"g": (gpu("0", 0, 39),)})
    pod = gpu_pod("other-vendor", memory=None, resource="example.com/gpu")
    _, result = verdicts(plugin, pod, s)  # 2 GiB by default, 1 GiB free
    assert not result["g"].ok
    for bad in ({"resourceNames": []}, {"defaultMemory": "lots"}, {"utilWeight": 0,
                "memoryWeight": 0}, {"typo": 1}):  # fmt: skip
        with pytest.raises(ConfigError):
            registry.parse_args("GpuLoad", Fields(bad, "GpuLoad"))


def test_malformed_annotations_count_as_absent():
    plugin = gpu_load.Plugin()
    s = snap([gpu_node("g")], {"g": (gpu("0", 0, 39),)})
    _, result = verdicts(plugin, gpu_pod("typo", memory="eight gigs", util="lots"), s)
    assert result["g"].ok


def test_parse_gpus_keeps_good_gpus_and_drops_bad_ones():
    good = {"util": {"avg": 150}, "fbUsed": {"latest": 10}, "fbFree": {"latest": 30},
            "last": NOW, "horizon": 4}  # fmt: skip
    doc = {
        "expiry": 120,
        "built": NOW,
        "nodes": {
            "a": {"gpus": {"1": good, "0": {**good, "util": {"avg": "x"}}}},
            "b": {"gpus": {"0": {**good, "last": None}}},
            "c": "nonsense",
        },
        "workloads": {
            "ns/Deployment/x": {"memory": {"p95": 100}, "util": {"p95": 5}},
            "ns/Deployment/y": {"memory": {"p95": -1}, "util": {"p95": 5}},
        },
    }
    loads = parse_gpus(doc)
    assert list(loads.by_node) == ["a"] and loads.expiry == 120.0
    assert loads.workloads == {"ns/Deployment/x": (100.0, 5.0)}
    (one,) = loads.by_node["a"]
    assert one.index == "1" and one.util == 100.0 and one.fb_total == 40.0
    assert loads.live("a", NOW + 121) == ()
    with pytest.raises(ValueError):
        parse_gpus({"nodes": []})


def test_a_workloads_measured_gpu_use_stands_in_for_the_annotation():
    plugin = gpu_load.Plugin()
    owner = {"kind": "ReplicaSet", "name": "infer-abc", "controller": True}

    def replica(name: str, **notes: str):
        pod = gpu_pod(name, memory=None, resource=SHARED)
        pod.raw["metadata"].update(ownerReferences=[owner], labels={"pod-template-hash": "abc"})
        pod.raw["metadata"]["annotations"] = notes
        return pod

    s = snap([gpu_node("g")], {"g": (gpu("0", 0, 30),)})  # 10 GiB free
    s.gpus = GpuLoads(s.gpus.by_node, 300.0, NOW, {"ns/Deployment/infer": (12288.0, 55.0)})
    _, result = verdicts(plugin, replica("infer-abc-1"), s)
    assert result["g"].reasons == ("node(s) had no GPU with 12288 MiB free",)
    need = gpu_load.need_of(replica("infer-abc-2"), plugin.args, s.gpus)
    assert need == gpu_load.Need(1, 12288.0, 55.0, shared=True)
    # the pod's own word comes first
    need = gpu_load.need_of(replica("infer-abc-3", **{"ballast.io/gpu-memory": "1Gi"}),
                            plugin.args, s.gpus)  # fmt: skip
    assert need == gpu_load.Need(1, 1024.0, 55.0, shared=True)


def test_with_the_pod_mapping_the_gpu_the_device_plugin_would_give_is_judged():
    plugin = gpu_load.Plugin()
    measured = {"g": (gpu("0", 80, 30, pods=("ns/a",)), gpu("1", 0, 0, pods=()))}

    def verdict(placed=(), memory="16Gi"):
        s = snap([gpu_node("g")], measured, [(p, "g") for p in placed])
        pod = gpu_pod("next", memory=memory, resource=SHARED)
        return verdicts(plugin, pod, s)[1]["g"], s

    # GPU 1 has no pod: a replica goes there, and 40 GiB are free on it
    status, s = verdict()
    assert status.ok
    scores, _ = score(plugin, gpu_pod("next", memory="16Gi", resource=SHARED), s)
    assert scores["g"] == 80  # idle 100, memory (40 - 16) / 40 = 60
    # "a" is measured on GPU 0; "b" was just placed and goes to GPU 1, the one with no pod;
    # the next replica then gets GPU 0 (one pod each, the lower index): 10 GiB free there,
    # though GPU 1 still has 20 and the node 30
    a = gpu_pod("a", memory="30Gi", resource=SHARED)
    b = gpu_pod("b", memory="20Gi", resource=SHARED)
    status, _ = verdict([a, b])
    assert status.reasons == ("node(s) had no GPU with 16384 MiB free",)
    assert verdict([a, b], memory="10Gi")[0].ok


def test_without_the_pod_mapping_the_node_level_view_judges():
    plugin = gpu_load.Plugin()
    placed = [(gpu_pod("a", memory="30Gi", resource=SHARED), "g")]
    # no pod listed on any GPU of the cluster: the mapping is off (or nothing runs yet)
    s = snap([gpu_node("g")], {"g": (gpu("0", 80, 30, pods=()), gpu("1", 0, 0, pods=()))}, placed)
    assert gpu_load.predicted_gpus(s.nodes["g"], s, plugin.args) is None
    _, result = verdicts(plugin, gpu_pod("next", memory="16Gi", resource=SHARED), s)
    assert result["g"].ok  # GPU 1 has 40 GiB free, the node 50


def test_a_mapped_pod_still_starting_counts_at_its_need():
    plugin = gpu_load.Plugin()
    a = gpu_pod("a", memory="30Gi", resource=SHARED)
    # the mapping shows "a" on the GPU, which measures 2 GiB used: "a" is still ramping up
    s = snap([gpu_node("g")], {"g": (gpu("0", 5, 2, pods=("ns/a",)),)}, [(a, "g")])
    _, result = verdicts(plugin, gpu_pod("next", memory="16Gi", resource=SHARED), s)
    assert not result["g"].ok


def test_a_node_whose_pods_are_not_listed_yet_is_judged_per_gpu_once_the_mapping_is_on():
    plugin = gpu_load.Plugin()
    placed = [(gpu_pod(f"new-{i}", memory="12Gi", resource=SHARED), "fresh") for i in range(3)]
    measured = {
        "other": (gpu("0", 10, 8, pods=("ns/old",)),),  # the mapping is on: it lists a pod
        "fresh": (gpu("0", 0, 0, pods=()), gpu("1", 0, 0, pods=())),
    }
    s = snap([gpu_node("other"), gpu_node("fresh")], measured, placed)
    views = gpu_load.predicted_gpus(s.nodes["fresh"], s, plugin.args)
    # new-0 and new-2 on GPU 0, new-1 on GPU 1, as the device plugin spreads them
    assert [(v.pods, v.used_mib) for v in views] == [(2, 24576.0), (1, 12288.0)]
    _, result = verdicts(plugin, gpu_pod("next", memory="20Gi", resource=SHARED), s)
    assert result["fresh"].ok  # GPU 1: 28 GiB free
    _, result = verdicts(plugin, gpu_pod("next", memory="30Gi", resource=SHARED), s)
    assert not result["fresh"].ok  # though the node has 44 GiB left


def test_stale_gpu_figures_never_refuse_a_node():
    plugin = gpu_load.Plugin()
    fresh = gpu("0", 10, 39, age=1.0)  # 1 GiB free, horizon 30 s
    stale = gpu("0", 10, 39, age=60.0)  # the same, a minute old: past its horizon
    s = snap([gpu_node("fresh"), gpu_node("stale")], {"fresh": (fresh,), "stale": (stale,)})
    _, result = verdicts(plugin, gpu_pod("p", memory="8Gi"), s)
    assert not result["fresh"].ok and result["stale"].ok
    scores, _ = score(plugin, gpu_pod("p", memory="8Gi"), s)
    assert scores["stale"] == scores["fresh"]  # still read for the score


def test_mig_instances_and_whole_gpus_on_one_node_are_ordered_together():
    views = [
        gpu_load.GpuView("1", 1, 0.0, 40960.0, 10.0),
        gpu_load.GpuView("0-mig2", 0, 0.0, 4864.0, 0.0),
        gpu_load.GpuView("0-mig1", 0, 0.0, 4864.0, 0.0),
        gpu_load.GpuView("2", 0, 0.0, 40960.0, 0.0),
    ]
    # the fewest pods first; among those whole GPUs by number, then instances by name
    whole = gpu_load.assign(views, gpu_load.Need(3, 1024.0, 10.0))
    assert [v.index for v in whole] == ["2", "0-mig1", "0-mig2"]
    shared = gpu_load.assign(views, gpu_load.Need(1, 1024.0, 10.0, shared=True))
    assert [v.index for v in shared] == ["2"]
