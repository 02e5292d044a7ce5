"""A GPU-hot node on the sandbox: hot for its GPU pods only.

Two kwok nodes with one time-sliced GPU each (4 replicas): "hot" with its CPU normal (60 %) and
its GPU at 99 % busy, "cold" with CPU and GPU idle (dcgm-exporter's series simulated, through a
real Prometheus and the watcher). A GPU Deployment and a CPU Deployment are placed on "hot"
while "cold" is cordoned; the rebalancer, judging with a profile that uses GpuLoad, moves the GPU
pod only, for the reason `gpu-hot`.
"""

from __future__ import annotations

from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from sandbox.load.gpusim import SHARED
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import running
from tests.integration.test_rebalancer import (
    WATCHER,
    T,
    _on,
    cordon,
    counter,
    deployment,
    rebalanced_events,
    rebalancer,
)

PROFILE = {
    "schedulerName": "ballast",
    "plugins": {
        "filter": {"enabled": [{"name": "GpuLoad"}]},
        "score": {"enabled": [{"name": "GpuLoad", "weight": 5}]},
    },
}


def test_a_gpu_hot_node_loses_its_gpu_pod_only(
    kube_api, kube_nodes, namespace, exporter, dcgm, prometheus, make_watcher
):
    hot, cold = f"{namespace}-hot", f"{namespace}-cold"
    exporter.set(hot, cpu=60.0, memory=30.0)
    exporter.set(cold, cpu=15.0, memory=30.0)
    kube_nodes([NodeSpec(n, cpu="8", memory="32Gi", extended={SHARED: "4"}) for n in (hot, cold)])
    for node, util in ((hot, 99.0), (cold, 5.0)):
        dcgm.add_node(node, 1)
        dcgm.set(node, 0, util=util, fb_used=2000)
    cordon(kube_api, cold, True)
    watcher = make_watcher(prometheus.url, warm_start=False, **WATCHER)
    watcher.wait_nodes([hot, cold], metrics=("cpu",))
    train = deployment("train", 1)
    train["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {SHARED: "1"}
    apps = client.AppsV1Api(kube_api)
    try:
        with running(kube_api, {"watcherAddress": watcher.url, "profiles": [PROFILE]}):
            for body in (train, deployment("web", 1)):
                apps.create_namespaced_deployment(namespace, body, _request_timeout=T)
            before = wait_for(
                lambda: _on(kube_api, namespace, hot, 2), timeout=60, what="both pods on hot"
            )
            cordon(kube_api, cold, False)
            section = {"gpu": {"utilHigh": 90}}
            with rebalancer(kube_api, watcher.url, section, profiles=[PROFILE]) as r:
                moved = wait_for(
                    lambda: [p for p in _on(kube_api, namespace, cold, 1) or [] if p not in before],
                    timeout=40,
                    what="the GPU pod's replacement bound on the cold node",
                )
    finally:
        for node in (hot, cold):
            exporter.remove(node)
    assert [p.split("-")[0] for p in moved] == ["train"]
    assert counter(r, r.telemetry.evictions, "gpu-hot") == 1
    assert counter(r, r.telemetry.evictions, "cpu-hot") == 0
    assert len(rebalanced_events(kube_api, namespace)) == 1
    assert any(p.startswith("web-") for p in _on(kube_api, namespace, hot, 1) or [])
