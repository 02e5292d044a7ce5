"""What `ballast demo` runs: eight nodes of mixed sizes and six Deployments (about forty pods).

kube-controller-manager runs in the demo's sandbox, so these are real Deployments: their
ReplicaSets create the pods (named `web-<hash>-<suffix>`), Ballast places the ones whose template
says `schedulerName: ballast`, kwok runs them, and the disruption controller keeps the status of
the PodDisruptionBudget on `web` current.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.cluster.nodes import NodeSpec

SCHEDULER_NAME = "ballast"
NAMESPACE = "demo"
GROUP_LABEL = "app"
OPT_OUT = "ballast.dev/rebalance"  # "false" on a pod template: the rebalancer never moves it

NODES = [
    NodeSpec("small-1", cpu="2", memory="4Gi"),
    NodeSpec("small-2", cpu="2", memory="4Gi"),
    NodeSpec("medium-1", cpu="4", memory="16Gi"),
    NodeSpec("medium-2", cpu="4", memory="16Gi"),
    NodeSpec("medium-3", cpu="4", memory="16Gi"),
    NodeSpec("large-1", cpu="8", memory="32Gi"),
    NodeSpec("large-2", cpu="8", memory="32Gi"),
    NodeSpec("xlarge-1", cpu="16", memory="64Gi"),
]
# Background load (CPU %, memory %) that makes some nodes busy before any pod lands; the
# others draw theirs from the simulator's seeded range.
BUSY_NODES = {"medium-2": (70.0, 40.0), "large-2": (55.0, 30.0)}


@dataclass(frozen=True)
class Group:
    """One Deployment: its pod template's requests and scheduler."""

    name: str
    replicas: int
    cpu: str | None  # None: no requests at all (BestEffort)
    memory: str | None
    scheduler: str | None = SCHEDULER_NAME  # None: the default scheduler
    note: str = ""
    stays: bool = False  # opted out of rebalancing: the rebalancer never moves its pods

    def deployment(self, namespace: str = NAMESPACE) -> dict:
        return deployment_body(self, namespace)


GROUPS = [
    Group("web", 12, "500m", "512Mi", note="requests 500m / 512Mi"),
    Group("api", 8, "1", "1Gi", note="requests 1 CPU / 1Gi"),
    Group("cache", 6, "250m", "2Gi", note="requests 250m / 2Gi"),
    Group("batch", 10, None, None, note="no requests (BestEffort), never rebalanced", stays=True),
    Group("legacy", 3, "100m", "128Mi", scheduler=None, note="no schedulerName"),
    Group("huge", 1, "64", "8Gi", note="requests 64 CPUs: fits nowhere"),
]
# The one PodDisruptionBudget: at most two web pods down at a time.
PDB = ("web", 10)  # (Deployment, minAvailable)
# After the groups: this Deployment is scaled up by this many replicas, placed by load.
SCALE_UP = ("web", 6)
UNPLACEABLE = "huge"


def deployment_body(group: Group, namespace: str = NAMESPACE) -> dict:
    container: dict = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if group.cpu or group.memory:
        requests = {k: v for k, v in (("cpu", group.cpu), ("memory", group.memory)) if v}
        container["resources"] = {"requests": requests}
    spec: dict = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if group.scheduler:
        spec["schedulerName"] = group.scheduler
    labels = {GROUP_LABEL: group.name}
    template: dict = {"metadata": {"labels": labels}, "spec": spec}
    if group.stays:
        # The rebalancer's opt-out (docs/rebalancer.md): work that would lose its progress.
        template["metadata"]["annotations"] = {OPT_OUT: "false"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": group.name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": group.replicas,
            "selector": {"matchLabels": labels},
            "template": template,
        },
    }


def pdb_body(namespace: str = NAMESPACE) -> dict:
    name, min_available = PDB
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {GROUP_LABEL: name}}},
    }


def total_pods() -> int:
    """Pods once every Deployment is created and scaled."""
    return sum(g.replicas for g in GROUPS) + SCALE_UP[1]
