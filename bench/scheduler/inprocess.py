"""scheduler_perf's shapes in-process: the cycle's CPU without the apiserver, for profiling.

`make bench-scheduler-perf` measures Ballast end to end against kube-scheduler; this runs the
same shapes on the cycle's own parts alone (the default profile, a Snapshot over a
ClusterIndex as the cache keeps it, assume = the pod counted on its node and in the index),
so that a plugin's share of a cycle can be profiled and two versions compared on identical
decisions:
- topology: TopologySpreading (zone DoNotSchedule, maxSkew 5, `color: blue`), after the
  init pods (no labels);
- preferred: PreferredTopologySpreading (the same, ScheduleAnyway);
- default: DefaultTopologySpreading (a Service selecting `app: scheduler-perf`, the System
  default constraints);
- inclusion: SchedulingWithNodeInclusionPolicy (hostname DoNotSchedule maxSkew 1, both
  inclusion policies Honor, a fifth of the nodes tainted NoSchedule);
- preemption: PreemptionAsync (4 low-priority 900m pods per 4-CPU node and a 100m one,
  start times in whole seconds shared by hundreds of pods as kwok's are, then 3-CPU
  priority-10 pods, each preempting through DefaultPreemption; victims then leave the
  cache and the preemptor is placed on its nominated node);
- basic: SchedulingBasic (plain 100m pods after the init pods);
- unschedulable: Unschedulable (plain 100m pods; every 24th pod is also one attempt of a new
  9-CPU priority-10 pod, which fits no 4-CPU node, so its dry run tries every node).
Node i carries zone `moon-{i % 3 + 1}`, as bench/scheduler/perf.py does.

`python -m bench.scheduler.inprocess topology --nodes 5000 --init 5000 --pods 2000 [--profile]`
prints CPU ms per measured pod and a digest of the placements (node per pod, victims per
preemptor) so a change can be checked to keep every decision; `--profile` adds cProfile's
top functions by cumulative time; `--gpu-load` adds GpuLoad to the profile (docs/gpu.md), which
the measured pods, requesting no GPU, must not pay for.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import pstats
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.harness import runguard
from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.cycle import filter_pass, pick_best
from scheduler.framework import CycleState, NodeInfo, PodInfo, Status
from scheduler.framework.clusterindex import SERVICES
from scheduler.framework.profile import Profile
from scheduler.framework.resources import node_info, pod_info
from scheduler.framework.snapshot import Snapshot, snapshot_of

# The default profile plus GpuLoad as docs/gpu.md enables it (bench.scheduler.loop too).
GPU_LOAD_PROFILE = {
    "schedulerName": "ballast",
    "plugins": {
        "filter": {"enabled": [{"name": "GpuLoad"}]},
        "score": {"enabled": [{"name": "GpuLoad", "weight": 5}]},
    },
}
SHAPES = ("basic", "topology", "preferred", "default", "inclusion", "preemption", "unschedulable")
ZONE = "topology.kubernetes.io/zone"


def make_nodes(count: int, tainted: int = 0) -> list[NodeInfo]:
    nodes = []
    for i in range(count):
        name = f"node-{i:05d}"
        capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
        doc: dict[str, Any] = {
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, ZONE: f"moon-{i % 3 + 1}"},
            },
            "spec": {"taints": [{"key": "foo", "effect": "NoSchedule"}] if i < tainted else []},
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        nodes.append(node_info(doc))
    return nodes


def make_pod(
    name: str,
    cpu: str = "100m",
    labels: dict[str, str] | None = None,
    namespace: str = "perf",
    **spec: Any,
) -> PodInfo:
    return pod_info(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "labels": labels or {},
            },
            "spec": {
                "schedulerName": "ballast",
                "containers": [
                    {
                        "name": "pause",
                        "image": "registry.k8s.io/pause:3.10.1",
                        "ports": [{"containerPort": 80}],
                        "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}},
                    }
                ],
                **spec,
            },
        }
    )


def _spread(key: str, skew: int, when: str, labels: dict[str, str], **extra: Any) -> dict:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": skew,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": labels},
                **extra,
            }
        ]
    }


def measured_pods(shape: str, count: int) -> list[PodInfo]:
    blue = {"color": "blue"}
    if shape == "topology":
        spec = _spread(ZONE, 5, "DoNotSchedule", blue)
        return [make_pod(f"spread-{i}", labels=blue, **spec) for i in range(count)]
    if shape == "preferred":
        spec = _spread(ZONE, 5, "ScheduleAnyway", blue)
        return [make_pod(f"spread-{i}", labels=blue, **spec) for i in range(count)]
    if shape == "default":
        app = {"app": "scheduler-perf"}
        return [make_pod(f"svc-{i}", "0", app, "service-ns") for i in range(count)]
    if shape == "inclusion":
        foo = {"foo": "bar"}
        spec = _spread(
            "kubernetes.io/hostname",
            1,
            "DoNotSchedule",
            foo,
            nodeAffinityPolicy="Honor",
            nodeTaintsPolicy="Honor",
        )
        return [make_pod(f"incl-{i}", labels=foo, **spec) for i in range(count)]
    if shape == "basic":
        return [make_pod(f"pod-{i}") for i in range(count)]
    if shape == "unschedulable":
        out = []
        for i in range(count):
            out.append(make_pod(f"pod-{i}"))
            if i % 24 == 23:
                out.append(make_pod(f"huge-{i}", "9", priority=10))
        return out
    assert shape == "preemption"
    return [make_pod(f"high-{i}", "3000m", priority=10) for i in range(count)]


class _Handle:
    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def fits(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        return self.profile.fits(pod, node, snap)

    def passes(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> bool:
        return self.profile.passes(pod, node, snap)

    def rules_out(
        self,
        pod: PodInfo,
        node: NodeInfo,
        snap: Snapshot,
        added: Sequence[PodInfo] = (),
        taken: Sequence[PodInfo] = (),
    ) -> bool:
        return self.profile.rules_out(pod, node, snap, added, taken)

    def by_requests(self, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> bool:
        return self.profile.by_requests(pod, node, snap)

    def reprieve(
        self, pod: PodInfo, node: NodeInfo, snap: Snapshot, order: Sequence[PodInfo]
    ) -> list[PodInfo] | None:
        return self.profile.reprieve(pod, node, snap, order)

    def nominated_node(self, pod: PodInfo) -> str:
        return ""


class Loop:
    """The cycle's filter / score / pick / assume path, and its PostFilter for preemptors."""

    def __init__(self, profile: Profile, snap: Snapshot) -> None:
        self.profile = profile
        self.snap = snap
        self.nodes = list(snap.nodes.values())
        self.rng = random.Random(1)
        self.start = 0
        self.trail = hashlib.sha256()
        self.preempted = 0
        for plugin in profile.post_filters:
            if hasattr(plugin, "rng"):
                plugin.rng = random.Random(2)

    def place(self, pod: PodInfo, node: str) -> None:
        self.snap.nodes[node].add_pod(pod)
        self.snap.cluster.add_pod(pod, node)
        self.trail.update(f"{pod.uid}>{node};".encode())

    def cycle(self, pod: PodInfo) -> str:
        profile, snap, nodes = self.profile, self.snap, self.nodes
        state = CycleState()
        feasible, reasons, seen = filter_pass(profile, pod, nodes, snap, state, self.start, 0)
        self.start = (self.start + seen) % len(nodes)
        if not feasible:
            return self._preempt(pod, state, reasons)
        if len(feasible) == 1:
            chosen = feasible[0].name
        else:
            names, totals = profile.totals(pod, feasible, snap, state)
            chosen = names[pick_best(totals, self.rng)]
        self.place(pod, chosen)
        return chosen

    def _preempt(self, pod: PodInfo, state: CycleState, reasons: dict[str, Any]) -> str:
        handle = _Handle(self.profile)
        for plugin in self.profile.post_filters:
            result = plugin.post_filter(state, pod, self.snap, reasons, handle)
            if result.nominated_node:
                node = self.snap.nodes[result.nominated_node]
                for victim in result.victims:
                    node.remove_pod(victim)
                    self.snap.cluster.remove_pod(victim.uid)
                    self.trail.update(f"-{victim.uid};".encode())
                self.preempted += 1
                self.place(pod, node.name)
                return node.name
        self.trail.update(f"{pod.uid}>none;".encode())
        return ""


