"""GPU nodes and the simulated dcgm-exporter that follows GPU pods (sandbox/load/gpusim.py,
dcgm.py)."""

from __future__ import annotations

from sandbox.cluster.nodes import node_body
from sandbox.load import gpusim
from sandbox.load.exporter import SyntheticExporter
from sandbox.load.simulator import PodUse, SimulatorConfig, node_capacity

CONFIG = SimulatorConfig(ramp_seconds=10.0)


def pod(name: str, resource: str = gpusim.SHARED, count: int = 1, **notes: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": name, "annotations": notes},
        "spec": {"containers": [{"resources": {"limits": {resource: str(count)}}}]},
    }


def test_gpu_nodes_advertise_whole_or_time_sliced_gpus():
    whole, shared = gpusim.gpu_node_specs(1, gpus=2), gpusim.gpu_node_specs(1, gpus=2, replicas=4)
    body = node_body(whole[0]).to_dict()
    assert body["status"]["allocatable"][gpusim.WHOLE] == "2"
    assert node_body(shared[0]).to_dict()["status"]["capacity"][gpusim.SHARED] == "8"
    node = {"metadata": {"labels": shared[0].labels}, "status": {"allocatable": {}}}
    assert gpusim.node_gpus(node) == gpusim.NodeGpus(2, 40960.0, "NVIDIA A100 SXM4 40GB")
    assert gpusim.node_gpus({"metadata": {}, "status": {"allocatable": {"cpu": "4"}}}) is None


def test_pod_gpu_reads_requests_and_annotations():
    assert gpusim.pod_gpu({"metadata": {}, "spec": {"containers": [{}]}}) is None
    got = gpusim.pod_gpu(pod("a", **{"ballast.io/gpu-memory": "8Gi", "ballast.io/gpu-util": "40"}))
    assert got == gpusim.PodGpu(1, True, 8192.0, 40.0)
    # what it really uses, when it says less than that; a bad annotation is no annotation
    noted = {"ballast.io/gpu-memory": "1Gi", "sandbox.ballast.io/gpu-memory-use": "10Gi",
             "ballast.io/gpu-util": "lots"}  # fmt: skip
    got = gpusim.pod_gpu(pod("b", gpusim.WHOLE, 2, **noted))
    assert got == gpusim.PodGpu(2, False, 10240.0, gpusim.DEFAULT_UTIL)


def use(name: str, node: str, started: float, doc: dict) -> PodUse:
    return PodUse(f"ml/{name}", node, 0, 0, started, gpusim.pod_gpu(doc))


def test_gpu_figures_follow_the_pods_placed():
    exporter = SyntheticExporter().start()  # started: stop() waits for its loop
    try:
        sim = gpusim.GpuSimulator(exporter)
        spec = gpusim.gpu_node_specs(1, gpus=2, replicas=4)[0]
        nodes = {spec.name: node_capacity(node_body(spec).to_dict())}
        note = {"ballast.io/gpu-memory": "10Gi", "ballast.io/gpu-util": "60"}
        pods = [use(f"p{i}", spec.name, 100.0 + i, pod(f"p{i}", **note)) for i in range(3)]
        sim(nodes, pods, 105.0, CONFIG)  # p0 half ramped, p1 0.4, p2 0.3
        gpus = sim.series.gpus()
        g0, g1 = gpus[(spec.name, 0)], gpus[(spec.name, 1)]
        # the least used GPU each time: p0 -> 0, p1 -> 1, p2 -> 0
        assert [p[1] for p in g0.pods] == ["p0", "p2"] and [p[1] for p in g1.pods] == ["p1"]
        assert round(g0.util, 3) == round(60 * 0.5 + 60 * 0.3, 3)
        assert round(g0.fb_used) == round(10240 * 0.8)
        sim(nodes, pods, 200.0, CONFIG)  # all ramped: 120 % clamps at 100, memory adds up
        g0 = sim.series.gpus()[(spec.name, 0)]
        assert g0.util == 100.0 and g0.fb_used == 20480.0
        text = exporter.render(200.0).decode()
        assert (
            f'DCGM_FI_DEV_FB_FREE{{gpu="0",UUID="{g0.uuid}",pci_bus_id="00000000:10:00.0",'
            f'device="nvidia0",modelName="NVIDIA A100 SXM4 40GB",Hostname="{spec.name}",'
            'container="main",namespace="ml",pod="p2"} 20480'
        ) in text
        sim(nodes, [], 201.0, CONFIG)  # the pods are gone: idle GPUs, one series each
        assert "DCGM_FI_DEV_GPU_UTIL{" in text
        text = exporter.render(201.0).decode()
        assert text.count("DCGM_FI_DEV_GPU_UTIL{") == 2 and 'pod=""} 0' in text
        sim({}, [], 202.0, CONFIG)  # the node is gone
        assert "DCGM" not in exporter.render(202.0).decode()
    finally:
        exporter.stop()
