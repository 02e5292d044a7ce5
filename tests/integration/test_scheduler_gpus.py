"""GPU pods placed by GPU load over the real chain: dcgm-exporter's series (simulated), a real
Prometheus, the watcher, the scheduler with GpuLoad, kwok nodes advertising time-sliced GPUs.

Four nodes with one GPU each (4 replicas): "busy" (90 %, 10,960 MiB free), "idle" (10 %,
36,960 MiB free), "full" (20 %, 1,960 MiB free) and "dark" (no GPU series at all).
"""

from __future__ import annotations

import requests

from sandbox.cluster.nodes import NodeSpec
from sandbox.load.gpusim import MEMORY_ANNOTATION, SHARED
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    T,
    create_pods,
    events_for,
    pod_body,
    running,
    wait_bound,
)

GPUS = {"busy": (90, 30000), "idle": (10, 4000), "full": (20, 39000)}  # util %, used MiB
PROFILE = {
    "schedulerName": "ballast",
    "plugins": {
        "filter": {"enabled": [{"name": "GpuLoad"}]},
        "score": {"enabled": [{"name": "GpuLoad", "weight": 5}], "disabled": [{"name": "*"}]},
    },
}


def gpu_pod(name: str, memory: str, selector: dict[str, str]) -> dict:
    body = pod_body(name, node_selector=selector)
    body["metadata"]["annotations"] = {MEMORY_ANNOTATION: memory}
    body["spec"]["containers"][0]["resources"]["limits"] = {SHARED: "1"}
    return body


def test_gpu_pods_follow_gpu_load_and_metrics_never_block(
    kube_api, kube_nodes, namespace, dcgm, prometheus, make_watcher
):
    names = {role: f"{namespace}-{role}" for role in [*GPUS, "dark"]}
    group = {"ballast-test": namespace}
    measured = {**group, "gpu-data": "yes"}
    specs = [
        NodeSpec(
            name,
            cpu="8",
            memory="32Gi",
            labels=group if role == "dark" else measured,
            extended={SHARED: "4"},
        )
        for role, name in names.items()
    ]
    kube_nodes(specs)
    for role, (util, used) in GPUS.items():
        dcgm.add_node(names[role], 1)
        dcgm.set(names[role], 0, util=util, fb_used=used)
    watcher = make_watcher(prometheus.url, warm_start=False)
    doc = {"watcherAddress": watcher.url, "profiles": [PROFILE]}
    with running(kube_api, doc, metrics_listen="127.0.0.1:0") as runtime:
        wait_for(
            lambda: (
                len([n for n in names.values() if runtime.gpus_client.gpus().by_node.get(n)]) == 3
            ),
            timeout=45,
            what="the scheduler to see the three measured GPUs",
        )
        # 8 GiB: "full" is refused, "idle" has the idle compute and the most memory.
        create_pods(kube_api, namespace, [gpu_pod("train", "8Gi", measured)])
        assert wait_bound(kube_api, namespace, 1)["train"] == names["idle"]

        # 38 GiB fits no measured GPU: a clear reason, and the explain record says which plugin.
        create_pods(kube_api, namespace, [gpu_pod("too-big", "38Gi", measured)])
        event = wait_for(
            lambda: events_for(kube_api, namespace, "too-big", "FailedScheduling"),
            timeout=20,
            what="too-big's FailedScheduling",
        )
        message = event[-1]["note"]
        assert "3 node(s) had no GPU with 38912 MiB free" in message, message
        url = f"http://127.0.0.1:{runtime.server.port}"
        record = requests.get(f"{url}/api/v1/decisions/{namespace}/too-big", timeout=T).json()
        by_plugin = record["attempts"][0]["filters"]["byPlugin"]
        assert by_plugin["GpuLoad"] == {"node(s) had no GPU with 38912 MiB free": 3}

        # The same pod allowed on the node without GPU data: counts only, so it is placed.
        create_pods(kube_api, namespace, [gpu_pod("blind", "38Gi", group)])
        assert wait_bound(kube_api, namespace, 2)["blind"] == names["dark"]
