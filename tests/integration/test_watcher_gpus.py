"""GPU windows end to end: the simulated dcgm-exporter's series (the real exporter's names and
labels, a shared GPU's series repeated per pod), scraped by a real Prometheus, polled by the
watcher into a real Redis, served at /api/v1/gpus."""

from __future__ import annotations

import re

from sandbox.load.dcgm import gpu_uuid
from tests.fixtures.ports import wait_for
from tests.integration.test_dashboard import chromium


def test_gpu_windows_from_dcgm_series(exporter, prometheus, dcgm, redis_server, make_watcher):
    exporter.set("plain-node", cpu=10, memory=10)  # a node without GPUs
    dcgm.add_node("gpu-a", 2, fb_mib=40960)
    dcgm.add_node("gpu-b", 1, model="Tesla T4", fb_mib=15360)
    shared = [("ml", "infer-1", "main"), ("ml", "infer-2", "main")]  # time-sliced: two pods
    dcgm.set("gpu-a", 0, util=70, fb_used=30000, pods=shared)
    dcgm.set("gpu-a", 1, util=5, fb_used=1000)
    dcgm.set("gpu-b", 0, util=40, fb_used=15000)
    prometheus.wait_for_series('DCGM_FI_DEV_GPU_UTIL{pod="infer-2"}', 1)
    watcher = make_watcher(prometheus.url, redis_server.url, warm_start=False)

    def gpus(min_count: int) -> dict | None:
        resp = watcher.get("/api/v1/gpus")
        if resp.status_code != 200:
            return None
        doc = resp.json()
        a = doc["nodes"].get("gpu-a", {}).get("gpus", {})
        return doc if len(a) == 2 and min(g["count"] for g in a.values()) >= min_count else None

    doc = wait_for(lambda: gpus(2), timeout=40, what="two polls of gpu-a's GPUs")
    assert "plain-node" not in doc["nodes"]
    a0 = doc["nodes"]["gpu-a"]["gpus"]["0"]
    assert a0["uuid"] == gpu_uuid("gpu-a", 0) and a0["model"].startswith("NVIDIA A100")
    assert a0["util"]["latest"] == 70.0  # one GPU, though its series comes once per pod
    assert a0["fbUsed"]["latest"] == 30000.0 and a0["fbFree"]["latest"] == 10960.0
    assert a0["fbTotal"] == 40960.0 and a0["state"] == "fresh"
    # who uses it, from the pod mapping's labels; an idle GPU lists nobody
    assert a0["pods"] == ["ml/infer-1", "ml/infer-2"]
    assert doc["nodes"]["gpu-a"]["gpus"]["1"]["pods"] == []
    assert doc["lastPoll"]["ok"] is True
    # The pod mapping's pods were seen; without Kubernetes access no workload owns them.
    assert set(doc["counters"]["rejected"]) == {"no_owner"} and doc["workloads"] == {}
    one = watcher.get("/api/v1/nodes/gpu-b/gpus").json()
    assert list(one["nodes"]) == ["gpu-b"]
    assert one["nodes"]["gpu-b"]["gpus"]["0"]["fbFree"]["latest"] == 360.0
    assert watcher.get("/api/v1/nodes/plain-node/gpus").status_code == 404

    # The window follows the GPU: the new figure is the latest, the old one still in the max.
    dcgm.set("gpu-a", 0, util=20, fb_used=2000)

    def moved() -> dict | None:
        gpu = watcher.get("/api/v1/nodes/gpu-a/gpus").json()["nodes"]["gpu-a"]["gpus"]["0"]
        return gpu if gpu["util"]["latest"] == 20.0 else None

    gpu = wait_for(moved, timeout=30, what="gpu-a/0's new utilisation")
    assert gpu["util"]["max"] == 70.0 and gpu["fbFree"]["latest"] == 38960.0


