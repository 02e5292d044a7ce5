"""Replaying a trace's VMs as workloads: what each pod of the sandbox uses, second by second.

The mapping (docs/trace.md):
- a VM becomes a workload (a Deployment named after it); its pods request what the VM was
  given most often, scaled: one VM core used is `cpu_m_per_core` millicores of use, one VM core
  given is `cpu_m_per_core / overcommit` millicores of request, memory times `memory_scale`
  for both (defaults 200 m, 4 and 1/16: the Bitbrains mix of 1-8 cores and 0.1-16 GB requests
  50-400 m and 6 MiB-1 GiB, and a VM saturating 8 cores uses 1.6 CPUs). The overcommit is the
  hosts': the VMs' cores were themselves vCPUs shared 4:1-style. At 1:1 a pool whose requests
  are full never gets hot, and there is nothing to rebalance (docs/trace.md has the figures);
- a workload has 1, 2 or 3 replicas (`replicas`, a third of the VMs each, seeded): every
  replica uses the VM's series, each with its own noise (a factor 1 +- `noise`, uniform,
  independent per replica and step). Replicas of one workload therefore look alike and move
  together, as the replicas of a service do, which is what a workload profile learns from;
  a one-replica workload leaves nothing to learn before its pod runs;
- time is compressed: one trace step (300 s) lasts `step_seconds` of wall time (default 2 s,
  one watcher poll in the benchmarks: 150x). Between steps the use is interpolated linearly.
  Before `start` the replay holds its first step, so pods placed and settled before the
  measured replay use what the trace's first step says.

`use(pod key, now)` is a pure function of the key, the time and the seed, so a benchmark can
ask what an evicted pod would have used had it stayed. The simulator (sandbox.load.simulator)
asks it for every pod, through `SimulatorConfig.trace`; pods it does not know keep the
simulator's own model.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sandbox.load.trace import STEP_SECONDS, Trace, VmSeries

KIB = 1024


@dataclass(frozen=True)
class PlayerConfig:
    cpu_m_per_core: float = 200.0
    overcommit: float = 4.0
    memory_scale: float = 1 / 16
    step_seconds: float = 2.0  # wall seconds per trace step
    noise: float = 0.1
    seed: int = 1

    def __post_init__(self) -> None:
        if min(self.cpu_m_per_core, self.overcommit, self.memory_scale, self.step_seconds) <= 0:
            raise ValueError("cpu_m_per_core, overcommit, memory_scale, step_seconds must be > 0")
        if not 0 <= self.noise < 1:
            raise ValueError(f"noise must be in [0, 1), got {self.noise}")

    @property
    def compression(self) -> float:
        """Trace seconds per wall second."""
        return STEP_SECONDS / self.step_seconds


def replicas(vm_id: str, seed: int) -> int:
    """1, 2 or 3, a third of the VMs each, the same for the same VM and seed."""
    return random.Random(f"replicas:{seed}:{vm_id}").choice((1, 2, 3))


def deployment_of(key: str) -> str | None:
    """A Deployment's pod `<namespace>/<deployment>-<template hash>-<suffix>` -> deployment."""
    name = key.split("/", 1)[-1]
    parts = name.rsplit("-", 2)
    return parts[0] if len(parts) == 3 else None


def workload_name(vm_id: str) -> str:
    return f"vm{vm_id}"


STEPS_PER_DAY = 288


