"""The scheduling loop's whole path for plain pods in-process: what the backlog spends on the
loop thread, without the apiserver and without the other threads' claim on the interpreter.

`bench.scheduler.inprocess` times the filter and score passes alone. The live loop thread does more
per pod: the queue's pop, the snapshot, the decision record, the prediction, the assumption,
the hand-off to the binder; and the pod watch then applies the bound pod (the binding's event
confirms the assumption). Here the real ClusterCache, SchedulingQueue, DecisionStore and Cycle
run on one thread: the cache is fed what its lists would bring (kwok-like nodes, pending pods
of the scheduler's name), the binder confirms each binding at once through the cache's own
event path, as the watch would, and the event recorder only counts. Nothing is mocked that a
test would need: no API is involved at all.

`python -m bench.scheduler.loop --nodes 1000 --pods 2000 [--no-record] [--profile]` prints CPU
per pod (process time over the loop) and a digest of the placements. `--gpu-load` adds GpuLoad's
filter and score (weight 5, docs/gpu.md) to the profile: the plain pods request no GPU, so this
is what a GPU-enabled profile costs pods without GPUs (docs/gpu.md compares the two).

`--preempt N` runs PreemptionAsync's preemptor phase instead, as bench.scheduler.perf does live:
every node full of low-priority pods (four 900m, one 100m, kwok-like start times), then N
3-CPU priority-10 pods created one at a time, each scheduled until bound. The evictor here
carries out a preemption between two pops, as its thread would, by feeding the cache the watch
events the API's answers bring (the nomination with the PodScheduled=False condition, one
patch; each victim's DisruptionTarget update and deletion); once bound, kwok's Running update
comes the same way. CPU is per preemptor, the digest covers nodes and victims.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import random
from typing import Any

from bench.harness import runguard
from bench.scheduler.inprocess import GPU_LOAD_PROFILE, measure
from scheduler.backend.cache import ClusterCache
from scheduler.backend.decisions import DecisionStore
from scheduler.backend.queue import SchedulingQueue
from scheduler.backend.recent import RecentlyBound
from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.cycle import Cycle
from scheduler.framework import PodInfo
from scheduler.framework.clusterindex import PDBS
from scheduler.kube.binder import BOUND, Outcome
from scheduler.kube.evictor import Finished
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

    def failed(self, pod: PodInfo, message: str, reason: str = "", condition: bool = True) -> None:
        self.written += 1


def _resources(cpu: str) -> dict[str, Any]:
    """scheduler_perf's templates: requests and limits alike, 500Mi of memory."""
    both = {"cpu": cpu, "memory": "500Mi"}
    return {"requests": both, "limits": both}


def _bound_doc(name: str, node: str, cpu: str, started: int) -> dict[str, Any]:
    doc = pod_doc(0)
    doc["metadata"] |= {"name": name, "uid": f"uid-{name}"}
    container = doc["spec"]["containers"][0] | {"resources": _resources(cpu)}
    doc["spec"] = doc["spec"] | {"nodeName": node, "containers": [container], "priority": 0}
    stamp = f"2026-01-01T00:{started // 60:02d}:{started % 60:02d}Z"
    doc["status"] = {"phase": "Running", "startTime": stamp}
    return doc


def preemptor_doc(i: int) -> dict[str, Any]:
    doc = pod_doc(0)
    name = f"high-{i:05d}"
    doc["metadata"] |= {"name": name, "uid": f"uid-{name}", "resourceVersion": str(10**6 + i)}
    container = doc["spec"]["containers"][0] | {"resources": _resources("3")}
    doc["spec"] = doc["spec"] | {"containers": [container], "priority": 10}
    return doc


