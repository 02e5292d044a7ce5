"""ballast-peak's watcher in bench.scheduler (bench/scheduler/feed.py): what it serves is what the
scheduler's own clients parse, every background pod measured from the first fetch, and the
contender's profile runs PeakFit in TargetLoadPacking's place."""

from __future__ import annotations

import time

import numpy as np
import requests

from bench.scheduler import feed
from bench.scheduler.run import peak_settings
from scheduler.backend.metrics_client import parse_ballast
from scheduler.backend.pods_client import parse_pods
from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles


def _placed(nodes: int, per_node: int = 2) -> dict[tuple[str, str], str]:
    return {(feed.NAMESPACE, f"p{i:06d}"): f"n{i % nodes}" for i in range(nodes * per_node)}


def test_each_node_uses_what_its_pods_use_plus_the_system():
    load = feed.Load(_placed(4), step=15.0)
    cpu_m, memory = load.pods_at(1000.0)
    node_cpu, node_memory = load.nodes_at(1000.0)
    for n, name in enumerate(load.nodes):
        mine = [i for i, k in enumerate(load.keys) if f"n{int(k[1][1:]) % 4}" == name]
        want = 100 * (cpu_m[mine].sum() + feed.SYSTEM_CPU_M) / feed.NODE_CPU_M
        assert abs(node_cpu[n] - want) < 1e-9
        assert (
            abs(node_memory[n] - 100 * (memory[mine].sum() + feed.SYSTEM_MEMORY) / feed.NODE_MEMORY)
            < 1e-9
        )
    # The same step, the same samples (every contender reads the same load); bursts happen.
    assert np.array_equal(load.pods_at(1000.0)[0], load.pods_at(1001.0)[0])
    many = np.array([load.pods_at(15.0 * k)[0] for k in range(200)])
    assert (many > 1.5 * load.mean_m).any() and (many < 1.3 * load.mean_m).mean() > 0.8


def test_the_feed_serves_every_pod_measured_and_every_node_fresh():
    placed = _placed(5)
    served = feed.Feed(placed).start(timeout=30)
    try:
        pods = parse_pods(requests.get(f"{served.address}/api/v1/pods", timeout=5).json())
        nodes = parse_ballast(
            requests.get(f"{served.address}/api/v1/nodes", timeout=5).json(), time.time()
        )
    finally:
        served.stop()
    assert set(pods.by_pod) == set(placed)
    need = pods.enough(8)  # PeakFit's default minSamples
    assert all(f.samples >= need for f in pods.by_pod.values())
    assert all(f.cpu.max >= f.cpu.mean > 0 for f in pods.by_pod.values())
    assert set(nodes) == {f"n{i}" for i in range(5)}
    for metrics in nodes.values():
        assert metrics["cpu"].state == "fresh" and metrics["cpu"].peak >= metrics["cpu"].avg > 0


def test_ballast_peak_scores_with_peak_fit_instead_of_target_load_packing():
    cfg = parse_config(peak_settings("http://127.0.0.1:1"))
    assert cfg.watcher_address == "http://127.0.0.1:1"
    profile = build_profiles(cfg)["ballast"]
    names = {plugin.name for plugin, _weight in profile.scores}
    assert "PeakFit" in names and "TargetLoadPacking" not in names
