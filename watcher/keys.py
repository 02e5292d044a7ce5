"""Every Redis key the watcher uses, built from the configured prefix."""

from __future__ import annotations


class Keys:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @property
    def lock(self) -> str:
        """The poller leadership lock: value = holder id, with a TTL."""
        return f"{self.prefix}poller:lock"

    @property
    def frames(self) -> str:
        """Sorted set of frame ids scored by sample time."""
        return f"{self.prefix}frames"

    def frame(self, frame_id: str) -> str:
        """One poll's samples for every node and metric (compressed blob, expiring)."""
        return f"{self.prefix}frame:{frame_id}"

    @property
    def snapshot(self) -> str:
        """The latest window statistics and poll status, as JSON."""
        return f"{self.prefix}snapshot"

    @property
    def version(self) -> str:
        """The snapshot's version, read cheaply by API workers to see whether it changed."""
        return f"{self.prefix}snapshot:version"

    @property
    def workloads(self) -> str:
        """Workload profiles' statistics and the pod poll's status, as JSON (the API's answer)."""
        return f"{self.prefix}workloads"

    @property
    def workload_rings(self) -> str:
        """Hash `namespace/Kind/name|revision` -> that profile's samples (watcher/profiles.py)."""
        return f"{self.prefix}workloads:rings"

    @property
    def pods(self) -> str:
        """Per-pod usage statistics (watcher/podstats.py), as JSON (the API's answer)."""
        return f"{self.prefix}pods"

    @property
    def pod_rows(self) -> str:
        """The per-pod statistics' rows (numpy arrays), for a poller taking over."""
        return f"{self.prefix}pods:rows"

    @property
    def workload_history(self) -> str:
        """Per workload, the most a replica used per peak bucket (watcher/workloadhistory.py;
        numpy arrays): kept when the pods are gone, reloaded by a poller taking over."""
        return f"{self.prefix}pods:history"

    @property
    def gpus(self) -> str:
        """Per-GPU window statistics and the GPU poll's status, as JSON (watcher/gpus.py)."""
        return f"{self.prefix}gpus"
