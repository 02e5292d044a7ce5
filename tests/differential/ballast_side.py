"""Ballast's verdict on a pod, on the state kube-scheduler sees.

A ClusterCache (the scheduler's own, with a listener that ignores everything) follows the
apiserver; the default profile of `parse_config({})` filters every node under the cache lock.
Before a verdict the cache must have caught up with every binding the judge made so far, and
with the run's volume objects and namespaces, so both schedulers look at the same cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from scheduler.backend.cache import ClusterCache, take_snapshot
from scheduler.config.loader import DEFAULT_SCHEDULER_NAME, parse_config
from scheduler.config.profiles import profile_from_config
from scheduler.framework import CycleState, PodInfo, resources
from scheduler.framework.clusterindex import NAMESPACES, PVCS, PVS, STORAGE_CLASSES
from scheduler.framework.status import failure_message


class _Deaf:
    """A cache listener that ignores every callback: nothing is scheduled here."""

    def pod_pending(self, pod: PodInfo) -> None:
        pass

    def pod_gone(self, uid: str) -> None:
        pass

    def pod_bound(self, pod: PodInfo) -> None:
        pass

    def cluster_changed(self) -> None:
        pass


class _NoRecent:
    def cpu_by_node(self, loads: dict[str, Any], now: float) -> dict[str, int]:
        return {}


@dataclass
class Verdict:
    feasible: list[str]
    message: str  # the FailedScheduling text when nothing is feasible, else ""


class BallastView:
    def __init__(self, api: client.ApiClient) -> None:
        cfg = parse_config({"leaderElection": {"leaderElect": False}})
        profile_cfg = next(p for p in cfg.profiles if p.scheduler_name == DEFAULT_SCHEDULER_NAME)
        self.profile = profile_from_config(profile_cfg)
        self.cache = ClusterCache(api, (), _Deaf())

    def start(self, timeout: float = 30.0) -> None:
        self.cache.start()
        if not self.cache.wait_synced(timeout):
            raise TimeoutError(f"the Ballast cache did not sync in {timeout:.0f} s")

    def stop(self) -> None:
        self.cache.stop()

    def wait_caught_up(
        self,
        placed: dict[str, str],
        nodes: Iterable[str],
        objects: dict[str, Iterable[str]],
        timeout: float = 10.0,
    ) -> None:
        """Until the cache holds every placed pod (uid -> node) where it is, every node, and
        every object key per kind ("persistentvolumeclaims": ["ns/name", ...])."""
        nodes = list(nodes)
        deadline = time.monotonic() + timeout
        while True:
            missing = self._missing(placed, nodes, objects)
            if not missing:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ballast cache lags behind the apiserver: {missing}")
            time.sleep(0.005)

    def _missing(
        self, placed: dict[str, str], nodes: list[str], objects: dict[str, Iterable[str]]
    ) -> str:
        index = self.cache.index
        with self.cache.lock:
            for uid, node in placed.items():
                if index.placed.get(uid) != node:
                    return f"pod {uid} on {node}"
            for name in nodes:
                if name not in self.cache.nodes:
                    return f"node {name}"
            for kind in (NAMESPACES, PVCS, PVS, STORAGE_CLASSES):
                if kind not in index.synced:
                    return f"{kind} not listed yet"
            for kind, keys in objects.items():
                for key in keys:
                    if key not in index.objects[kind]:
                        return f"{kind} {key}"
        return ""

    def verdict(self, pod_json: dict[str, Any], nodes: Iterable[str] | None = None) -> Verdict:
        """The default profile's filter on every node (or the named ones), as one cycle."""
        pod = resources.pod_info(pod_json)
        with self.cache.lock:
            snap = take_snapshot(self.cache, {}, _NoRecent(), time.time())
            wanted = None if nodes is None else set(nodes)
            candidates = [
                n for n in self.cache.nodes.values() if wanted is None or n.name in wanted
            ]
            state = CycleState()
            feasible, reasons = self.profile.filter(pod, candidates, snap, state)
            message = "" if feasible else failure_message(len(candidates), reasons, state)
        return Verdict(sorted(n.name for n in feasible), message)
