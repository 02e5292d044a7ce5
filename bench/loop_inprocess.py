"""The scheduling loop's whole path for plain pods in-process: what the backlog spends on the
loop thread, without the apiserver and without the other threads' claim on the interpreter.

`bench.perf_inprocess` times the filter and score passes alone. The live loop thread does more
per pod: the queue's pop, the snapshot, the decision record, the prediction, the assumption,
the hand-off to the binder; and the pod watch then applies the bound pod (the binding's event
confirms the assumption). Here the real ClusterCache, SchedulingQueue, DecisionStore and Cycle
run on one thread: the cache is fed what its lists would bring (kwok-like nodes, pending pods
of the scheduler's name), the binder confirms each binding at once through the cache's own
event path, as the watch would, and the event recorder only counts. Nothing is mocked that a
test would need: no API is involved at all.

`python -m bench.loop_inprocess --nodes 1000 --pods 2000 [--no-record] [--profile]` prints CPU
per pod (process time over the loop) and a digest of the placements.
"""

from __future__ import annotations

import argparse
import hashlib
import random
from typing import Any

from bench.perf_inprocess import measure
from scheduler.backend.cache import ClusterCache
from scheduler.backend.decisions import DecisionStore
from scheduler.backend.queue import SchedulingQueue
from scheduler.backend.recent import RecentlyBound
from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.cycle import Cycle
from scheduler.framework import PodInfo
from scheduler.kube.binder import BOUND, Outcome
from scheduler.runtime import _Feed
from scheduler.serve.status import Telemetry

SCHEDULER = "ballast"


def node_doc(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": f"moon-{i % 3 + 1}",
            },
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_doc(i: int) -> dict[str, Any]:
    name = f"pod-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{name}",
            "resourceVersion": str(10 + i),
            "labels": {"app": "bench"},
        },
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }


class ConfirmingBinder:
    """Binds at once: the outcome, then the bound pod through the cache's watch path."""

    def __init__(self, cache: ClusterCache, outcome: Outcome, docs: dict[str, dict]) -> None:
        self._cache = cache
        self._outcome = outcome
        self._docs = docs
        self.trail = hashlib.sha256()

    def bind(self, pod: PodInfo, node: str) -> None:
        self._outcome(pod, node, BOUND, "")
        doc = self._docs[pod.uid]
        bound = doc | {"spec": doc["spec"] | {"nodeName": node}}
        self._cache._pod_event("MODIFIED", bound)
        self.trail.update(f"{pod.uid}>{node};".encode())


class CountingEvents:
    def __init__(self) -> None:
        self.written = 0

    def scheduled(self, pod: PodInfo, node: str, score: int | None = None) -> None:
        self.written += 1

    def failed(self, pod: PodInfo, message: str, reason: str = "") -> None:
        self.written += 1


def build(nodes: int, pods: int, record: bool) -> tuple[Cycle, SchedulingQueue, ConfirmingBinder]:
    queue = SchedulingQueue(1.0, 10.0, 60.0)
    recent = RecentlyBound()
    cache = ClusterCache(None, [SCHEDULER], _Feed(queue, recent))  # type: ignore[arg-type]
    cache._replace_nodes([node_doc(i) for i in range(nodes)])
    docs = {doc["metadata"]["uid"]: doc for doc in (pod_doc(i) for i in range(pods))}
    profiles = build_profiles(parse_config({}))
    holder: dict[str, ConfirmingBinder] = {}
    no_loads: dict[str, Any] = {}  # one object, as MetricsClient.loads returns until a fetch

    def binder_factory(outcome: Outcome) -> ConfirmingBinder:
        holder["binder"] = ConfirmingBinder(cache, outcome, docs)
        return holder["binder"]

    cycle = Cycle(
        profiles,
        cache,
        queue,
        lambda: no_loads,  # no watcher: the allocation fallback, as the benches run Ballast
        recent,
        binder_factory,  # type: ignore[arg-type]
        CountingEvents(),
        Telemetry(),
        0,
        rng=random.Random(1),
        decisions=DecisionStore() if record else None,
    )
    cache._replace_pods(list(docs.values()))
    return cycle, queue, holder["binder"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--no-record", action="store_true", help="decision recording off")
    parser.add_argument("--profile", action="store_true", help="cProfile the loop")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    cycle, queue, binder = build(args.nodes, args.pods, not args.no_record)
    done: list[int] = []

    def run() -> None:
        while (pod := queue.pop(timeout=0)) is not None:
            cycle.schedule_one(pod)
            done.append(1)

    spent, profile = measure(run, args.profile, args.top)
    print(
        f"{args.nodes} nodes, {len(done)} pods: {1000 * spent / max(len(done), 1):.3f} ms CPU "
        f"per pod, digest {binder.trail.hexdigest()[:16]}"
    )
    print(profile, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
