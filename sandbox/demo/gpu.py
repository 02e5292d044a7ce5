"""The demo's GPU act: GPU pods placed by how busy each GPU is (docs/gpu.md).

Three kwok nodes join the sandbox, each with one A100 time-sliced in four replicas
(`nvidia.com/gpu.shared: 4`, made as `ballast sandbox up --gpu-nodes` makes them); the
simulator's dcgm-exporter series follow the GPU pods on them (sandbox/load/gpusim.py), Prometheus
scrapes them, the watcher keeps a window per GPU. Jobs already running (bound directly, as ones
started before Ballast would be) make gpu-node-0's GPU busy with its memory all but full and
gpu-node-1's half busy. Then new inference pods go to Ballast through a profile with GpuLoad
(schedulerName `ballast-gpu`): the demo prints each GPU as the watcher saw it, where the pods
landed and why (the scheduler's decision records: GpuLoad's refusal, the scores), and checks
that none went to the busy GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from kubernetes import client

from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import create_nodes, wait_ready
from sandbox.load.gpusim import MEMORY_ANNOTATION, SHARED, UTIL_ANNOTATION, gpu_node_specs

T = 10.0  # seconds per API request
NAMESPACE = "demo-gpu"
SCHEDULER_NAME = "ballast-gpu"
GPU_WEIGHT = 5
# The profile for GPU pods: GpuLoad's filter and its score (weight 5) beside the defaults.
PROFILE = {
    "schedulerName": SCHEDULER_NAME,
    "plugins": {
        "filter": {"enabled": [{"name": "GpuLoad"}]},
        "score": {"enabled": [{"name": "GpuLoad", "weight": GPU_WEIGHT}]},
    },
}
NODES = gpu_node_specs(3, gpus=1, replicas=4, cpu="8", memory="32Gi")
BUSY = NODES[0].name


@dataclass(frozen=True)
class GpuJob:
    name: str
    memory: str  # GPU memory it declares and uses (ballast.io/gpu-memory)
    util: int  # percent of one GPU (ballast.io/gpu-util)
    node: str = ""  # already running there (bound directly); "" for Ballast to place


RUNNING = [
    GpuJob("train", "38Gi", 95, BUSY),  # busy, and 2 GiB of the 40 left
    GpuJob("infer-old", "12Gi", 60, NODES[1].name),
]
NEW = [GpuJob("infer-0", "8Gi", 30), GpuJob("infer-1", "8Gi", 30)]
READY_TIMEOUT = 45.0  # nodes up, the simulator's ramp, a scrape, two polls
BIND_TIMEOUT = 30.0
RAMP_TIMEOUT = 20.0  # the simulator's 5 s ramp, a scrape and a poll
# The scheduler fetches /api/v1/gpus every 2 s (the demo's --watcher-interval), 4 s after an
# answer without GPUs: this long after the watcher shows the busy GPU, the scheduler has it.
FETCH_SECONDS = 5.0


def pod_body(job: GpuJob) -> dict[str, Any]:
    """A pause container asking for one time-sliced GPU replica, declaring what it uses."""
    container = {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"limits": {SHARED: "1"}},
    }
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if job.node:
        spec["nodeName"] = job.node
    else:
        spec["schedulerName"] = SCHEDULER_NAME
    annotations = {MEMORY_ANNOTATION: job.memory, UTIL_ANNOTATION: str(job.util)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": job.name, "labels": {"app": job.name}, "annotations": annotations},
        "spec": spec,
    }


def gpu_figures(doc: dict[str, Any], node: str) -> dict[str, float] | None:
    """A node's first GPU as the watcher's /api/v1/gpus has it: util (window average and
    latest, %), memory used and total (MiB, latest) and its state; None without data."""
    gpus = ((doc.get("nodes") or {}).get(node) or {}).get("gpus") or {}
    gpu = gpus.get("0")
    if not gpu or "util" not in gpu or "fbUsed" not in gpu:
        return None
    return {
        "util": gpu["util"]["latest"],
        "utilAvg": gpu["util"]["avg"],
        "used": gpu["fbUsed"]["latest"],
        "total": gpu.get("fbTotal") or gpu["fbUsed"]["latest"] + gpu["fbFree"]["latest"],
        "state": gpu.get("state", "?"),
    }


def describe(figures: dict[str, float] | None) -> str:
    if figures is None:
        return "no GPU data"
    return (
        f"{figures['util']:.0f} % busy (avg {figures['utilAvg']:.0f}), "
        f"{figures['used'] / 1024:.1f} of {figures['total'] / 1024:.0f} GiB used, "
        f"{figures['state']}"
    )


def render_gpus(doc: dict[str, Any], pods: dict[str, list[str]]) -> str:
    """One line per GPU node: its GPU's figures and the pods on it."""
    lines = []
    for spec in NODES:
        on = ", ".join(sorted(pods.get(spec.name, []))) or "-"
        lines.append(f"    {spec.name}  {describe(gpu_figures(doc, spec.name))}; pods: {on}")
    return "\n".join(lines)