def build(shape: str, nodes: int, init: int, gpu_load: bool = False) -> Loop:
    tainted = nodes // 5 if shape == "inclusion" else 0
    snap = snapshot_of(make_nodes(nodes, tainted), now=time.time())
    if shape == "default":
        service = {
            "metadata": {"name": "service-0", "namespace": "service-ns"},
            "spec": {"selector": {"app": "scheduler-perf"}},
        }
        snap.cluster.replace(SERVICES, [service])
    doc = {"profiles": [GPU_LOAD_PROFILE]} if gpu_load else {}
    profile = build_profiles(parse_config(doc))["ballast"]
    loop = Loop(profile, snap)
    if shape == "preemption":
        # As the live run leaves them: kwok's start times are whole seconds, about 200 init
        # pods to a second, then the measured phase's 100m pod on each node, started last.
        for i, node in enumerate(loop.nodes):
            for j in range(4):
                low = make_pod(f"low-{i}-{j}", "900m")
                low.raw["status"] = {"startTime": _second((4 * i + j) // 200)}
                loop.place(low, node.name)
            if 4 * (i + 1) >= init:
                break
        for i, node in enumerate(loop.nodes):
            default = make_pod(f"default-{i}", "100m")
            default.raw["status"] = {"startTime": _second(60 + i // 200)}
            loop.place(default, node.name)
    else:
        for i in range(init):
            loop.cycle(make_pod(f"init-{i}"))
    return loop


def measure(run: Callable[[], object], profile: bool, top: int) -> tuple[float, str]:
    """The process CPU seconds `run` takes and, with `profile`, cProfile's `top` functions by
    cumulative time ("" without)."""
    prof = cProfile.Profile() if profile else None
    t0 = time.process_time()
    if prof is not None:
        prof.enable()
    run()
    if prof is not None:
        prof.disable()
    spent = time.process_time() - t0
    if prof is None:
        return spent, ""
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return spent, out.getvalue()


def _second(s: int) -> str:
    return f"2026-01-01T00:{s // 60:02d}:{s % 60:02d}Z"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", choices=SHAPES)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--init", type=int, default=5000, help="init pods (preemption: 20000)")
    parser.add_argument("--pods", type=int, default=1000, help="measured pods")
    parser.add_argument("--profile", action="store_true", help="cProfile the measured phase")
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument("--gpu-load", action="store_true", help="GpuLoad in the profile")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    runguard.start_run(parser, args.allow_dirty)
    loop = build(args.shape, args.nodes, args.init, args.gpu_load)
    pods = measured_pods(args.shape, args.pods)
    spent, profile = measure(lambda: [loop.cycle(pod) for pod in pods], args.profile, args.top)
    print(
        f"{args.shape}: {args.nodes} nodes, {args.init} init, {len(pods)} measured: "
        f"{1000 * spent / len(pods):.3f} ms CPU per pod, {loop.preempted} preempted, "
        f"digest {loop.trail.hexdigest()[:16]}"
    )
    print(profile, end="")
    print(runguard.describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
