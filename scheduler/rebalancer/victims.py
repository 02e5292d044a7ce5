"""Which pods the rebalancer may move, and in which order it tries them.

Eligible: a pod some controller recreates (ReplicaSet, StatefulSet; Job when `evictJobs`),
running, not terminating, placed by a scheduler the rebalancer judges for (its `schedulers`:
another scheduler would place the replacement without the judgement meaning anything for it),
in a namespace the `namespaceSelector` picks, of a workload with at least `minReplicas` replicas
(a Job's pods are allowed by `evictJobs` itself: a Job is no set of replicas serving alike).
Never: a pod annotated `ballast.dev/rebalance: "false"`, or whose controller (ReplicaSet,
StatefulSet, and the Deployment owning the ReplicaSet, read from the cache) carries it on itself
or on its pod template; a pod annotated `cluster-autoscaler.kubernetes.io/safe-to-evict:
"false"` (the annotation operators already set for the autoscaler's drains); DaemonSet pods
(they come back on the same node), mirror/static pods, bare pods, pods with local storage
(emptyDir, hostPath) unless allowed, system-critical priority, excluded namespaces.

Order (the order a CPU-hot node's candidates are looked at; which moves are made is chosen as
a set, selection.py, with priority and QoS as costs): lower priority, then QoS (its
`status.qosClass`; computed from parsed quantities when the status has none: BestEffort,
Burstable, Guaranteed), then how well the pod's predicted use covers the node's excess: the
smallest pod that covers it alone first, then the others biggest first.

The use of a pod is predicted by `Estimator`: the scheduler's one estimate with the settings of
the judging profile's load plugin (its workload's measured profile from the watcher, else that
plugin's request rule: TargetLoadPacking's limit, else request x multiplier, else a default;
LoadVariationRiskBalancing's requests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.framework import CPU, MEMORY, NodeInfo, PodInfo, resources
from scheduler.framework.clusterindex import DEPLOYMENTS, REPLICA_SETS, STATEFUL_SETS, ClusterIndex
from scheduler.framework.workloads import NO_PROFILES, WorkloadProfiles
from scheduler.plugins.helpers import estimator
from scheduler.rebalancer.settings import RebalancerSettings
from shared.quantities import bytes_value, cpu_millis

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
SYSTEM_CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")
RECREATED_KINDS = ("ReplicaSet", "StatefulSet")
JOB = "Job"
QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}

# Reasons a pod is not a candidate (metric label values, decision log).
MIRROR, DAEMONSET, BARE, JOBS, OTHER_OWNER = "mirror", "daemonset", "bare", "job", "other-owner"
LOCAL_STORAGE, CRITICAL, EXCLUDED = "local-storage", "system-critical", "excluded-namespace"
NOT_RUNNING, TERMINATING = "not-running", "terminating"
OTHER_SCHEDULER, OPTED_OUT = "other-scheduler", "opted-out"
NOT_SELECTED, FEW_REPLICAS = "namespace-not-selected", "min-replicas"
NOT_SAFE = "not-safe-to-evict"

OPT_OUT_ANNOTATION = "ballast.dev/rebalance"  # "false" on a pod or its template: never moved
# The cluster autoscaler's: "false" on a pod keeps it through a scale-down's drain; a pod the
# operator keeps from the autoscaler is not one to move for load either.
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"
CONTROLLER_KINDS = {"ReplicaSet": REPLICA_SETS, "StatefulSet": STATEFUL_SETS}


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def controller_of(pod: PodInfo) -> tuple[str, str] | None:
    """(kind, name) of the pod's controlling owner."""
    for ref in (pod.raw.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


def workload_of(pod: PodInfo) -> Workload | None:
    owner = controller_of(pod)
    return Workload(owner[0], pod.namespace, owner[1]) if owner else None


def has_local_storage(pod: PodInfo) -> bool:
    volumes = (pod.raw.get("spec") or {}).get("volumes") or []
    return any("emptyDir" in v or "hostPath" in v for v in volumes)


def ineligible(pod: PodInfo, settings: RebalancerSettings) -> str:
    """Why the pod may not be moved; "" when it may."""
    meta = pod.raw.get("metadata") or {}
    spec = pod.raw.get("spec") or {}
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return MIRROR
    if pod.scheduler_name not in settings.schedulers:
        return OTHER_SCHEDULER
    if opted_out(meta):
        return OPTED_OUT
    annotations = meta.get("annotations") or {}
    if str(annotations.get(SAFE_TO_EVICT_ANNOTATION, "")).strip().lower() == "false":
        return NOT_SAFE
    if meta.get("deletionTimestamp"):
        return TERMINATING
    if pod.phase not in ("Running", ""):
        return NOT_RUNNING
    owner = controller_of(pod)
    if owner is None:
        return BARE
    if owner[0] == "DaemonSet":
        return DAEMONSET
    if owner[0] == JOB and not settings.evict_jobs:
        return JOBS
    if owner[0] not in (*RECREATED_KINDS, JOB):
        return OTHER_OWNER
    if pod.namespace in settings.excluded_namespaces:
        return EXCLUDED
    critical = spec.get("priorityClassName") in SYSTEM_CRITICAL_CLASSES
    if critical or pod.priority >= settings.system_critical_priority:
        return CRITICAL
    if not settings.evict_local_storage and has_local_storage(pod):
        return LOCAL_STORAGE
    return ""


def opted_out(meta: dict[str, Any]) -> bool:
    value = (meta.get("annotations") or {}).get(OPT_OUT_ANNOTATION, "")
    return str(value).strip().lower() == "false"


def controller_object(workload: Workload, index: ClusterIndex) -> dict[str, Any] | None:
    """The workload's ReplicaSet or StatefulSet as the cache holds it (None for a Job, or one
    the cache has not seen)."""
    kind = CONTROLLER_KINDS.get(workload.kind)
    if kind is None:
        return None
    return index.objects.get(kind, {}).get(f"{workload.namespace}/{workload.name}")


def owner_chain(workload: Workload, index: ClusterIndex) -> list[dict[str, Any]]:
    """The workload's controller and the Deployment that controls it (a ReplicaSet's owner), as
    the cache holds them; those the cache has not seen are left out."""
    obj = controller_object(workload, index)
    if obj is None:
        return []
    chain = [obj]
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Deployment":
            key = f"{workload.namespace}/{ref.get('name', '')}"
            owner = index.objects.get(DEPLOYMENTS, {}).get(key)
            if owner is not None:
                chain.append(owner)
    return chain


def workload_ineligible(
    workload: Workload, index: ClusterIndex, settings: RebalancerSettings
) -> str:
    """Why none of the workload's pods may be moved, from the cache: its namespace is not
    selected, its controller or the Deployment above it opts out (on itself or its pod
    template), or it has fewer than minReplicas replicas (a controller the cache does not know
    counts as one; a Job's pods are allowed by evictJobs alone)."""
    selector = settings.namespace_selector
    if not selector.everything:
        labels = index.namespace_labels(workload.namespace)
        if labels is None or not selector.matches(labels):
            return NOT_SELECTED
    chain = owner_chain(workload, index)
    for obj in chain:
        spec = obj.get("spec") or {}
        if opted_out(obj.get("metadata") or {}) or opted_out(
            (spec.get("template") or {}).get("metadata") or {}
        ):
            return OPTED_OUT
    if workload.kind == JOB:
        return ""  # evictJobs said yes: a Job has no replicas serving alike to keep
    replicas = (chain[0].get("spec") or {}).get("replicas", 1) if chain else 1
    if replicas < settings.min_replicas:
        return FEW_REPLICAS
    return ""


def qos_class(pod: PodInfo) -> str:
    """The pod's QoS class: its status's, else Kubernetes' rule on its containers' requests and
    limits, quantities parsed ("1" and "1000m" are the same CPU)."""
    status = (pod.raw.get("status") or {}).get("qosClass")
    if status in QOS_RANK:
        return str(status)
    containers = (pod.raw.get("spec") or {}).get("containers") or []
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        if any(k in limits or k in requests for k in (CPU, MEMORY)):
            any_set = True
        for name in (CPU, MEMORY):
            limit = limits.get(name)
            if limit is None:
                guaranteed = False
                continue
            value = cpu_millis if name == CPU else bytes_value
            try:
                if value(requests.get(name, limit)) != value(limit):
                    guaranteed = False
            except ValueError:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class Estimator:
    """A pod's predicted use, as the scheduler predicts a new pod's (plugins/helpers/estimator.py)
    with the settings of the judging profile's load plugin: its workload's measured profile when
    the watcher has one, else that plugin's request rule: TargetLoadPacking's (limit, else request
    x multiplier, else a default) or, with `from_requests`, LoadVariationRiskBalancing's (the
    pod's requests)."""

    def __init__(
        self,
        default_cpu_m: int = resources.DEFAULT_REQUESTS_CPU_M,
        multiplier: float = resources.DEFAULT_REQUESTS_MULTIPLIER,
        args: estimator.EstimatorArgs | None = None,
        profiles: Callable[[], WorkloadProfiles] = lambda: NO_PROFILES,
        from_requests: bool = False,
    ) -> None:
        self.default_cpu_m = default_cpu_m
        self.multiplier = multiplier
        self.args = args or estimator.DEFAULT_ARGS
        self.profiles = profiles
        self.from_requests = from_requests

    @classmethod
    def for_profile(
        cls, profile: Any, profiles: Callable[[], WorkloadProfiles] = lambda: NO_PROFILES
    ) -> Estimator:
        """With the args of the profile's load-aware score plugin of most weight (one with an
        estimator: TargetLoadPacking, LoadVariationRiskBalancing), the defaults without one."""
        loads = [
            (weight, args)
            for plugin, weight in getattr(profile, "scores", ())
            if hasattr(args := getattr(plugin, "args", None), "estimator")
        ]
        if not loads:
            return cls(profiles=profiles)
        _, args = max(loads, key=lambda wa: wa[0])
        if hasattr(args, "default_requests_cpu_m"):
            return cls(
                args.default_requests_cpu_m,
                args.default_requests_multiplier,
                args.estimator,
                profiles,
            )
        return cls(args=args.estimator, profiles=profiles, from_requests=True)

    def with_args(self, args: estimator.EstimatorArgs) -> Estimator:
        return Estimator(
            self.default_cpu_m, self.multiplier, args, self.profiles, self.from_requests
        )

    def estimate(self, pod: PodInfo) -> estimator.Estimate:
        if self.from_requests:
            requested = (pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0))
            return estimator.estimate(pod, self.profiles(), self.args, requested)
        cpu_m = resources.predicted_cpu_m(pod, self.default_cpu_m, self.multiplier)
        memory = estimator.request_estimate(pod, self.args).memory
        return estimator.estimate(pod, self.profiles(), self.args, (cpu_m, memory))

    def use(self, pod: PodInfo, resource: str) -> int:
        guess = self.estimate(pod)
        return guess.cpu_m if resource == CPU else guess.memory

    def percent(self, pod: PodInfo, node: NodeInfo, resource: str) -> float:
        allocatable = node.allocatable.get(resource, 0)
        return 100.0 * self.use(pod, resource) / allocatable if allocatable > 0 else 0.0


def order(
    pods: list[PodInfo],
    excess: dict[str, float],
    share: Callable[[PodInfo, str], float],
) -> list[PodInfo]:
    """Cheapest move first; `excess` in percentage points per resource above high, `share`
    the pod's predicted percent of its node for a resource."""
    main = max(excess, key=lambda r: excess[r]) if excess else CPU
    need = excess.get(main, 0.0)

    def key(pod: PodInfo) -> tuple[Any, ...]:
        part = share(pod, main)
        cover = (0, part) if part >= need else (1, -part)
        return (pod.priority, QOS_RANK[qos_class(pod)], *cover, pod.key)

    return sorted(pods, key=key)
