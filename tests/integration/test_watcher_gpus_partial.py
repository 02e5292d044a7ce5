"""GPU figures from a store that loses one of its parts: dcgm-exporter's series (simulated) on
two real Prometheus shards behind a Prometheus front that reads them remotely
(store_support.py). With shard b down the front answers partially: the watcher says so in the
GPU document (`lastPoll.partial`, `lacking`, `counters.partialAnswers`), shard b's GPU keeps its
last window and turns stale (never gone, never idle), so GpuLoad no longer refuses on it, while
shard a's stays fresh; all is fresh again once the shard is back."""

from __future__ import annotations

import time

from sandbox.load.dcgm import DcgmSeries
from scheduler.backend.gpus_client import parse_gpus
from scheduler.framework import CycleState
from scheduler.framework.snapshot import snapshot_of
from scheduler.plugins import gpu_load
from tests.fixtures.ports import wait_for
from tests.fixtures.thanos import Shard
from tests.integration.store_support import Front
from tests.unit.plugin_helpers import container, make_node, make_pod

GPUS = {"gpu-a": (30.0, 30000.0), "gpu-b": (90.0, 39000.0)}  # util %, MiB used of 40960
QUERIES = {"util", "fbUsed", "fbFree", "pods"}
TIMING = {"window": 60.0, "expiry": 40.0, "warm_start": False}


def gpus(watcher) -> dict:  # noqa: ANN001
    resp = watcher.get("/api/v1/gpus")
    return resp.json() if resp.status_code == 200 else {}


def states(doc: dict) -> dict[str, str]:
    return {node: part["state"] for node, part in (doc.get("nodes") or {}).items()}


def check_never_idle(doc: dict) -> None:
    """Every GPU the watcher gives carries its true figures, kept or new."""
    for node, part in doc["nodes"].items():
        gpu = part["gpus"]["0"]
        util, used = GPUS[node]
        assert gpu["util"]["latest"] == util and gpu["fbUsed"]["latest"] == used, (node, gpu)


def refused(doc: dict) -> set[str]:
    """The GPU nodes GpuLoad's filter refuses an 8 GiB pod, on the watcher's answer as the
    scheduler reads it."""
    gpu = {"nvidia.com/gpu": "1"}
    pod = make_pod("infer", [container(cpu="100m", requests=gpu, limits=gpu)])
    pod.raw["metadata"]["annotations"] = {"ballast.io/gpu-memory": "8Gi"}
    nodes = [make_node(n, cpu="8", memory="32Gi", **{"nvidia.com/gpu": "1"}) for n in GPUS]
    snap = snapshot_of(nodes, [], now=time.time())
    snap.gpus = parse_gpus(doc)
    plugin, state = gpu_load.Plugin(), CycleState()
    assert plugin.pre_filter(state, pod, snap)
    return {n for n, node in snap.nodes.items() if not plugin.filter(state, pod, node, snap).ok}


def test_a_lost_shard_leaves_its_gpus_stale_never_idle(make_exporter, make_watcher, tmp_path):
    shards, started = [], []
    for name in ("a", "b"):
        exporter, series = make_exporter(), DcgmSeries()
        exporter.renderers.append(series.render)
        node = f"gpu-{name}"
        series.add_node(node, 1)
        util, used = GPUS[node]
        series.set(node, 0, util=util, fb_used=used, pods=[("ml", f"pod-{name}", "main")])
        shards.append(Shard(tmp_path / f"shard-{name}", name, [exporter.target]))
    try:
        for shard in shards:
            started.append(shard.start())
        front = Front(tmp_path / "front", shards)
        started.append(front.start())
        watcher = make_watcher(front.url, **TIMING)
        doc = wait_for(
            lambda: (
                (d := gpus(watcher))
                and set(states(d).values()) == {"fresh"}
                and len(states(d)) == 2
                and d
            ),  # fmt: skip
            timeout=60,
            what="both GPUs fresh",
        )
        check_never_idle(doc)
        assert doc["lastPoll"]["partial"] is None and doc["lastPoll"]["lacking"] is None
        assert refused(doc) == {"gpu-b"}  # 1,960 MiB free, fresh: no room for 8 GiB

        shards[1].stop()
        doc = wait_for(
            lambda: (d := gpus(watcher)) and d["lastPoll"].get("partial") and d,
            timeout=20,
            what="a GPU poll marked partial",
        )
        assert doc["lastPoll"]["ok"] is True and set(doc["lastPoll"]["partial"]) == QUERIES

        def b_stale() -> dict | None:
            d = gpus(watcher)
            check_never_idle(d)  # at every look while the shard is away
            assert states(d)["gpu-a"] == "fresh", d
            return d if states(d)["gpu-b"] == "stale" else None

        doc = wait_for(b_stale, timeout=20, what="shard b's GPU stale")
        assert doc["lastPoll"]["lacking"] == {"util": 1, "fbUsed": 1, "fbFree": 1}
        assert doc["counters"]["partialAnswers"]["util"] >= 1
        assert doc["nodes"]["gpu-b"]["gpus"]["0"]["horizon"] == 2.0  # two 1 s polls
        # Stale figures never refuse: the pod may go there, counts only (kube-scheduler's way).
        assert refused(doc) == set()

        shards[1].start()

        def fresh_again() -> dict | None:
            d = gpus(watcher)
            return d if d and set(states(d).values()) == {"fresh"} else None

        wait_for(fresh_again, timeout=60, what="shard b's GPU fresh again")
        doc = wait_for(
            lambda: (d := fresh_again()) and not d["lastPoll"]["partial"] and d,
            timeout=30,
            what="a complete GPU poll",
        )
        assert doc["lastPoll"]["lacking"] is None
        check_never_idle(doc)
        assert refused(doc) == {"gpu-b"}
    finally:
        for server in reversed(started):
            server.stop()
