"""An independent check of one placement against everything the pod declares.

Written from the Kubernetes API reference and concept pages (assigning pods to nodes, taints and
tolerations, pod topology spread, persistent volumes), not from Ballast's plugins: it shares no
code with them, so a bug in a plugin cannot hide itself here. It works on plain JSON, and is
slow and direct on purpose.

`violations(cluster, pod, node)` lists what placing `pod` on `node` would break, given the pods
already placed in `cluster`; an empty list means the placement is valid. Each text starts with
the name of the upstream plugin that owns that rule ("NodePorts: ..."), so a mismatch points at
a plugin.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from shared.quantities import bytes_value, cpu_millis

Json = dict[str, Any]


@dataclass
class Cluster:
    nodes: dict[str, Json]  # name -> Node JSON
    namespaces: dict[str, dict[str, str]]  # name -> labels
    claims: dict[tuple[str, str], Json] = field(default_factory=dict)  # (ns, name) -> PVC
    volumes: dict[str, Json] = field(default_factory=dict)  # name -> PV
    placed: list[tuple[Json, str]] = field(default_factory=list)  # (pod, node name)

    def place(self, pod: Json, node: str) -> None:
        self.placed.append((pod, node))


def _labels(obj: Json) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _ns(pod: Json) -> str:
    return (pod.get("metadata") or {}).get("namespace") or "default"


# --- selectors --------------------------------------------------------------------------
def label_selector_matches(selector: Json | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector: null selects nothing, {} selects everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _node_requirement(expr: Json, values_of: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return key in values_of and values_of[key] in values
    if op == "NotIn":
        return key not in values_of or values_of[key] not in values
    if op == "Exists":
        return key in values_of
    if op == "DoesNotExist":
        return key not in values_of
    if op in ("Gt", "Lt"):
        try:
            have, want = int(values_of[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def node_selector_terms_match(terms: list[Json], node: Json) -> bool:
    """NodeSelectorTerms are ORed; inside a term everything is ANDed; an empty term is none."""
    labels = _labels(node)
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in terms:
        exprs, fexprs = term.get("matchExpressions") or [], term.get("matchFields") or []
        if not exprs and not fexprs:
            continue
        if all(_node_requirement(e, labels) for e in exprs) and all(
            _node_requirement(e, fields) for e in fexprs
        ):
            return True
    return False


def node_matches_pod_selection(pod: Json, node: Json) -> bool:
    """nodeSelector and required node affinity."""
    spec = pod.get("spec") or {}
    labels = _labels(node)
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is not None:
        return node_selector_terms_match(required.get("nodeSelectorTerms") or [], node)
    return True


# --- taints -----------------------------------------------------------------------------
def tolerates(toleration: Json, taint: Json) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    op = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return op == "Exists"  # an empty key with Exists tolerates everything
    if toleration["key"] != taint.get("key"):
        return False
    return op == "Exists" or (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(pod: Json, node: Json, effects=("NoSchedule", "NoExecute")) -> list[Json]:
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    return [
        t
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("effect") in effects and not any(tolerates(x, t) for x in tolerations)
    ]


# --- resources and ports ----------------------------------------------------------------
def pod_requests(pod: Json) -> dict[str, int]:
    """Effective requests: the larger of the containers' sum and any one init container."""
    spec = pod.get("spec") or {}

    def of(container: Json) -> dict[str, int]:
        req = (container.get("resources") or {}).get("requests") or {}
        return {
            "cpu": cpu_millis(req["cpu"]) if "cpu" in req else 0,
            "memory": bytes_value(req["memory"]) if "memory" in req else 0,
        }

    total = {"cpu": 0, "memory": 0}
    for c in spec.get("containers") or []:
        for k, v in of(c).items():
            total[k] += v
    for c in spec.get("initContainers") or []:
        for k, v in of(c).items():
            total[k] = max(total[k], v)
    return total


def host_ports(pod: Json) -> list[tuple[str, str, int]]:
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                out.append(
                    (p.get("protocol") or "TCP", p.get("hostIP") or "0.0.0.0", p["hostPort"])
                )
    return out


def ports_conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    if a[0] != b[0] or a[2] != b[2]:
        return False
    return a[1] == b[1] or "0.0.0.0" in (a[1], b[1])


