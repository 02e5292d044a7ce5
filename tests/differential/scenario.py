"""Seeded random scenarios: nodes, namespaces, volumes and a list of small pods.

Everything is plain JSON-shaped data built from one `random.Random(seed)`, so a seed reproduces a
scenario exactly. Pods name namespaces by a logical name ("a", "b", "c"); `materialize` turns a
scenario into the objects of one run (real namespace and PersistentVolume names under a prefix),
so the same pods can be replayed in fresh namespaces on the same nodes.

The feature mix is the table FEATURES: (name, weight, builder). A pod takes one to three
features; a builder edits the pod in place and may use the scenario's vocabulary (zones, node
names, volume claims). Extend by adding a row.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox.cluster.nodes import NodeSpec

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c")
APPS = ("web", "db", "cache", "queue")
# Namespace logical name -> labels (namespaceSelector cases need labelled namespaces).
NAMESPACES = {
    "a": {"team": "blue", "env": "prod"},
    "b": {"team": "red", "env": "prod"},
    "c": {"team": "blue", "env": "dev"},
}
NAMESPACE_WEIGHTS = {"a": 6, "b": 2, "c": 2}
IMMEDIATE_CLASS = "diff-immediate"  # a StorageClass with Immediate binding and no provisioner
TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "value": "soon", "effect": "NoExecute"},
    {"key": "edge", "effect": "NoSchedule"},
)

Pod = dict[str, Any]


@dataclass(frozen=True)
class Claim:
    """A PersistentVolumeClaim of one namespace and, when bound, its PersistentVolume."""

    namespace: str  # logical
    name: str
    kind: str  # "zone", "host", "rwop" (bound) or "immediate", "no-class" (unbound)
    zone: str = ""
    host: str = ""


@dataclass
class Scenario:
    seed: int
    nodes: list[NodeSpec]
    claims: list[Claim]
    pods: list[tuple[str, Pod, list[str]]]  # (logical namespace, pod body, feature names)
    namespaces: dict[str, dict[str, str]] = field(default_factory=lambda: dict(NAMESPACES))


@dataclass
class Vocabulary:
    """What builders may refer to."""

    rng: random.Random
    nodes: list[NodeSpec]
    claims: list[Claim]
    index: int = 0
    namespace: str = "a"


# --- nodes ------------------------------------------------------------------------------
def make_nodes(rng: random.Random, prefix: str, count: int) -> list[NodeSpec]:
    nodes = []
    for i in range(count):
        labels = {"gen": str(rng.randint(1, 5))}
        # One node in a dozen has no zone: spread constraints skip it, selectors miss it.
        if i % 12 != 11:
            labels[ZONE] = ZONES[i % len(ZONES)]
        if rng.random() < 0.8:
            labels["disk"] = rng.choice(("ssd", "hdd"))
        if rng.random() < 0.25:
            labels["pool"] = "gpu"
        taints = []
        if rng.random() < 0.3:
            taints = [dict(t) for t in rng.sample(TAINTS, rng.choice((1, 1, 2)))]
        nodes.append(
            NodeSpec(
                f"{prefix}-{i:02d}",
                cpu=rng.choice(("2", "4", "4", "8")),
                memory=rng.choice(("4Gi", "8Gi", "16Gi")),
                labels=labels,
                taints=taints,
                pods=rng.choice((110,) * 7 + (4,)),
            )
        )
    return nodes


def make_claims(rng: random.Random, nodes: list[NodeSpec]) -> list[Claim]:
    claims = []
    for ns in NAMESPACES:
        for zone in ZONES:
            claims.append(Claim(ns, f"zone-{zone}", "zone", zone=zone))
        host = rng.choice(nodes).name
        claims.append(Claim(ns, "host", "host", host=host))
        claims.append(Claim(ns, "rwop", "rwop"))
        claims.append(Claim(ns, "immediate", "immediate"))
        claims.append(Claim(ns, "no-class", "no-class"))
    return claims


# --- pod builders -----------------------------------------------------------------------
def _container(pod: Pod) -> dict[str, Any]:
    return pod["spec"]["containers"][0]


def _selector(v: Vocabulary, own_app: bool) -> dict[str, Any]:
    rng = v.rng
    app = v.rng.choice(APPS)
    if rng.random() < 0.6:
        return {"matchLabels": {"app": app}}
    exprs = [{"key": "app", "operator": "In", "values": sorted({app, rng.choice(APPS)})}]
    if rng.random() < 0.3:
        exprs.append({"key": "tier", "operator": rng.choice(("Exists", "DoesNotExist"))})
    elif rng.random() < 0.3:
        exprs = [{"key": "app", "operator": "NotIn", "values": [app]}]
    return {"matchExpressions": exprs}


def _pod_term(v: Vocabulary, pod: Pod) -> dict[str, Any]:
    rng = v.rng
    own = rng.random() < 0.5
    selector = (
        {"matchLabels": {"app": pod["metadata"]["labels"]["app"]}} if own else _selector(v, own)
    )
    term: dict[str, Any] = {
        "topologyKey": rng.choice((HOSTNAME, HOSTNAME, ZONE)),
        "labelSelector": selector,
    }
    r = rng.random()
    if r < 0.15:
        term["namespaces"] = sorted(set(rng.sample(sorted(NAMESPACES), rng.randint(1, 2))))
    elif r < 0.25:
        term["namespaceSelector"] = {"matchLabels": {"team": rng.choice(("blue", "red"))}}
    elif r < 0.3:
        term["namespaceSelector"] = {}
    if rng.random() < 0.15:
        term["matchLabelKeys"] = ["ver"]
    return term


def f_resources(v: Vocabulary, pod: Pod) -> None:
    rng = v.rng
    requests = {}
    if rng.random() < 0.9:
        requests["cpu"] = rng.choice(("100m", "250m", "500m", "1", "1500m", "2"))
    if rng.random() < 0.7:
        requests["memory"] = rng.choice(("64Mi", "256Mi", "1Gi", "2Gi", "6Gi"))
    if requests:
        _container(pod)["resources"] = {"requests": requests}


def f_fits_nowhere(v: Vocabulary, pod: Pod) -> None:
    if v.rng.random() < 0.5:
        _container(pod)["resources"] = {"requests": {"cpu": "64"}}
    else:
        pod["spec"]["nodeSelector"] = {"disk": "tape"}


def f_node_selector(v: Vocabulary, pod: Pod) -> None:
    rng = v.rng
    choice = rng.choice(
        ({"disk": "ssd"}, {ZONE: rng.choice(ZONES)}, {"pool": "gpu"}, {"disk": "hdd"})
    )
    pod["spec"]["nodeSelector"] = choice


def _node_expression(rng: random.Random) -> dict[str, Any]:
    return rng.choice(
        (
            {"key": ZONE, "operator": "In", "values": sorted(set(rng.sample(ZONES, 2)))},
            {"key": "disk", "operator": "NotIn", "values": ["hdd"]},
            {"key": "gen", "operator": "Gt", "values": [str(rng.randint(1, 4))]},
            {"key": "gen", "operator": "Lt", "values": [str(rng.randint(2, 5))]},
            {"key": "pool", "operator": "Exists"},
            {"key": "disk", "operator": "DoesNotExist"},
        )
    )


def f_node_affinity(v: Vocabulary, pod: Pod) -> None:
    rng = v.rng
    affinity = pod["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
    if rng.random() < 0.75:
        terms = [
            {"matchExpressions": [_node_expression(rng) for _ in range(rng.randint(1, 2))]}
            for _ in range(rng.choice((1, 1, 2)))
        ]
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    else:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": rng.randint(1, 100),
                "preference": {"matchExpressions": [_node_expression(rng)]},
            }
        ]


def f_tolerations(v: Vocabulary, pod: Pod) -> None:
    rng = v.rng
    options = (
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists"},
        {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"},
        {"key": "edge", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "spot", "operator": "Equal", "value": "true"},
        {"operator": "Exists"},
    )
    pod["spec"]["tolerations"] = rng.sample(options, rng.randint(1, 2))


def f_host_ports(v: Vocabulary, pod: Pod) -> None:
    rng = v.rng
    ports = []
    for number in sorted(rng.sample((8080, 8081, 9000), rng.choice((1, 1, 2)))):
        port: dict[str, Any] = {"containerPort": number, "hostPort": number}
        port["protocol"] = rng.choice(("TCP",) * 6 + ("UDP",) * 3 + ("SCTP",))
        ip = rng.choice(("",) * 6 + ("127.0.0.1",) * 2 + ("10.1.1.1",) * 2)
        if ip:
            port["hostIP"] = ip
        ports.append(port)
    _container(pod)["ports"] = ports


def _affinity(v: Vocabulary, pod: Pod, kind: str) -> None:
    rng = v.rng
    section = pod["spec"].setdefault("affinity", {}).setdefault(kind, {})
    if rng.random() < 0.7:
        key = "requiredDuringSchedulingIgnoredDuringExecution"
        section.setdefault(key, []).append(_pod_term(v, pod))
    else:
        key = "preferredDuringSchedulingIgnoredDuringExecution"
        section.setdefault(key, []).append(
            {"weight": rng.randint(1, 100), "podAffinityTerm": _pod_term(v, pod)}
        )


def f_pod_affinity(v: Vocabulary, pod: Pod) -> None:
    _affinity(v, pod, "podAffinity")


def f_pod_anti_affinity(v: Vocabulary, pod: Pod) -> None:
    _affinity(v, pod, "podAntiAffinity")


def f_spread(v: Vocabulary, pod: Pod) -> None:
    rng = v.rng
    constraints = []
    for key in rng.sample((ZONE, HOSTNAME), rng.choice((1, 1, 2))):
        hard = rng.random() < 0.7
        c: dict[str, Any] = {
            "maxSkew": rng.choice((1, 1, 2, 3)),
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": pod["metadata"]["labels"]["app"]}}
            if rng.random() < 0.8
            else _selector(v, False),
        }
        if hard and rng.random() < 0.25:
            c["minDomains"] = rng.randint(2, 5)
        if rng.random() < 0.25:
            c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.25:
            c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.2:
            c["matchLabelKeys"] = ["ver"]
        constraints.append(c)
    pod["spec"]["topologySpreadConstraints"] = constraints


def _volume(pod: Pod, claim_name: str) -> None:
    volumes = pod["spec"].setdefault("volumes", [])
    volumes.append({"name": f"v{len(volumes)}", "persistentVolumeClaim": {"claimName": claim_name}})


def f_pvc_bound(v: Vocabulary, pod: Pod) -> None:
    mine = [c for c in v.claims if c.namespace == v.namespace and c.kind in ("zone", "host")]
    _volume(pod, v.rng.choice(mine).name)


def f_pvc_missing(v: Vocabulary, pod: Pod) -> None:
    _volume(pod, f"missing-{v.index}")


def f_pvc_unbound(v: Vocabulary, pod: Pod) -> None:
    _volume(pod, v.rng.choice(("immediate", "no-class")))


def f_pvc_rwop(v: Vocabulary, pod: Pod) -> None:
    _volume(pod, "rwop")


Builder = Callable[[Vocabulary, Pod], None]
# (feature, weight, builder); "plain" has no builder: a pod with no feature at all.
FEATURES: tuple[tuple[str, int, Builder | None], ...] = (
    ("plain", 4, None),
    ("resources", 14, f_resources),
    ("fits-nowhere", 2, f_fits_nowhere),
    ("node-selector", 5, f_node_selector),
    ("node-affinity", 6, f_node_affinity),
    ("tolerations", 6, f_tolerations),
    ("host-ports", 8, f_host_ports),
    ("pod-affinity", 9, f_pod_affinity),
    ("pod-anti-affinity", 10, f_pod_anti_affinity),
    ("spread", 12, f_spread),
    ("pvc-bound", 4, f_pvc_bound),
    ("pvc-missing", 1, f_pvc_missing),
    ("pvc-unbound", 1, f_pvc_unbound),
    ("pvc-rwop", 2, f_pvc_rwop),
)


def make_pod(v: Vocabulary) -> tuple[Pod, list[str]]:
    rng = v.rng
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.4:
        labels["tier"] = rng.choice(("front", "back"))
    if rng.random() < 0.5:
        labels["ver"] = rng.choice(("v1", "v2"))
    pod: Pod = {
        "metadata": {"name": f"p{v.index:03d}", "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "example.invalid/app:1"}]},
    }
    names = [n for n, _, _ in FEATURES]
    weights = [w for _, w, _ in FEATURES]
    count = 1 + (rng.random() < 0.5) + (rng.random() < 0.2)
    chosen: list[str] = []
    for name in rng.choices(names, weights, k=count):
        if name not in chosen:
            chosen.append(name)
    if len(chosen) > 1 and "plain" in chosen:
        chosen.remove("plain")
    builders = dict((n, b) for n, _, b in FEATURES)
    for name in chosen:
        builder = builders[name]
        if builder is not None:
            builder(v, pod)
    return pod, chosen


def generate(seed: int, pods: int = 200, nodes: int = 24) -> Scenario:
    rng = random.Random(seed)
    node_specs = make_nodes(rng, f"diff{seed}", nodes)
    claims = make_claims(rng, node_specs)
    v = Vocabulary(rng, node_specs, claims)
    out = []
    ns_names = list(NAMESPACE_WEIGHTS)
    ns_weights = [NAMESPACE_WEIGHTS[n] for n in ns_names]
    for i in range(pods):
        v.index = i
        v.namespace = rng.choices(ns_names, ns_weights)[0]
        pod, features = make_pod(v)
        out.append((v.namespace, pod, features))
    return Scenario(seed, node_specs, claims, out)


# --- one run's objects --------------------------------------------------------------------
def namespace_name(prefix: str, logical: str) -> str:
    return f"{prefix}-{logical}"


def pod_for_run(pod: Pod, prefix: str, scheduler: str, gated: bool) -> Pod:
    """The pod body of one run: real namespace names in its terms, the scheduler, a gate."""
    body = copy.deepcopy(pod)
    body["apiVersion"], body["kind"] = "v1", "Pod"
    body["spec"]["schedulerName"] = scheduler
    body["spec"]["terminationGracePeriodSeconds"] = 0
    if gated:
        body["spec"]["schedulingGates"] = [{"name": "ballast.test/differential"}]
    affinity = body["spec"].get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind) or {}
        for term in section.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            _rename(term, prefix)
        for weighted in section.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            _rename(weighted["podAffinityTerm"], prefix)
    return body


def _rename(term: dict[str, Any], prefix: str) -> None:
    if "namespaces" in term:
        term["namespaces"] = [namespace_name(prefix, n) for n in term["namespaces"]]


def volume_objects(
    claims: list[Claim], prefix: str
) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """(PersistentVolumes, [(namespace, PersistentVolumeClaim)]) of one run. A bound claim is
    "fully bound" as the PV controller leaves it: volumeName plus the bind-completed annotation,
    and its PV's claimRef pointing back."""
    pvs: list[dict[str, Any]] = []
    pvcs: list[tuple[str, dict[str, Any]]] = []
    for c in claims:
        ns = namespace_name(prefix, c.namespace)
        modes = ["ReadWriteOncePod"] if c.kind == "rwop" else ["ReadWriteOnce"]
        pvc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": c.name},
            "spec": {"accessModes": modes, "resources": {"requests": {"storage": "1Gi"}}},
        }
        if c.kind == "immediate":
            pvc["spec"]["storageClassName"] = IMMEDIATE_CLASS
        elif c.kind == "no-class":
            pvc["spec"]["storageClassName"] = ""
        else:
            pv_name = f"{ns}-{c.name}"
            pvc["spec"]["storageClassName"] = ""
            pvc["spec"]["volumeName"] = pv_name
            pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
            pv: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv_name},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": modes,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "hostPath": {"path": f"/data/{pv_name}"},
                    "claimRef": {"namespace": ns, "name": c.name},
                },
            }
            if c.kind == "zone":
                pv["metadata"]["labels"] = {ZONE: c.zone}
                pv["spec"]["nodeAffinity"] = _pv_affinity(ZONE, c.zone)
            elif c.kind == "host":
                pv["spec"]["nodeAffinity"] = _pv_affinity(HOSTNAME, c.host)
            pvs.append(pv)
        pvcs.append((ns, pvc))
    return pvs, pvcs


def _pv_affinity(key: str, value: str) -> dict[str, Any]:
    expr = {"key": key, "operator": "In", "values": [value]}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


def storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": IMMEDIATE_CLASS},
        "provisioner": "example.invalid/none",
        "volumeBindingMode": "Immediate",
    }
