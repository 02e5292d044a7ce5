"""The one estimate of what a pod will use, for every place that predicts it: TargetLoadPacking,
LoadVariationRiskBalancing, LoadThreshold, recently bound pods, preemption's tie-break and the
rebalancer.

In order:
1. `profile`: the pod's workload revision (shared.workloads) has a profile from the watcher
   with at least `min_samples` per-replica samples, whose newest sample is at most
   `max_profile_age` seconds older than the document (a revision no replica has run for that
   long describes a past the pod will not meet): its `statistic` (p95 by default) of CPU and
   memory per replica. A profile seen on fewer than three distinct replicas uses its max: with
   two replicas a p95 is one replica's worst moment at best.
2. `profile-previous`: the pod's revision has no such profile (a rollout just began) but an
   older revision of the workload has one: that one's figures. Never a newer revision: a pod
   of the old template during a rollout is not predicted from the new one's use.
3. `requests`: the caller's request-based rule when it has one (TargetLoadPacking's and
   LoadThreshold's Trimaran args; LoadVariationRiskBalancing's requests), else Koordinator's:
   the limit when it is above the request, else the request scaled by 85 % (CPU) or 70 %
   (memory), never above the limit.
4. `default`: a resource the pod neither requests nor limits: 250m CPU, 200Mi memory
   (Koordinator's defaults).

A profile's CPU figure has a floor: `profile_floor` times the request-based figure of 3.
(docs/profiles.md says why 0.5): the replicas of an idle workload measure ~0, and a new
replica predicted at ~0 adds nothing to its node, so a scale-out would pile onto one node.
`Estimate.floored` says when the floor was used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import CPU, MEMORY, PodInfo
from scheduler.framework.resources import go_round
from scheduler.framework.workloads import RevisionProfile, WorkloadProfiles
from shared.workloads import Workload, workload_of

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

PROFILE = "profile"
PROFILE_PREVIOUS = "profile-previous"
REQUESTS = "requests"
DEFAULT = "default"
STATISTICS = ("p50", "p95", "max")
FEW_REPLICAS = 3  # fewer distinct replicas than this: the profile's max stands in
_MEMO = "estimator.workload"


@dataclass(frozen=True)
class EstimatorArgs:
    statistic: str = "p95"
    min_samples: int = 10
    cpu_scaling: float = 0.85  # Koordinator's scalingFactors: cpu 85, memory 70 (percent)
    memory_scaling: float = 0.70
    default_cpu_m: int = 250
    default_memory: int = 200 * 1024**2
    use_profiles: bool = True
    # A profile's CPU is at least this fraction of the request-based figure (see the docs).
    profile_floor: float = 0.5
    # A revision whose newest sample is this much older than the profiles (watcher's clock,
    # plus what the scheduler has held them) is not used; 0: no limit.
    max_profile_age: float = 600.0


DEFAULT_ARGS = EstimatorArgs()


def parse_estimator_args(f: Fields) -> EstimatorArgs:
    """The optional `usageEstimate` section of a load-aware plugin's args."""
    s = f.section("usageEstimate")
    d = DEFAULT_ARGS
    args = EstimatorArgs(
        statistic=s.string("statistic", d.statistic, STATISTICS),
        min_samples=s.integer("minSamples", d.min_samples, 1, 1_000_000),
        cpu_scaling=s.number("cpuScaling", d.cpu_scaling, 0, 100),
        memory_scaling=s.number("memoryScaling", d.memory_scaling, 0, 100),
        default_cpu_m=s.cpu("defaultCPU", d.default_cpu_m),
        default_memory=int(s.number("defaultMemoryBytes", d.default_memory, 0)),
        use_profiles=s.boolean("useProfiles", d.use_profiles),
        profile_floor=s.number("profileFloor", d.profile_floor, 0, 1),
        max_profile_age=s.number("maxProfileAgeSeconds", d.max_profile_age, 0),
    )
    s.finish()
    return args


@dataclass(frozen=True)
class Estimate:
    cpu_m: int
    memory: int  # bytes
    source: str  # PROFILE, PROFILE_PREVIOUS, REQUESTS or DEFAULT (the CPU figure's)
    workload: str = ""  # `namespace/Kind/name@revision` of the profile used
    floored: bool = False  # the profile's CPU was under the floor, which stands in for it

    @property
    def learned(self) -> bool:
        """Whether the CPU figure comes from a workload's profile rather than a request."""
        return self.source in (PROFILE, PROFILE_PREVIOUS)

    def describe(self) -> str:
        where = f" of {self.workload}" if self.workload else ""
        floor = " (CPU at the floor)" if self.floored else ""
        return (
            f"{self.cpu_m}m CPU, {self.memory // 1024**2}Mi memory from {self.source}{where}{floor}"
        )