# --- pod (anti-)affinity ----------------------------------------------------------------
def term_namespaces(term: Json, owner: Json, cluster: Cluster) -> set[str]:
    """The namespaces a PodAffinityTerm looks in: its list plus its selector's matches; the
    owner's own namespace when it names neither."""
    names = set(term.get("namespaces") or [])
    selector = term.get("namespaceSelector")
    if selector is not None:
        names |= {
            n
            for n, labels in cluster.namespaces.items()
            if label_selector_matches(selector, labels)
        }
    if not names and selector is None:
        names = {_ns(owner)}
    return names


def term_selector(term: Json, owner: Json) -> Json | None:
    """The term's labelSelector with matchLabelKeys / mismatchLabelKeys applied from the
    owner's labels (a key the owner lacks is skipped)."""
    selector = term.get("labelSelector")
    if selector is None:
        return None
    exprs = list(selector.get("matchExpressions") or [])
    labels = _labels(owner)
    for key in term.get("matchLabelKeys") or []:
        if key in labels:
            exprs.append({"key": key, "operator": "In", "values": [labels[key]]})
    for key in term.get("mismatchLabelKeys") or []:
        if key in labels:
            exprs.append({"key": key, "operator": "NotIn", "values": [labels[key]]})
    return {"matchLabels": selector.get("matchLabels") or {}, "matchExpressions": exprs}


def term_matches_pod(term: Json, owner: Json, other: Json, cluster: Cluster) -> bool:
    return _ns(other) in term_namespaces(term, owner, cluster) and label_selector_matches(
        term_selector(term, owner), _labels(other)
    )


def _required(pod: Json, kind: str) -> list[Json]:
    section = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return section.get("requiredDuringSchedulingIgnoredDuringExecution") or []


def _same_domain(cluster: Cluster, key: str, a: str, b: str) -> bool:
    la, lb = _labels(cluster.nodes[a]), _labels(cluster.nodes[b])
    return key in la and key in lb and la[key] == lb[key]


def affinity_violations(cluster: Cluster, pod: Json, node: str) -> list[str]:
    out = []
    others = [(p, n) for p, n in cluster.placed if n in cluster.nodes]
    terms = _required(pod, "podAffinity")
    # The first pod of a group: when no placed pod matches the terms anywhere and the pod
    # matches its own terms, it may go anywhere.
    anyone = any(all(term_matches_pod(t, pod, p, cluster) for t in terms) for p, _ in others)
    self_match = all(term_matches_pod(t, pod, pod, cluster) for t in terms)
    if terms and not (not anyone and self_match):
        for t in terms:
            key = t["topologyKey"]
            if not any(
                term_matches_pod(t, pod, p, cluster) and _same_domain(cluster, key, node, n)
                for p, n in others
            ):
                out.append(f"InterPodAffinity: no pod matching the affinity term on {key} here")
    for t in _required(pod, "podAntiAffinity"):
        key = t["topologyKey"]
        for p, n in others:
            if term_matches_pod(t, pod, p, cluster) and _same_domain(cluster, key, node, n):
                out.append(f"InterPodAffinity: anti-affinity on {key}: {_name(p)} on {n}")
    for p, n in others:  # symmetric: placed pods' anti-affinity against this pod
        for t in _required(p, "podAntiAffinity"):
            key = t["topologyKey"]
            if term_matches_pod(t, p, pod, cluster) and _same_domain(cluster, key, node, n):
                out.append(
                    f"InterPodAffinity: existing pod {_name(p)} on {n} has anti-affinity on {key}"
                )
    return out


def _name(pod: Json) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


# --- topology spread --------------------------------------------------------------------
def spread_violations(cluster: Cluster, pod: Json, node: str) -> list[str]:
    constraints = [
        c
        for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []
        if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
    ]
    if not constraints:
        return []
    keys = [c["topologyKey"] for c in constraints]
    out = []
    node_labels = _labels(cluster.nodes[node])
    for c in constraints:
        key = c["topologyKey"]
        if key not in node_labels:
            out.append(f"PodTopologySpread: node lacks {key}")
            continue
        eligible = [
            name
            for name, n in cluster.nodes.items()
            if all(k in _labels(n) for k in keys) and _counts_for_spread(c, pod, n)
        ]
        selector = dict(c.get("labelSelector") or {})
        labels = _labels(pod)
        exprs = list(selector.get("matchExpressions") or [])
        for k in c.get("matchLabelKeys") or []:
            if k in labels:
                exprs.append({"key": k, "operator": "In", "values": [labels[k]]})
        selector = {"matchLabels": selector.get("matchLabels") or {}, "matchExpressions": exprs}
        counts: dict[str, int] = defaultdict(int)
        for name in eligible:
            counts[_labels(cluster.nodes[name])[key]] += 0
        for p, n in cluster.placed:
            if (
                n in eligible
                and _ns(p) == _ns(pod)
                and label_selector_matches(selector, _labels(p))
            ):
                counts[_labels(cluster.nodes[n])[key]] += 1
        own = 1 if label_selector_matches(selector, labels) else 0
        here = counts.get(node_labels[key], 0) + own
        domains = len(counts)
        lowest = min(counts.values()) if counts else 0
        if domains < (c.get("minDomains") or 1):
            lowest = 0
        if here - lowest > c["maxSkew"]:
            out.append(
                f"PodTopologySpread: skew on {key} {here - lowest} > maxSkew {c['maxSkew']} "
                f"(counts {dict(sorted(counts.items()))})"
            )
    return out