def test_dashboard_lists_a_gpu_nodes_gpus(exporter, prometheus, dcgm, make_watcher, tmp_path):
    exporter.set("dash-gpu", cpu=30, memory=40)
    dcgm.add_node("dash-gpu", 2, fb_mib=40960)
    dcgm.set("dash-gpu", 0, util=64, fb_used=20480)
    dcgm.set("dash-gpu", 1, util=3, fb_used=0)
    watcher = make_watcher(prometheus.url, warm_start=False)
    wait_for(
        lambda: (
            watcher.get("/api/v1/nodes/dash-gpu/gpus").status_code == 200
            and watcher.get("/api/v1/nodes/dash-gpu").status_code == 200
        ),
        timeout=40,
        what="dash-gpu's load and GPUs",
    )
    result = chromium("--virtual-time-budget=5000", "--dump-dom", f"{watcher.url}/",
                      tmp_path=tmp_path)  # fmt: skip
    card = re.search(r'data-node="dash-gpu".*?(?=data-node=|$)', result.stdout, re.S)
    assert card, f"dash-gpu missing: {result.stderr[-2000:]}"
    shown = dict(re.findall(r'data-value="gpu(\d)">([\d.]+)%', card.group(0)))
    assert shown == {"0": "64.0", "1": "3.0"}, card.group(0)[:3000]
    assert "memory 50.0% (20.0 of 40.0 GiB)" in card.group(0)


def mig_series(now: float) -> list[str]:
    """dcgm-exporter's series for a node whose GPU 0 is split in two MIG instances (GPU_I_ID,
    GPU_I_PROFILE; its activity as DCGM_FI_PROF_GR_ENGINE_ACTIVE, a ratio, and a meaningless
    DCGM_FI_DEV_GPU_UTIL of 0 beside it) and whose GPU 1 is whole (no GPU_I_ID)."""
    base = 'UUID="GPU-mig-0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="mig-a"'
    one = f'gpu="0",{base},GPU_I_ID="1",GPU_I_PROFILE="3g.20gb",namespace="ml",pod="train"'
    two = f'gpu="0",{base},GPU_I_ID="2",GPU_I_PROFILE="1g.5gb",namespace="",pod=""'
    whole = 'gpu="1",UUID="GPU-mig-1",device="nvidia1",modelName="NVIDIA A100-SXM4-40GB",'
    whole += 'Hostname="mig-a",namespace="",pod=""'
    return [
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{one}}} 0.6",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{two}}} 0.05",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{whole}}} 0.9",  # a whole GPU: GPU_UTIL says it
        f"DCGM_FI_DEV_GPU_UTIL{{{one}}} 0",
        f"DCGM_FI_DEV_GPU_UTIL{{{whole}}} 35",
        f"DCGM_FI_DEV_FB_USED{{{one}}} 15000",
        f"DCGM_FI_DEV_FB_FREE{{{one}}} 4950",
        f"DCGM_FI_DEV_FB_USED{{{two}}} 100",
        f"DCGM_FI_DEV_FB_FREE{{{two}}} 4764",
        f"DCGM_FI_DEV_FB_USED{{{whole}}} 2000",
        f"DCGM_FI_DEV_FB_FREE{{{whole}}} 38960",
    ]


def test_mig_instances_each_get_a_window(exporter, prometheus, make_watcher):
    exporter.renderers.append(mig_series)
    try:
        prometheus.wait_for_series('DCGM_FI_DEV_FB_FREE{Hostname="mig-a"}', 3)
        watcher = make_watcher(prometheus.url, warm_start=False)

        def node() -> dict | None:
            resp = watcher.get("/api/v1/nodes/mig-a/gpus")
            gpus = resp.json()["nodes"]["mig-a"]["gpus"] if resp.status_code == 200 else {}
            return gpus if len(gpus) == 3 and all("util" in g for g in gpus.values()) else None

        gpus = wait_for(node, timeout=40, what="mig-a's three devices")
    finally:
        exporter.renderers.remove(mig_series)
    one, two, whole = gpus["0-mig1"], gpus["0-mig2"], gpus["1"]
    assert one["mig"] == {"gpu": "0", "instance": "1", "profile": "3g.20gb"}
    assert two["mig"]["profile"] == "1g.5gb" and "mig" not in whole
    # an instance's utilisation is its engine's activity; a whole GPU's is DCGM_FI_DEV_GPU_UTIL
    assert (one["util"]["latest"], two["util"]["latest"], whole["util"]["latest"]) == (60, 5, 35)
    assert (one["fbTotal"], two["fbTotal"], whole["fbTotal"]) == (19950, 4864, 40960)
    assert one["pods"] == ["ml/train"] and two["pods"] == [] and whole["pods"] == []
