"""The watcher `ballast-peak` reads in `bench.scheduler` (PeakFit at 5,000 nodes, issue 45).

PeakFit predicts a node's peak from its pods' own figures (`/api/v1/pods`) and the node's
(`/api/v1/nodes`); without a watcher it would score every node from requests alone and the run
would measure nothing of the peak model. Prometheus and an exporter for 5,000 nodes would load
the 2 cores the run measures, so the watcher's own code runs here in the benchmark's process
(its poller, pod poller, memory store and API, as `ballast watcher` without Redis runs them),
fed by a synthetic source in Prometheus's place:
- `BACKGROUND` pods per node, created bound (namespace `NAMESPACE`, before the first round, for
  every contender alike), each with its own usage: a steady mean of 100-1,000m and, one sample
  in ten, a burst of 2-4 times that; memory 256 MiB-2 GiB, steady;
- each node's CPU and memory the sum of its pods' plus 300m and 1 GiB for the system, as
  percentages of 8 cores and 32 GiB (bench.harness.common.make_nodes).
Samples are drawn per poll step from (seed, step), so every contender reads the same figures
at the same time of the run. The watcher starts with a full window (its warm start asks the
source for the last window; the pods' statistics are fed the same past samples), so PeakFit
counts every background pod as measured from the first cycle.

`peak_check` reads the decision records back from the scheduler: how many of the sampled
pods' top nodes PeakFit predicted from measured pods. A run where none was is no run of the
peak model, and says so in its result.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np
import requests
from werkzeug.serving import make_server

from sandbox.cluster import processes
from watcher.api import create_app
from watcher.config import Config
from watcher.nodenames import NodeNamer
from watcher.podusage import PodFetch
from watcher.poller import Poller
from watcher.providers.base import Fetch
from watcher.server import pod_poller
from watcher.store import MemoryStore

NAMESPACE = "peak-background"  # not bench-*: a round's reset waits for those to be gone
BACKGROUND = 2  # pods per node
NODE_CPU_M, NODE_MEMORY = 8000.0, 32 * 2**30  # make_nodes' nodes
SYSTEM_CPU_M, SYSTEM_MEMORY = 300.0, 2**30
BURST_SHARE = 0.1
MiB = 2**20
PodKey = tuple[str, str]


class Load:
    """Every background pod's usage at a poll step, and its node's."""

    def __init__(self, placed: dict[PodKey, str], step: float, seed: int = 1) -> None:
        self.keys = list(placed)
        self.nodes = sorted(set(placed.values()))
        index = {n: i for i, n in enumerate(self.nodes)}
        self.node_of = np.array([index[placed[k]] for k in self.keys], dtype=np.int64)
        self.step, self.seed = step, seed
        rng = np.random.default_rng([seed, 0])
        n = len(self.keys)
        self.mean_m = rng.uniform(100.0, 1000.0, n)
        self.burst = rng.uniform(2.0, 4.0, n)
        self.memory = rng.uniform(256 * MiB, 2048 * MiB, n)

    def pods_at(self, at: float) -> tuple[np.ndarray, np.ndarray]:
        """(CPU millicores, memory bytes) per pod at time `at`."""
        rng = np.random.default_rng([self.seed, 1 + int(at // self.step)])
        n = len(self.keys)
        bursting = rng.random(n) < BURST_SHARE
        cpu = self.mean_m * np.where(bursting, self.burst, rng.uniform(0.8, 1.2, n))
        return cpu, self.memory * rng.uniform(0.97, 1.03, n)

    def nodes_at(self, at: float) -> tuple[np.ndarray, np.ndarray]:
        """(CPU %, memory %) per node at `at`: its pods' sums and the system's."""
        cpu, memory = self.pods_at(at)
        k = len(self.nodes)
        cpu_m = np.bincount(self.node_of, cpu, k) + SYSTEM_CPU_M
        used = np.bincount(self.node_of, memory, k) + SYSTEM_MEMORY
        return 100 * cpu_m / NODE_CPU_M, 100 * used / NODE_MEMORY


class Nodes:
    """The watcher's provider: the nodes' percentages, now and for the warm start."""

    source = "synthetic"

    def __init__(self, load: Load) -> None:
        self.load = load

    def fetch(self) -> Fetch:
        return self._at(time.time())

    def history(self, start: float, end: float, step: float) -> list[Fetch]:
        return [self._at(t) for t in np.arange(start, end, step).tolist()]

    def _at(self, at: float) -> Fetch:
        cpu, memory = self.load.nodes_at(at)
        names = self.load.nodes
        return Fetch(
            at,
            {
                "cpu": list(zip(names, cpu.round(3).tolist(), strict=True)),
                "memory": list(zip(names, memory.round(3).tolist(), strict=True)),
            },
        )

    def close(self) -> None:
        pass


class Pods:
    """The pod poller's source: every background pod's usage now."""

    def __init__(self, load: Load) -> None:
        self.load = load

    def fetch(self) -> PodFetch:
        return self.at(time.time())

    def at(self, at: float) -> PodFetch:
        cpu, memory = self.load.pods_at(at)
        figures = zip(cpu.tolist(), memory.tolist(), strict=True)
        usage = dict(zip(self.load.keys, figures, strict=True))
        return PodFetch(at, usage)


class Feed:
    """The watcher on a loopback port; `address` for the scheduler's `watcherAddress`."""

    def __init__(self, placed: dict[PodKey, str], seed: int = 1) -> None:
        self.config = config = Config(warm_start=True, pod_usage=True)
        self.load = Load(placed, config.poll_interval, seed)
        store = MemoryStore(config.window)
        self.poller = Poller(config, Nodes(self.load), store, NodeNamer(), "bench-feed")
        pods = Pods(self.load)
        # No owners: each pod is its own group, as a pod without a controller is.
        self.poller.pods = pod_poller(config, pods, None, store)
        # The pods' warm start: the window's past samples, as the nodes' warm start has them.
        now = time.time()
        for at in np.arange(now - config.window, now, config.poll_interval).tolist():
            fetch = pods.at(at)
            self.poller.pods.stats.add(at, fetch.usage)
        port = processes.free_port()
        self.address = f"http://127.0.0.1:{port}"
        app = create_app(config, store, "bench-feed", self.poller)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
        self._server = make_server("127.0.0.1", port, app, threaded=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self, timeout: float = 60.0) -> Feed:
        self.poller.start()
        self._thread.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            nodes = requests.get(f"{self.address}/api/v1/nodes", timeout=5)
            pods = requests.get(f"{self.address}/api/v1/pods", timeout=5)
            if nodes.ok and pods.ok and len(pods.json()["pods"]) == len(self.load.keys):
                return self
            time.sleep(0.5)
        raise TimeoutError(f"the bench watcher at {self.address} served no full document")

    def stop(self) -> None:
        self.poller.stop()
        self._server.shutdown()

    def setup(self) -> dict[str, Any]:
        """What the result records of the feed."""
        return {
            "about": "the watcher's poller, pod poller and API in the benchmark's process on a "
            "memory store, fed synthetic usage (bench/scheduler/feed.py)",
            "background_pods": len(self.load.keys),
            "background_per_node": BACKGROUND,
            "namespace": NAMESPACE,
            "pod_cpu_mean_m": [100, 1000],
            "burst": {"share": BURST_SHARE, "factor": [2, 4]},
            "system": {"cpu_m": SYSTEM_CPU_M, "memory_bytes": SYSTEM_MEMORY},
            "poll_interval_s": self.config.poll_interval,
            "window_s": self.config.window,
        }


def peak_check(metrics_url: str, namespace: str, sample: int = 20) -> dict[str, Any]:
    """From the scheduler's decision records of `sample` pods of `namespace`: how many top
    nodes PeakFit predicted from measured pods (`from: pods`, podsMeasured > 0), of how many,
    and one such prediction."""
    base = metrics_url.rsplit("/metrics", 1)[0] + "/api/v1/decisions"
    listed = requests.get(base, params={"namespace": namespace, "limit": sample}, timeout=10)
    listed.raise_for_status()
    top = from_pods = 0
    example = None
    for item in listed.json()["items"]:
        doc = requests.get(f"{base}/{namespace}/{item['pod']}", timeout=10).json()
        latest = (doc.get("attempts") or [{}])[0]  # newest first: the attempt that bound it
        for node in (latest.get("scores") or {}).get("top") or []:
            top += 1
            peak = node.get("peak") or {}
            if peak.get("from") == "pods" and peak.get("podsMeasured", 0) > 0:
                from_pods += 1
                example = example or {"node": node["node"], **peak}
    return {
        "pods_sampled": sample,
        "top_nodes": top,
        "from_pod_peaks": from_pods,
        "example": example,
    }