# TargetLoadPacking's and LoadVariationRiskBalancing's `orderSaturated`: which predictions rank
# saturated nodes by overflow (their module docs). `true` and `false` are accepted for always/never.
ORDER_LEARNED, ORDER_ALWAYS, ORDER_NEVER = "learned", "always", "never"
ORDER_SATURATED = (ORDER_LEARNED, ORDER_ALWAYS, ORDER_NEVER)


def parse_order_saturated(f: Fields, default: str = ORDER_LEARNED) -> str:
    value = f.raw("orderSaturated", default)
    if isinstance(value, bool):
        return ORDER_ALWAYS if value else ORDER_NEVER
    if value not in ORDER_SATURATED:
        choices = ", ".join(ORDER_SATURATED)
        raise f.error("orderSaturated", f"must be one of {choices}, true, false; got {value!r}")
    return value


def orders_saturated(mode: str, predicted: Estimate) -> bool:
    """Whether this prediction ranks saturated nodes, under `orderSaturated` = `mode`."""
    return mode == ORDER_ALWAYS or (mode == ORDER_LEARNED and predicted.learned)


def scaled(request: int, limit: int, scaling: float, default: int) -> tuple[int, bool]:
    """Koordinator's estimate of one resource: (amount, whether the default was used)."""
    if limit > request:
        return limit, False
    if request <= 0:
        return default, True
    amount = go_round(request * scaling)
    return (min(amount, limit) if limit > 0 else amount), False


def request_estimate(pod: PodInfo, args: EstimatorArgs = DEFAULT_ARGS) -> Estimate:
    cpu, cpu_default = scaled(
        pod.requests.get(CPU, 0), pod.limits.get(CPU, 0), args.cpu_scaling, args.default_cpu_m
    )
    memory, _ = scaled(
        pod.requests.get(MEMORY, 0),
        pod.limits.get(MEMORY, 0),
        args.memory_scaling,
        args.default_memory,
    )
    return Estimate(cpu, memory, DEFAULT if cpu_default else REQUESTS)


def workload(pod: PodInfo) -> Workload | None:
    """The pod's workload, parsed once per PodInfo."""
    if _MEMO not in pod.memo:
        pod.memo[_MEMO] = workload_of(pod.raw.get("metadata") or {})
    return pod.memo[_MEMO]


def profile_for(
    pod: PodInfo, profiles: WorkloadProfiles, args: EstimatorArgs = DEFAULT_ARGS
) -> tuple[RevisionProfile, str, str] | None:
    """(profile, source, `key@revision`) for the pod, or None when no revision it may use
    has enough samples and is recent enough."""
    if not args.use_profiles or not profiles.by_key:
        return None
    w = workload(pod)
    if w is None:
        return None
    found = profiles.by_key.get(w.key)
    if found is None:
        return None
    now = profiles.built + profiles.held if profiles.built > 0 else 0.0  # watcher's clock
    revisions = list(found.revisions)  # newest first
    if w.revision in found.revisions:
        own = found.revisions[w.revision]
        if _usable(own, now, args):
            return own, PROFILE, f"{w.key}@{w.revision}"
        older = revisions[revisions.index(w.revision) + 1 :]
    else:
        # A revision the watcher has not seen yet is newer than every one it lists: a
        # rollout's first pods run before the watcher's next pod list finds them.
        older = revisions
    for revision in older:
        other = found.revisions[revision]
        if _usable(other, now, args):
            return other, PROFILE_PREVIOUS, f"{w.key}@{revision}"
    return None


def _usable(rev: RevisionProfile, now: float, args: EstimatorArgs) -> bool:
    if rev.samples < args.min_samples:
        return False
    # Without the document's time (a hand-made or old watcher's document) the age is unknown.
    return not (args.max_profile_age > 0 and now > 0 and now - rev.last > args.max_profile_age)


def estimate(
    pod: PodInfo,
    profiles: WorkloadProfiles,
    args: EstimatorArgs = DEFAULT_ARGS,
    fallback: tuple[int, int] | None = None,
) -> Estimate:
    """The pod's predicted use. `fallback`: the caller's own request-based (CPU m, memory
    bytes), used instead of Koordinator's scaling when no profile applies, and the base of the
    profile's CPU floor."""
    found = profile_for(pod, profiles, args)
    if found is None:
        if fallback is not None:
            return Estimate(fallback[0], fallback[1], REQUESTS)
        return request_estimate(pod, args)
    rev, source, where = found
    statistic = "max" if rev.distinct_pods < FEW_REPLICAS else args.statistic
    cpu = go_round(rev.cpu_m.get(statistic))
    memory = go_round(rev.memory.get(statistic))
    by_requests = fallback[0] if fallback is not None else request_estimate(pod, args).cpu_m
    floor = go_round(args.profile_floor * by_requests)
    if cpu < floor:
        return Estimate(floor, memory, source, where, floored=True)
    return Estimate(cpu, memory, source, where)
