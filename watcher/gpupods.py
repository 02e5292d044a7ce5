"""Per-pod GPU use from dcgm-exporter's pod mapping, gathered per workload (docs/gpu.md).

With its pod mapping on, dcgm-exporter labels a GPU's series with the `namespace` and `pod`
using it, once per pod on a shared GPU. `gpu_pod_query` lists those (node, GPU, pod) triples;
a pod's share of a GPU is the GPU's figure divided by the pods on it (exact for a whole GPU,
an even split of a time-sliced one, which the exporter cannot attribute further), summed over
its GPUs. Shares are joined to workloads through the pod poller's owners (watcher/owners.py)
and kept per workload over the GPU window: what one replica used, as p50, p95 and max of GPU
memory (MiB) and utilisation (percent of one GPU). Kept in the poller's memory: a poller taking
over starts them again.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

import numpy as np

from watcher.nodenames import NodeNamer
from watcher.validate import gpu_index, node_of

GpuKey = tuple[str, str]  # (node, GPU index)
PodKey = tuple[str, str]  # (namespace, pod)


def parse_pods(
    items: list[Any], label: str, namer: NodeNamer
) -> tuple[dict[GpuKey, set[PodKey]], Counter[str]]:
    """Prometheus vector items -> the pods on each GPU; items without node, GPU or pod labels
    are counted as rejected (`no_pod_label`, `no_node_label`, `unknown_node`)."""
    out: dict[GpuKey, set[PodKey]] = {}
    rejected: Counter[str] = Counter()
    for item in items:
        labels = item.get("metric") if isinstance(item, dict) else None
        if not isinstance(labels, dict):
            rejected["no_pod_label"] += 1
            continue
        raw_node, index = labels.get(label), gpu_index(labels)
        namespace, pod = labels.get("namespace"), labels.get("pod")
        if not all(isinstance(v, str) and v for v in (namespace, pod, index)):
            rejected["no_pod_label"] += 1
            continue
        node, reason = node_of(raw_node, namer)
        if node is None:
            rejected[reason or "unknown_node"] += 1
            continue
        out.setdefault((node, index), set()).add((namespace, pod))
    return out, rejected


def pod_shares(
    pods: dict[GpuKey, set[PodKey]], used: dict[GpuKey, float], util: dict[GpuKey, float]
) -> dict[PodKey, tuple[float, float]]:
    """Each pod's (GPU memory MiB, utilisation %) summed over its GPUs, a GPU's figures split
    evenly between the pods on it; GPUs without both figures this poll are left out."""
    out: dict[PodKey, list[float]] = {}
    for gpu, users in pods.items():
        if gpu not in used or gpu not in util or not users:
            continue
        for user in users:
            share = out.setdefault(user, [0.0, 0.0])
            share[0] += used[gpu] / len(users)
            share[1] += util[gpu] / len(users)
    return {k: (m, u) for k, (m, u) in out.items()}


class GpuProfiles:
    """Per workload (`namespace/Kind/name`), each replica's samples over `window` seconds."""

    def __init__(self, window: float, max_samples: int = 10_000) -> None:
        self.window = window
        self.max_samples = max_samples
        self._samples: dict[str, deque[tuple[float, float, float]]] = {}

    def add(self, at: float, shares: dict[PodKey, tuple[float, float]], owners: Any) -> int:
        """Samples of the pods whose workload `owners` knows; returns how many had none."""
        if not shares:
            return 0
        if owners is None:
            return len(shares)
        owners.update(unknown=any(k not in owners.owners for k in shares))
        unowned = 0
        for (namespace, pod), (memory, util) in shares.items():
            workload = owners.lookup(namespace, pod)
            if workload is None:
                unowned += 1
                continue
            ring = self._samples.setdefault(workload.key, deque(maxlen=self.max_samples))
            ring.append((at, memory, util))
        return unowned

    def trim(self, now: float) -> None:
        cutoff = now - self.window
        for key in list(self._samples):
            ring = self._samples[key]
            while ring and ring[0][0] < cutoff:
                ring.popleft()
            if not ring:
                del self._samples[key]

    def doc(self) -> dict[str, Any]:
        out = {}
        for key, ring in sorted(self._samples.items()):
            values = np.array([(m, u) for _, m, u in ring], dtype=np.float64)
            stats = {}
            for name, column in (("memory", values[:, 0]), ("util", values[:, 1])):
                p50, p95 = np.percentile(column, [50, 95])
                stats[name] = {
                    "p50": round(float(p50), 3),
                    "p95": round(float(p95), 3),
                    "max": round(float(column.max()), 3),
                }
            out[key] = {"samples": len(ring), "last": ring[-1][0], **stats}
        return out