def explain(record: dict[str, Any]) -> str:
    """Why a GPU pod went where it did, from its bound attempt's decision record: what the
    filters refused (by plugin) and each scored node's total and GpuLoad part."""
    attempt = next(
        (a for a in reversed(record.get("attempts") or []) if a.get("node")),
        (record.get("attempts") or [{}])[-1],
    )
    parts = []
    for plugin, reasons in sorted(((attempt.get("filters") or {}).get("byPlugin") or {}).items()):
        for reason, count in sorted(reasons.items()):
            parts.append(f"refused by {plugin}: {reason} ({count})")
    rows = (attempt.get("scores") or {}).get("top") or []
    scored = []
    for row in rows:
        gpu = (row.get("plugins") or {}).get("GpuLoad") or {}
        raw = gpu.get("raw")
        part = f", GpuLoad {raw}" if raw is not None else ""
        scored.append(f"{row['node']} {row['total']}{part}")
    if scored:
        parts.append("scores: " + "; ".join(scored))
    winner = ((attempt.get("scores") or {}).get("winner") or {}).get("tieBreak")
    if winner:
        parts.append(winner)
    return "; ".join(parts) or "no record"


class GpuAct:
    def __init__(
        self,
        api: client.ApiClient,
        watcher_url: str,
        scheduler_url: str,
        wait: Callable[[Callable[[], Any], float, str], Any],
        say: Callable[[str], None],
    ) -> None:
        self.api, self.watcher_url, self.scheduler_url = api, watcher_url, scheduler_url
        self.wait, self.say = wait, say
        self.placed: dict[str, str] = {}  # new pod -> node
        self.busy: dict[str, float] | None = None  # the busy GPU's figures before placing
        self.seconds = 0.0

    def run(self) -> bool:
        t = time.monotonic()
        say = self.say
        say(
            f"\n==> GPU nodes: {', '.join(n.name for n in NODES)} join, each with one "
            f"A100 40GB time-sliced in 4 ({SHARED}: 4); the simulator serves dcgm-exporter's "
            "series for them"
        )
        create_nodes(self.api, NODES)
        wait_ready(self.api, [n.name for n in NODES])
        ensure_namespace(self.api, NAMESPACE)
        core = client.CoreV1Api(self.api)
        for job in RUNNING:
            core.create_namespaced_pod(NAMESPACE, pod_body(job), _request_timeout=T)
            say(
                f"    {NAMESPACE}/{job.name} already running on {job.node}: "
                f"{job.util} % of its GPU, {job.memory}"
            )
        doc = self.wait(self._gpus_ramped, READY_TIMEOUT, "the watcher to show the busy GPUs")
        self.busy = gpu_figures(doc, BUSY)
        say("    each GPU as the watcher has it (dcgm-exporter -> Prometheus -> watcher):")
        say(render_gpus(doc, self._pods_by_node()))
        time.sleep(FETCH_SECONDS)  # the scheduler's next fetch of /api/v1/gpus

        need = ", ".join(f"{j.name} {j.memory} / {j.util} %" for j in NEW)
        say(
            f"    submitting {len(NEW)} inference pods ({need}) with schedulerName "
            f"{SCHEDULER_NAME}: GpuLoad filters and scores (x{GPU_WEIGHT}) their nodes"
        )
        for job in NEW:
            core.create_namespaced_pod(NAMESPACE, pod_body(job), _request_timeout=T)
        self.placed = self.wait(self._new_bound, BIND_TIMEOUT, "the GPU pods to be bound")
        for job in NEW:
            node = self.placed[job.name]
            say(f"    {job.name} -> {node}: {explain(self._record(job.name))}")
        try:
            doc = self.wait(self._new_ramped, RAMP_TIMEOUT, "the new pods' GPU use")
        except TimeoutError:  # only the picture is late: say what the watcher has
            doc = requests.get(f"{self.watcher_url}/api/v1/gpus", timeout=5).json()
        say("    after, once their use shows:")
        say(render_gpus(doc, self._pods_by_node()))
        self.seconds = time.monotonic() - t
        return self.ok()

    def ok(self) -> bool:
        return len(self.placed) == len(NEW) and BUSY not in self.placed.values()

    def summary(self) -> str:
        where = ", ".join(f"{p} -> {n}" for p, n in sorted(self.placed.items())) or "none placed"
        verdict = "avoided" if self.ok() else "NOT avoided"
        return (
            f"  GPU pods: {where}; the busy GPU ({BUSY}: {describe(self.busy)}) {verdict} "
            f"({self.seconds:.0f} s)"
        )

    def _gpus_ramped(self) -> dict[str, Any] | None:
        """The watcher's GPU document once every GPU node is fresh and the running jobs show
        at (nearly) their full use."""
        doc = requests.get(f"{self.watcher_url}/api/v1/gpus", timeout=5).json()
        figures = {n.name: gpu_figures(doc, n.name) for n in NODES}
        if any(f is None or f["state"] != "fresh" for f in figures.values()):
            return None
        for job in RUNNING:
            if figures[job.node]["util"] < 0.9 * job.util:
                return None
        return doc

    def _new_ramped(self) -> dict[str, Any] | None:
        """The watcher's GPU document once the nodes given new pods show their compute."""
        doc = requests.get(f"{self.watcher_url}/api/v1/gpus", timeout=5).json()
        for node in set(self.placed.values()):
            running = [j.util for j in RUNNING if j.node == node]
            added = [j.util for j in NEW if self.placed.get(j.name) == node]
            figures = gpu_figures(doc, node)
            if figures is None or figures["util"] < 0.9 * min(100, sum(running + added)):
                return None
        return doc

    def _pods_by_node(self) -> dict[str, list[str]]:
        core = client.CoreV1Api(self.api)
        out: dict[str, list[str]] = {}
        for pod in core.list_namespaced_pod(NAMESPACE, _request_timeout=T).items:
            if pod.spec.node_name:
                out.setdefault(pod.spec.node_name, []).append(pod.metadata.name)
        return out

    def _new_bound(self) -> dict[str, str] | None:
        core = client.CoreV1Api(self.api)
        names = {j.name for j in NEW}
        pods = core.list_namespaced_pod(NAMESPACE, _request_timeout=T).items
        bound = {p.metadata.name: p.spec.node_name for p in pods if p.metadata.name in names}
        return bound if len(bound) == len(names) and all(bound.values()) else None

    def _record(self, pod: str) -> dict[str, Any]:
        url = f"{self.scheduler_url}/api/v1/decisions/{NAMESPACE}/{pod}"
        try:
            return requests.get(url, timeout=5).json()
        except (requests.RequestException, ValueError):
            return {}
