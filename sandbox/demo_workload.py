"""What `ballast demo` runs: eight nodes of mixed sizes and about forty pods in five groups.

No kube-controller-manager runs in the sandbox, so a Deployment object would never get pods.
The demo therefore creates the pods itself, named and labelled like a Deployment's
(`web-0`, `web-1`, ... with `app: web`), and owned by nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.nodes import NodeSpec

SCHEDULER_NAME = "ballast"
NAMESPACE = "demo"
GROUP_LABEL = "app"

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
BUSY_NODES = {"medium-2": (75.0, 40.0), "large-2": (55.0, 30.0)}


@dataclass(frozen=True)
class Group:
    """Pods that a Deployment would own: same template, numbered names."""

    name: str
    replicas: int
    cpu: str | None  # None: no requests at all (BestEffort)
    memory: str | None
    scheduler: str | None = SCHEDULER_NAME  # None: the default scheduler
    note: str = ""

    def pods(self, namespace: str = NAMESPACE) -> list[dict]:
        return [pod_body(self, i, namespace) for i in range(self.replicas)]


GROUPS = [
    Group("web", 12, "500m", "512Mi", note="requests 500m / 512Mi"),
    Group("api", 8, "1", "1Gi", note="requests 1 CPU / 1Gi"),
    Group("cache", 6, "250m", "2Gi", note="requests 250m / 2Gi"),
    Group("batch", 10, None, None, note="no requests (BestEffort)"),
    Group("legacy", 3, "100m", "128Mi", scheduler=None, note="no schedulerName"),
    Group("huge", 1, "64", "8Gi", note="requests 64 CPUs: fits nowhere"),
]


def pod_body(group: Group, index: int, namespace: str = NAMESPACE) -> dict:
    container: dict = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if group.cpu or group.memory:
        requests = {k: v for k, v in (("cpu", group.cpu), ("memory", group.memory)) if v}
        container["resources"] = {"requests": requests}
    spec: dict = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if group.scheduler:
        spec["schedulerName"] = group.scheduler
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{group.name}-{index}",
            "namespace": namespace,
            "labels": {GROUP_LABEL: group.name, "ballast.demo/group": group.name},
        },
        "spec": spec,
    }


def total_pods() -> int:
    return sum(g.replicas for g in GROUPS)
