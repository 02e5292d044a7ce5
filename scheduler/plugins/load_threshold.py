"""LoadThreshold: keep a pod off nodes its predicted load would push past a set percentage.

CPU: usage % (through loadview: fallback and blend included) plus the pod's TargetLoadPacking
prediction and recently bound pods, over status.capacity. Memory: usage % plus the pod's memory
request over allocatable. A threshold of 0 turns that resource's check off.

With a workload profile (plugins/helpers/estimator.py) the pod counts at the lower of its
profile and its request-based estimate: a profile can let a pod onto a node its requests would
keep off, never the reverse; a node already past the threshold with the pod counted at that
lower figure is full either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import CPU, MEMORY, CycleState, NodeInfo, PodInfo, Snapshot, Status
from scheduler.framework.resources import (
    DEFAULT_REQUESTS_CPU_M,
    DEFAULT_REQUESTS_MULTIPLIER,
    predicted_cpu_m,
)
from scheduler.plugins.helpers.estimator import EstimatorArgs, estimate, parse_estimator_args
from scheduler.plugins.helpers.loadview import parse_prediction, recent_cpu_m, usage

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

NAME = "LoadThreshold"
_KEY = NAME + ".predicted"
_MEMORY_KEY = NAME + ".predicted_memory"


@dataclass(frozen=True)
class Args:
    cpu_threshold: float = 80.0
    memory_threshold: float = 0.0
    default_requests_cpu_m: int = DEFAULT_REQUESTS_CPU_M
    default_requests_multiplier: float = DEFAULT_REQUESTS_MULTIPLIER
    estimator: EstimatorArgs = EstimatorArgs()


def parse_args(f: Fields) -> Args:
    d = Args()
    cpu_m, multiplier = parse_prediction(f, d.default_requests_cpu_m, d.default_requests_multiplier)
    args = Args(
        cpu_threshold=f.number("cpuThreshold", d.cpu_threshold, 0, 100),
        memory_threshold=f.number("memoryThreshold", d.memory_threshold, 0, 100),
        default_requests_cpu_m=cpu_m,
        default_requests_multiplier=multiplier,
        estimator=parse_estimator_args(f),
    )
    f.finish()
    return args


class Plugin:
    name = NAME
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: Args | None = None) -> None:
        self.args = args or Args()

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool:
        a = self.args
        cpu_m = predicted_cpu_m(pod, a.default_requests_cpu_m, a.default_requests_multiplier)
        memory = pod.requests.get(MEMORY, 0)
        learned = estimate(pod, snap.workloads, a.estimator, (cpu_m, memory))
        state[_KEY] = min(cpu_m, learned.cpu_m)
        state[_MEMORY_KEY] = min(memory, learned.memory)
        return a.cpu_threshold > 0 or a.memory_threshold > 0

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        a = self.args
        if _KEY not in state:
            self.pre_filter(state, pod, snap)
        reasons = []
        capacity = node.capacity.get(CPU, 0)
        if a.cpu_threshold > 0 and capacity > 0:
            u = usage(state, node, snap, CPU)
            extra_m = state[_KEY] + recent_cpu_m(snap, node, u)
            if u.avg + 100 * extra_m / capacity > a.cpu_threshold:
                reasons.append("node(s) were above the cpu load threshold")
        allocatable = node.allocatable.get(MEMORY, 0)
        if a.memory_threshold > 0 and allocatable > 0:
            u = usage(state, node, snap, MEMORY)
            if u.avg + 100 * state[_MEMORY_KEY] / allocatable > a.memory_threshold:
                reasons.append("node(s) were above the memory load threshold")
        return Status.reject(*reasons) if reasons else Status.success()
