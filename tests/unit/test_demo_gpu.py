"""The demo's GPU act: its pods, and how it reads the watcher's GPU answer and the scheduler's
decision records (the run itself is `make demo`, tests/integration/test_demo.py)."""

from __future__ import annotations

from sandbox.demo import gpu as demo_gpu
from sandbox.load.gpusim import SHARED, pod_gpu


def test_pods_ask_one_replica_and_declare_their_use():
    running, new = demo_gpu.pod_body(demo_gpu.RUNNING[0]), demo_gpu.pod_body(demo_gpu.NEW[0])
    assert running["spec"]["nodeName"] == demo_gpu.BUSY and "schedulerName" not in running["spec"]
    assert new["spec"]["schedulerName"] == demo_gpu.SCHEDULER_NAME and "nodeName" not in new["spec"]
    use = pod_gpu(running)  # what the simulator makes it use
    assert use is not None and use.shared and use.count == 1
    assert use.memory_mib == 38 * 1024 and use.util == 95
    assert new["spec"]["containers"][0]["resources"]["limits"] == {SHARED: "1"}
    # the busy GPU has no room for a new pod; the others have
    room = 40960 - use.memory_mib
    assert all(room < 8 * 1024 for j in demo_gpu.NEW if j.memory == "8Gi")


def test_figures_from_the_watchers_answer():
    doc = {"nodes": {"gpu-node-0": {"gpus": {"0": {
        "util": {"latest": 95.0, "avg": 80.4}, "fbUsed": {"latest": 38912.0},
        "fbFree": {"latest": 2048.0}, "state": "fresh"}}}}}  # fmt: skip
    figures = demo_gpu.gpu_figures(doc, "gpu-node-0")
    assert figures == {"util": 95.0, "utilAvg": 80.4, "used": 38912.0, "total": 40960.0,
                       "state": "fresh"}  # fmt: skip
    assert demo_gpu.describe(figures) == "95 % busy (avg 80), 38.0 of 40 GiB used, fresh"
    assert demo_gpu.gpu_figures(doc, "gpu-node-1") is None
    assert demo_gpu.describe(None) == "no GPU data"
    lines = demo_gpu.render_gpus(doc, {"gpu-node-0": ["train"]}).splitlines()
    assert lines[0].split()[0] == "gpu-node-0" and lines[0].endswith("pods: train")
    assert lines[1].endswith("no GPU data; pods: -")


def test_why_from_the_decision_record():
    top = [
        {"node": "gpu-node-2", "total": 536, "plugins": {"GpuLoad": {"raw": 90}}},
        {"node": "gpu-node-1", "total": 318, "plugins": {"GpuLoad": {"raw": 45}}},
    ]
    refused = {"GpuLoad": {"node(s) had no GPU with 8192 MiB free": 1}}
    attempt = {"node": "gpu-node-2", "filters": {"byPlugin": refused}, "scores": {"top": top}}
    record = {"attempts": [attempt]}
    assert demo_gpu.explain(record) == (
        "refused by GpuLoad: node(s) had no GPU with 8192 MiB free (1); "
        "scores: gpu-node-2 536, GpuLoad 90; gpu-node-1 318, GpuLoad 45"
    )
    assert demo_gpu.explain({}) == "no record"
