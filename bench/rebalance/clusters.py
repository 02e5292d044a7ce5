"""Synthetic clusters for the rebalancer's round in process (bench.rebalance.rounds): the
Snapshot and the watcher's loads a round reads, built as the cache and the metrics client hold
them, with no API server, Redis or watcher.

A cluster of `nodes` nodes over three zones, 8 or 16 CPUs each, carries on average
`pods_per_node` pods: one DaemonSet pod per node (never a candidate) and replicas of Deployments
(ReplicaSets of 2 to 20 replicas, all ready, the Deployment's selector on them, so the profile's
default topology spreading applies as it does to a real Deployment's pods), in twelve
namespaces. A quarter of the Deployments add a zone spread of their own (maxSkew 1,
DoNotSchedule: their replicas go round the zones, so the constraint holds where they are), a
tenth a preferred anti-affinity by hostname. Requests 100 m to 2 CPUs. The watcher's CPU
window per node: `hot_share` of the nodes above the high threshold (82-99 %), `cold_share`
under the low one (10-45 %), the rest between (50-79 %), each with a standard deviation of 2 to
15 points; every figure fresh.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from scheduler.framework import MetricStats, NodeLoad, PodInfo, Snapshot
from scheduler.framework.clusterindex import NAMESPACES, REPLICA_SETS
from scheduler.framework.resources import node_info, pod_info
from scheduler.framework.snapshot import snapshot_of

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c")
NAMESPACE_COUNT = 12
HOT, COLD, NORMAL = (82.0, 99.0), (10.0, 45.0), (50.0, 79.0)
SAMPLE_AT = 100.0  # the newest sample's time; the snapshot is taken 1 s later
NOW = SAMPLE_AT + 1.0


@dataclass
class Cluster:
    snap: Snapshot
    hot: list[str]  # the nodes whose window is above high
    pods: int  # every pod placed, DaemonSet pods too


def node(name: str, zone: str, cpus: int) -> Any:
    capacity = {"cpu": str(cpus), "memory": f"{4 * cpus}Gi", "pods": "110"}
    return node_info(
        {
            "metadata": {
                "name": name,
                "labels": {HOSTNAME: name, ZONE: zone, "kubernetes.io/os": "linux"},
            },
            "spec": {},
            "status": {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def cpu_window(percent: float, std: float) -> NodeLoad:
    """A node's fresh CPU window as the metrics client holds it."""
    stats = MetricStats(percent, std, percent, "fresh", NOW - SAMPLE_AT, SAMPLE_AT, expiry=120.0)
    return NodeLoad({"cpu": stats}, "ballast")


def _pod(
    name: str,
    namespace: str,
    owner: tuple[str, str],
    labels: dict[str, str],
    cpu_m: int,
    spec: dict[str, Any] | None = None,
) -> PodInfo:
    kind, owner_name = owner
    requests = {"cpu": f"{cpu_m}m", "memory": f"{cpu_m * 2}Mi"}
    return pod_info(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "labels": labels,
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": kind, "name": owner_name, "controller": True}
                ],
            },
            "spec": {
                "schedulerName": "ballast",
                "containers": [{"name": "c", "resources": {"requests": requests}}],
                **(spec or {}),
            },
            "status": {"phase": "Running", "qosClass": "Burstable"},
        }
    )


def _replica_set(namespace: str, name: str, labels: dict[str, str], replicas: int) -> dict:
    return {
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}},
        },
        "status": {
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "observedGeneration": 1,
        },
    }


def _constraints(rng: random.Random, labels: dict[str, str]) -> dict[str, Any]:
    """A Deployment's own placement rules, if any (see the module's docstring)."""
    draw = rng.random()
    if draw < 0.25:
        spread = {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels},
        }
        return {"topologySpreadConstraints": [spread]}
    if draw < 0.35:
        term = {
            "weight": 50,
            "podAffinityTerm": {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME},
        }
        return {
            "affinity": {
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        }
    return {}


def build(
    nodes: int,
    seed: int,
    pods_per_node: float = 10.0,
    hot_share: float = 0.02,
    cold_share: float = 0.3,
) -> Cluster:
    """A cluster as described in the module's docstring; the same arguments, the same cluster.
    At least one node is hot and one cold."""
    if nodes < 2:
        raise ValueError("a cluster to rebalance needs at least two nodes")
    rng = random.Random(seed)
    names = [f"node-{i:05d}" for i in range(nodes)]
    by_zone: dict[str, list[str]] = {z: [] for z in ZONES}
    infos = []
    for i, name in enumerate(names):
        zone = ZONES[i % len(ZONES)]
        by_zone[zone].append(name)
        infos.append(node(name, zone, rng.choice((8, 16))))
    snap = snapshot_of(infos, [], {}, NOW)
    placed = 0
    for name in names:  # one DaemonSet pod per node
        pod = _pod(f"agent-{name}", "kube-system", ("DaemonSet", "agent"), {"app": "agent"}, 100)
        snap.nodes[name].add_pod(pod)
        snap.cluster.add_pod(pod, name)
        placed += 1
    namespaces = [f"team-{i:02d}" for i in range(NAMESPACE_COUNT)]
    for ns in [*namespaces, "kube-system"]:
        snap.cluster.put(NAMESPACES, ns, {"metadata": {"name": ns, "labels": {}}})
    wanted = int(nodes * max(0.0, pods_per_node - 1))
    deployment = 0
    while placed - nodes < wanted:
        ns = rng.choice(namespaces)
        app = f"app-{deployment:05d}"
        rs = f"{app}-5d8f"
        labels = {"app": app, "pod-template-hash": "5d8f"}
        replicas = max(2, min(rng.randint(2, 20), wanted - (placed - nodes)))
        spec = _constraints(rng, labels)
        cpu_m = rng.choice((100, 200, 250, 500, 500, 1000, 1500, 2000))
        snap.cluster.put(REPLICA_SETS, f"{ns}/{rs}", _replica_set(ns, rs, labels, replicas))
        zoned = "topologySpreadConstraints" in spec
        for r in range(replicas):
            where = rng.choice(by_zone[ZONES[r % len(ZONES)]] if zoned else names)
            pod = _pod(f"{rs}-{r:03d}", ns, ("ReplicaSet", rs), labels, cpu_m, spec)
            snap.nodes[where].add_pod(pod)
            snap.cluster.add_pod(pod, where)
            placed += 1
        deployment += 1
    snap.cluster.nodes_changed()
    order = names[:]
    rng.shuffle(order)
    hot_count = max(1, round(nodes * hot_share))
    cold_count = max(1, round(nodes * cold_share))
    hot = sorted(order[:hot_count])
    cold = set(order[hot_count : hot_count + cold_count])
    for name in names:
        band = HOT if name in hot else COLD if name in cold else NORMAL
        snap.loads[name] = cpu_window(rng.uniform(*band), rng.uniform(2.0, 15.0))
    return Cluster(snap, hot, placed)