def windows(trace: Trace) -> int:
    """How many days a replay window can start on: every whole day but the first (day 0 is
    what came before every window) and the last (a window must not run off the trace)."""
    return max(1, trace.steps // STEPS_PER_DAY - 1)


def day_start(trace: Trace, seed: int) -> int:
    """The first step of the day a benchmark's seed replays: days 1, 2, ... in turn."""
    return (1 + (seed - 1) % windows(trace)) * STEPS_PER_DAY


def select(
    trace: Trace, cpu_budget_m: float, config: PlayerConfig, seed: int
) -> list[tuple[str, int]]:
    """(VM id, replicas) in a seeded order, as many as fit `cpu_budget_m` of scaled requests."""
    order = sorted(trace.vms)
    random.Random(f"select:{seed}").shuffle(order)
    chosen, total = [], 0.0
    for vm in order:
        n = replicas(vm, seed)
        cost = n * trace.vms[vm].request_cores * config.cpu_m_per_core / config.overcommit
        if total + cost <= cpu_budget_m:
            chosen.append((vm, n))
            total += cost
    return chosen


class TracePlayer:
    """Each pod's use at a wall time, from the VM its workload replays (see the module)."""

    def __init__(
        self,
        trace: Trace,
        workloads: Mapping[str, str],
        config: PlayerConfig | None = None,
        first_step: int = 0,
        workload_of: Callable[[str], str | None] = deployment_of,
    ) -> None:
        """`workloads`: workload name -> VM id; `workload_of`: pod key -> workload name."""
        self.trace = trace
        self.config = config or PlayerConfig()
        unknown = sorted(set(workloads.values()) - set(trace.vms))
        if unknown:
            raise ValueError(f"VMs not in the trace: {unknown[:5]}")
        if not 0 <= first_step < trace.steps:
            raise ValueError(f"first_step {first_step} outside the trace's {trace.steps} steps")
        self.workloads = dict(workloads)
        self.first_step = first_step
        self.workload_of = workload_of
        self.started: float | None = None
        self._noise: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def start(self, wall: float) -> None:
        """The replay moves from `wall` on, one step every `step_seconds`."""
        self.started = wall

    def step_at(self, now: float) -> float:
        """The trace step (fractional) that wall time `now` replays, within the trace."""
        if self.started is None or now <= self.started:
            step = float(self.first_step)
        else:
            step = self.first_step + (now - self.started) / self.config.step_seconds
        return min(step, self.trace.steps - 1.0)

    def vm_of(self, key: str) -> VmSeries | None:
        workload = self.workload_of(key)
        vm = self.workloads.get(workload) if workload is not None else None
        return None if vm is None else self.trace.vms[vm]

    def requests(self, vm_id: str) -> tuple[int, int]:
        """(CPU millicores, memory bytes) a pod of the VM's workload requests."""
        vm = self.trace.vms[vm_id]
        cpu = round(vm.request_cores * self.config.cpu_m_per_core / self.config.overcommit)
        return cpu, round(vm.request_memory_kb * KIB * self.config.memory_scale)

    def use(self, key: str, now: float) -> tuple[float, float] | None:
        """(CPU millicores, memory bytes) the pod `namespace/name` uses at `now`; None when its
        workload replays no VM."""
        vm = self.vm_of(key)
        if vm is None:
            return None
        step = self.step_at(now)
        low = int(step)
        high = min(low + 1, self.trace.steps - 1)
        frac = step - low
        noise = self._noise_of(key)
        factors = (1 - frac) * noise[low], frac * noise[high]
        cpu = factors[0] * vm.cpu_used[low] + factors[1] * vm.cpu_used[high]
        memory = factors[0] * vm.memory_used_kb[low] + factors[1] * vm.memory_used_kb[high]
        return (
            float(cpu) * self.config.cpu_m_per_core,
            float(memory) * KIB * self.config.memory_scale,
        )

    def step_use(self, key: str, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(CPU millicores, memory bytes) the pod uses at each of the trace `steps` (whole
        steps, any of the trace's, before `first_step` too): what `use` interpolates between;
        None when its workload replays no VM."""
        vm = self.vm_of(key)
        if vm is None:
            return None
        noise = self._noise_of(key)[steps]
        cpu = noise * vm.cpu_used[steps] * self.config.cpu_m_per_core
        memory = noise * vm.memory_used_kb[steps] * KIB * self.config.memory_scale
        return cpu, memory

    def _noise_of(self, key: str) -> np.ndarray:
        """The pod's own factor per step, drawn once for the whole trace."""
        with self._lock:
            noise = self._noise.get(key)
            if noise is None:
                digest = hashlib.sha256(f"{self.config.seed}:{key}".encode()).digest()
                rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
                width = self.config.noise
                noise = 1.0 + rng.uniform(-width, width, self.trace.steps)
                self._noise[key] = noise
            return noise