class ApplyingEvictor:
    """The evictor's writes as the watch reports them, applied when `run_pending` is called."""

    def __init__(self, cache: ClusterCache, finished: Finished, docs: dict[str, dict]) -> None:
        self._cache = cache
        self._finished = finished
        self._docs = docs
        self._pending: list[tuple[PodInfo, str, tuple[PodInfo, ...]]] = []
        self.trail = hashlib.sha256()

    def running(self, uid: str) -> bool:
        return any(pod.uid == uid for pod, _, _ in self._pending)

    def preempt(
        self,
        pod: PodInfo,
        node: str,
        victims: tuple[PodInfo, ...],
        unnominate: list[PodInfo],
        message: str = "",
    ) -> None:
        self._pending.append((pod, node, victims))
        self.trail.update(f"{pod.uid}>{node}:{','.join(v.uid for v in victims)};".encode())

    def unnominate(self, pod: PodInfo) -> None:
        pass

    def run_pending(self) -> bool:
        if not self._pending:
            return False
        pod, node, victims = self._pending[0]
        doc = self._docs[pod.uid]
        failed = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
        doc["status"] = doc.get("status", {}) | failed | {"nominatedNodeName": node}
        self._cache._pod_event("MODIFIED", doc)
        for victim in victims:
            gone = copy.deepcopy(self._docs.pop(victim.uid))
            gone["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
            self._cache._pod_event("MODIFIED", gone)
            self._cache._pod_event("DELETED", gone)
        self._pending.pop(0)
        self._finished(pod, node, True)
        return True


def full_cluster(nodes: int) -> list[dict[str, Any]]:
    """PreemptionAsync's cluster as the live run leaves it: four low-priority 900m pods and one
    100m pod per node, started in whole seconds about 200 to a second."""
    docs = []
    for i in range(nodes):
        node = f"node-{i:05d}"
        for j in range(4):
            docs.append(_bound_doc(f"low-{i}-{j}", node, "900m", (4 * i + j) // 200))
        docs.append(_bound_doc(f"default-{i}", node, "100m", 60 + i // 200))
    return docs


def build(
    nodes: int, pods: int, record: bool, preempt: bool = False, gpu_load: bool = False
) -> tuple[Cycle, SchedulingQueue, ConfirmingBinder, dict[str, dict]]:
    queue = SchedulingQueue(1.0, 10.0, 60.0)
    recent = RecentlyBound()
    cache = ClusterCache(None, [SCHEDULER], _Feed(queue, recent))  # type: ignore[arg-type]
    cache._replace_nodes([node_doc(i) for i in range(nodes)])
    listed = full_cluster(nodes) if preempt else [pod_doc(i) for i in range(pods)]
    docs = {doc["metadata"]["uid"]: doc for doc in listed}
    profiles = build_profiles(parse_config({"profiles": [GPU_LOAD_PROFILE]} if gpu_load else {}))
    for plugin in profiles[SCHEDULER].post_filters:
        plugin.rng = random.Random(2)  # DefaultPreemption's offset: the same run every time
    holder: dict[str, Any] = {}
    no_loads: dict[str, Any] = {}  # one object, as MetricsClient.loads returns until a fetch

    def binder_factory(outcome: Outcome) -> ConfirmingBinder:
        holder["binder"] = ConfirmingBinder(cache, outcome, docs)
        return holder["binder"]

    def evictor_factory(finished: Finished) -> ApplyingEvictor:
        holder["evictor"] = ApplyingEvictor(cache, finished, docs)
        return holder["evictor"]

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
        evictor_factory=evictor_factory if preempt else None,  # type: ignore[arg-type]
        decisions=DecisionStore() if record else None,
    )
    cache._replace_pods(list(docs.values()))
    if preempt:
        cache._replace_objects(PDBS, [])  # listed, none: preemption waits for the list
    return cycle, queue, holder["binder"], docs


def run_preemptors(
    cycle: Cycle, queue: SchedulingQueue, docs: dict[str, dict], count: int
) -> list[int]:
    """Each preemptor created, then scheduled (the evictor's work between pops) until bound;
    the attempts each took."""
    cache, evictor = cycle.cache, cycle.evictor
    assert isinstance(evictor, ApplyingEvictor)
    attempts = []
    for i in range(count):
        doc = preemptor_doc(i)
        uid = doc["metadata"]["uid"]
        docs[uid] = doc
        cache._pod_event("ADDED", doc)
        tries = 0
        while uid in queue:
            pod = queue.pop(timeout=0)
            if pod is not None:
                tries += 1
                if cycle.schedule_one(pod) == "unschedulable" and not evictor.running(uid):
                    failed = doc | {"status": {"conditions": [{"type": "PodScheduled"}]}}
                    cache._pod_event("MODIFIED", failed)  # PodScheduled=False written
            elif not evictor.run_pending():
                raise RuntimeError(f"{uid} is stuck: nothing to pop, no preemption pending")
        bound = doc | {"spec": doc["spec"] | {"nodeName": cycle.nominated_node(pod) or "?"}}
        cache._pod_event("MODIFIED", bound | {"status": {"phase": "Running"}})  # kwok's update
        attempts.append(tries)
    return attempts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--preempt", type=int, default=0, help="preemptors (see above)")
    parser.add_argument("--no-record", action="store_true", help="decision recording off")
    parser.add_argument("--profile", action="store_true", help="cProfile the loop")
    parser.add_argument("--gpu-load", action="store_true", help="GpuLoad in the profile")
    parser.add_argument("--top", type=int, default=40)
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    runguard.start_run(parser, args.allow_dirty)
    cycle, queue, binder, docs = build(
        args.nodes, args.pods, not args.no_record, args.preempt > 0, args.gpu_load
    )
    done: list[int] = []

    def run() -> None:
        if args.preempt:
            done.extend(run_preemptors(cycle, queue, docs, args.preempt))
            return
        while (pod := queue.pop(timeout=0)) is not None:
            cycle.schedule_one(pod)
            done.append(1)

    spent, profile = measure(run, args.profile, args.top)
    trail = binder.trail.copy()
    if args.preempt:
        trail.update(cycle.evictor.trail.digest())  # type: ignore[union-attr]
    unit = "preemptor" if args.preempt else "pod"
    what = f"{len(done)} preemptors, {sum(done)} attempts" if args.preempt else f"{len(done)} pods"
    per = 1000 * spent / max(len(done), 1)
    print(
        f"{args.nodes} nodes, {what}: {per:.3f} ms CPU per {unit}, digest {trail.hexdigest()[:16]}"
    )
    print(profile, end="")
    print(runguard.describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
