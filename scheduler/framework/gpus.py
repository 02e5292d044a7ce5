"""GPUs as the scheduler holds them: per node, each GPU's window from the watcher's
/api/v1/gpus (watcher/gpus.py), read by the GpuLoad plugin (plugins/gpu_load.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class GpuStats:
    index: str
    util: float  # percent busy, the window's average
    fb_used: float  # MiB, latest
    fb_free: float  # MiB, latest
    last: float  # Unix seconds of the newest sample
    horizon: float  # seconds a sample stays fresh
    # `namespace/name` of the pods using it, from dcgm-exporter's pod mapping; None unknown
    pods: tuple[str, ...] | None = None

    @property
    def fb_total(self) -> float:
        return self.fb_used + self.fb_free


@dataclass(frozen=True)
class GpuLoads:
    """Every GPU node's GPUs by node name (a node without GPUs is absent), as of `built`;
    a GPU whose newest sample is older than `expiry` seconds is no data."""

    by_node: dict[str, tuple[GpuStats, ...]] = field(default_factory=dict)
    expiry: float = 300.0
    built: float = 0.0
    # per workload (`namespace/Kind/name`), what one replica used over the watcher's window:
    # (GPU memory MiB, utilisation % of one GPU), both at p95
    workloads: dict[str, tuple[float, float]] = field(default_factory=dict)

    def live(self, node: str, now: float) -> tuple[GpuStats, ...]:
        """The node's GPUs with data not yet expired at `now` (fresh or stale)."""
        return tuple(g for g in self.by_node.get(node, ()) if now - g.last <= self.expiry)

    def stale(self, node: str, now: float) -> bool:
        """Whether some GPU of the node is past its freshness horizon (expired or not)."""
        return any(now - g.last > g.horizon for g in self.by_node.get(node, ()))

    def __len__(self) -> int:
        return len(self.by_node)

    @cached_property
    def mapped(self) -> bool:
        """Whether dcgm-exporter's pod mapping shows pods on some GPU: then a GPU listing none
        has none (a node's pods not listed yet are new), else nothing is known of who uses
        what."""
        return any(g.pods for gpus in self.by_node.values() for g in gpus)


NO_GPUS = GpuLoads()