def _counts_for_spread(c: Json, pod: Json, node: Json) -> bool:
    """nodeAffinityPolicy (default Honor) and nodeTaintsPolicy (default Ignore)."""
    if c.get("nodeAffinityPolicy", "Honor") == "Honor" and not node_matches_pod_selection(
        pod, node
    ):
        return False
    if c.get("nodeTaintsPolicy", "Ignore") == "Honor" and untolerated_taints(pod, node):
        return False
    return True


# --- volumes ----------------------------------------------------------------------------
def volume_violations(cluster: Cluster, pod: Json, node: str) -> list[str]:
    out = []
    node_obj = cluster.nodes[node]
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        claim_name = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim_name:
            continue
        pvc = cluster.claims.get((_ns(pod), claim_name))
        if pvc is None:
            out.append(f"VolumeBinding: claim {claim_name} does not exist")
            continue
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        pv = cluster.volumes.get(pv_name or "")
        if pv is None:
            out.append(f"VolumeBinding: claim {claim_name} is not bound")
            continue
        required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
        if required and not node_selector_terms_match(
            required.get("nodeSelectorTerms") or [], node_obj
        ):
            out.append(f"VolumeBinding: volume {pv_name} node affinity excludes the node")
        for key in ("topology.kubernetes.io/zone", "topology.kubernetes.io/region"):
            want = _labels(pv).get(key)
            if want is not None and want not in _labels(node_obj).get(key, "\0").split("__"):
                out.append(f"VolumeZone: volume {pv_name} is in {key}={want}")
        if "ReadWriteOncePod" in ((pvc.get("spec") or {}).get("accessModes") or []):
            for p, _ in cluster.placed:
                if _ns(p) == _ns(pod) and any(
                    (v.get("persistentVolumeClaim") or {}).get("claimName") == claim_name
                    for v in (p.get("spec") or {}).get("volumes") or []
                ):
                    who = _name(p)
                    out.append(f"VolumeRestrictions: ReadWriteOncePod claim {claim_name}: {who}")
    return out


# --- all of it --------------------------------------------------------------------------
def violations(cluster: Cluster, pod: Json, node: str) -> list[str]:
    node_obj = cluster.nodes[node]
    out = []
    if (node_obj.get("spec") or {}).get("unschedulable"):
        out.append("NodeUnschedulable: node is cordoned")
    if not node_matches_pod_selection(pod, node_obj):
        out.append("NodeAffinity: node selector / required node affinity")
    for t in untolerated_taints(pod, node_obj):
        out.append(f"TaintToleration: untolerated taint {t.get('key')}:{t.get('effect')}")
    here = [p for p, n in cluster.placed if n == node]
    alloc = (node_obj.get("status") or {}).get("allocatable") or {}
    want = pod_requests(pod)
    used = {"cpu": 0, "memory": 0}
    for p in here:
        for k, v in pod_requests(p).items():
            used[k] += v
    if "cpu" in alloc and used["cpu"] + want["cpu"] > cpu_millis(alloc["cpu"]):
        out.append(f"NodeResourcesFit: cpu {used['cpu']}m + {want['cpu']}m > {alloc['cpu']}")
    if "memory" in alloc and used["memory"] + want["memory"] > bytes_value(alloc["memory"]):
        out.append("NodeResourcesFit: memory over allocatable")
    if "pods" in alloc and len(here) + 1 > int(alloc["pods"]):
        out.append(f"NodeResourcesFit: more than {alloc['pods']} pods")
    mine = host_ports(pod)
    for p in here:
        for a in host_ports(p):
            if any(ports_conflict(a, b) for b in mine):
                out.append(f"NodePorts: host port {a} taken by {_name(p)}")
    out += affinity_violations(cluster, pod, node)
    out += spread_violations(cluster, pod, node)
    out += volume_violations(cluster, pod, node)
    return out
