"""A simulated dcgm-exporter: per-GPU series with the real exporter's names and labels.

Names and units as dcgm-exporter's default counters: `DCGM_FI_DEV_GPU_UTIL` (percent),
`DCGM_FI_DEV_FB_USED` and `DCGM_FI_DEV_FB_FREE` (MiB). Labels as it sets them: `gpu` (the
index), `UUID`, `pci_bus_id`, `device` (nvidiaN), `modelName`, `Hostname` (the node), and,
as with its Kubernetes pod mapping on, `container`, `namespace` and `pod`: one series per pod
using the GPU (the device's figures repeated, as the exporter does for a shared GPU), or one
with those labels empty when no pod uses it.

Served through SyntheticExporter (its `renderers`), so one scrape target gives node, pod and
GPU series. Thread-safe; a simulator sets what each GPU does (sandbox/load/gpusim.py).
"""

from __future__ import annotations

import threading
import uuid as uuids
from dataclasses import dataclass, field

DEFAULT_MODEL = "NVIDIA A100-SXM4-40GB"
DEFAULT_FB_MIB = 40960  # an A100 40GB's framebuffer as the exporter reports used + free

UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"


@dataclass
class Gpu:
    uuid: str
    model: str
    fb_total: float  # MiB
    util: float = 0.0  # percent
    fb_used: float = 0.0  # MiB
    pods: list[tuple[str, str, str]] = field(default_factory=list)  # (namespace, pod, container)


def gpu_uuid(node: str, index: int) -> str:
    """A stable UUID per node and index, in the exporter's `GPU-...` form."""
    return "GPU-" + str(uuids.uuid5(uuids.NAMESPACE_DNS, f"{node}.gpu{index}.ballast"))


class DcgmSeries:
    def __init__(self) -> None:
        self._gpus: dict[tuple[str, int], Gpu] = {}
        self._lock = threading.Lock()

    def add_node(
        self, node: str, count: int, model: str = DEFAULT_MODEL, fb_mib: float = DEFAULT_FB_MIB
    ) -> None:
        """Give `node` `count` idle GPUs (replacing any it had)."""
        with self._lock:
            for key in [k for k in self._gpus if k[0] == node]:
                del self._gpus[key]
            for i in range(count):
                self._gpus[(node, i)] = Gpu(gpu_uuid(node, i), model, float(fb_mib))

    def remove_node(self, node: str) -> None:
        with self._lock:
            for key in [k for k in self._gpus if k[0] == node]:
                del self._gpus[key]

    def set(
        self,
        node: str,
        index: int,
        util: float,
        fb_used: float,
        pods: list[tuple[str, str, str]] | None = None,
    ) -> None:
        """What one GPU does now: utilisation (percent, clamped at 100 as the device reports),
        framebuffer used (MiB, at most the total), the pods using it."""
        if util < 0 or fb_used < 0:
            raise ValueError(f"{node} GPU {index}: utilisation and memory must be >= 0")
        with self._lock:
            gpu = self._gpus.get((node, index))
            if gpu is None:
                raise KeyError(f"{node} has no GPU {index}")
            gpu.util = min(100.0, util)
            gpu.fb_used = min(gpu.fb_total, fb_used)
            gpu.pods = list(pods or [])

    def gpus(self) -> dict[tuple[str, int], Gpu]:
        with self._lock:
            return dict(self._gpus)

    def render(self, now: float) -> list[str]:
        """Exposition lines for every GPU (none for a cluster without GPUs)."""
        with self._lock:
            items = sorted(self._gpus.items())
            if not items:
                return []
            lines = {
                UTIL: [f"# HELP {UTIL} GPU utilization (in %).", f"# TYPE {UTIL} gauge"],
                FB_USED: [
                    f"# HELP {FB_USED} Framebuffer memory used (in MiB).",
                    f"# TYPE {FB_USED} gauge",
                ],
                FB_FREE: [
                    f"# HELP {FB_FREE} Framebuffer memory free (in MiB).",
                    f"# TYPE {FB_FREE} gauge",
                ],
            }
            for (node, index), gpu in items:
                device = (
                    f'gpu="{index}",UUID="{gpu.uuid}",pci_bus_id="00000000:{index + 16:02X}:00.0",'
                    f'device="nvidia{index}",modelName="{gpu.model}",Hostname="{node}"'
                )
                free = gpu.fb_total - gpu.fb_used
                for namespace, pod, container in gpu.pods or [("", "", "")]:
                    labels = f'{device},container="{container}",namespace="{namespace}",pod="{pod}"'
                    lines[UTIL].append(f"{UTIL}{{{labels}}} {gpu.util:.0f}")
                    lines[FB_USED].append(f"{FB_USED}{{{labels}}} {gpu.fb_used:.0f}")
                    lines[FB_FREE].append(f"{FB_FREE}{{{labels}}} {free:.0f}")
        return [line for key in (UTIL, FB_USED, FB_FREE) for line in lines[key]]
