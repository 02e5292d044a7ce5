"""The chaos suite's invariant checker and figures: what the apiserver holds at the end, and
what the monitor's samples say per episode. Nothing here reads a process's log.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from kubernetes import client
from kubernetes.utils.quantity import parse_quantity

from shared.quantities import cpu_millis

NAMESPACE = "chaos"
SAMPLE_INTERVAL = 0.5  # seconds between the monitor's samples


# -- the invariant checker: reads the apiserver only -----------------------------------------
def _paged(list_fn: Any, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token = None
    while True:
        extra = {"_continue": token} if token else {}
        resp = list_fn(limit=500, _preload_content=False, _request_timeout=60, **kwargs, **extra)
        doc = json.loads(resp.data)
        items.extend(doc.get("items") or [])
        token = (doc.get("metadata") or {}).get("continue")
        if not token:
            return items


def list_all_pods(api: client.ApiClient) -> list[dict[str, Any]]:
    return _paged(client.CoreV1Api(api).list_namespaced_pod, namespace=NAMESPACE)


def check(api: client.ApiClient, created: dict[str, float]) -> dict[str, Any]:
    """Per pod: its node, how many Scheduled events name it, on which nodes; per node: load."""
    pods = {p["metadata"]["name"]: p for p in list_all_pods(api)}
    events = _paged(client.EventsV1Api(api).list_namespaced_event, namespace=NAMESPACE)
    scheduled: dict[str, list[str]] = defaultdict(list)
    for ev in events:
        if ev.get("reason") != "Scheduled":
            continue
        pod = (ev.get("regarding") or {}).get("name", "")
        # A recorder folds repeats of one event into a series: each repeat is one more bind.
        repeats = max(1, (ev.get("series") or {}).get("count") or 0, ev.get("deprecatedCount") or 0)
        scheduled[pod].extend([ev.get("note") or ""] * repeats)
    nodes = {n["metadata"]["name"]: n for n in _paged(client.CoreV1Api(api).list_node)}
    used_cpu: Counter[str] = Counter()
    used_pods: Counter[str] = Counter()
    for p in pods.values():
        node = p["spec"].get("nodeName")
        if node:
            used_pods[node] += 1
            for c in p["spec"]["containers"]:
                used_cpu[node] += cpu_millis(
                    (c.get("resources") or {}).get("requests", {}).get("cpu", "0")
                )
    over = [
        n
        for n, node in nodes.items()
        if used_cpu[n] > cpu_millis(node["status"]["allocatable"]["cpu"])
        or used_pods[n] > parse_quantity(node["status"]["allocatable"]["pods"])
    ]
    per_pod = {}
    for name in created:
        p = pods.get(name)
        node = (p or {}).get("spec", {}).get("nodeName") or ""
        notes = scheduled.get(name, [])
        wrong = [n for n in notes if node and node not in n]
        per_pod[name] = {
            "node": node,
            "missing": p is None,
            "scheduled_events": len(notes),
            "event_on_other_node": len(wrong),
        }
    return {
        "pods": per_pod,
        "overcommitted_nodes": over,
        "unknown_pods": len(set(pods) - set(created)),
    }


# -- figures ------------------------------------------------------------------------------------
def seconds_without(samples: list[dict[str, Any]], key: str, start: float, end: float) -> float:
    """Seconds (at the monitor's resolution) in [start, end) when nobody led."""
    inside = [s for s in samples if start <= s["t"] < end]
    return round(sum(SAMPLE_INTERVAL for s in inside if not s[key]), 1)


def seconds_without_writes(samples: list[dict[str, Any]], start: float, end: float) -> float:
    """The longest stretch in [start, end) over which the snapshot version in the store did
    not change, at the monitor's resolution: one poll interval while all is well."""
    inside = [s for s in samples if start <= s["t"] < end]
    if not inside:
        return 0.0
    longest, since, last = 0.0, start, inside[0].get("store_version")
    for s in inside[1:]:
        version = s.get("store_version")
        if version is not None and version != last:
            longest = max(longest, s["t"] - since)
            since, last = s["t"], version
    return round(max(longest, inside[-1]["t"] - since), 1)


def scores_resumed(samples: list[dict[str, Any]], start: float, end: float) -> float | None:
    """Seconds from the fault until the leader last scored a node from allocation instead of
    load data (0: it never had to; None: still falling back when the episode ended)."""
    steps = leader_steps(samples, start, end)
    last = max((b["t"] for a, b in steps if b["fallbacks"] > a["fallbacks"]), default=None)
    if last is None:
        return 0.0
    if last >= steps[-1][1]["t"] - 2 * SAMPLE_INTERVAL:
        return None
    return round(last - start, 1)


def leader_steps(samples: list[dict], start: float, end: float) -> list[tuple[dict, dict]]:
    """Consecutive samples in [start, end) read from the same leader (counters are its own)."""
    inside = [s for s in samples if start <= s["t"] < end and "bound" in s]
    pairs = zip(inside, inside[1:], strict=False)
    return [(a, b) for a, b in pairs if a["leaders"][:1] == b["leaders"][:1]]


def fallback_scores(samples: list[dict[str, Any]], start: float, end: float) -> int:
    """Node scores the leader took from allocation instead of load data in [start, end)."""
    return int(sum(b["fallbacks"] - a["fallbacks"] for a, b in leader_steps(samples, start, end)))


def bound_twice(pod: dict[str, Any]) -> bool:
    return pod["scheduled_events"] > 1 or pod["event_on_other_node"] > 0


def render(result: dict[str, Any]) -> str:
    head = (
        f"{'fault':<19}{'n':>3}{'created':>9}{'bound':>7}{'twice':>6}{'lost':>5}"
        f"{'no leader':>10}{'no poller':>10}{'no write':>9}{'scores':>8}{'restarts':>9}"
    )
    lines = [head]
    for fault, a in result["per_fault"].items():
        scores = a["max_seconds_until_load_scores"]
        lines.append(
            f"{fault:<19}{a['episodes']:>3}{a['pods_created']:>9}{a['bound']:>7}"
            f"{a['bound_twice']:>6}{a['lost']:>5}{a['max_seconds_without_leader']:>9.1f}s"
            f"{a['max_seconds_without_poller']:>9.1f}s"
            f"{a.get('max_seconds_without_writes', 0.0):>8.1f}s"
            f"{'never' if scores is None else f'{scores:.1f}s':>8}{a['unexpected_restarts']:>9}"
        )
    t = result["totals"]
    lines.append(
        f"total: {t['pods_created']} pods ({t['pods_per_second']}/s over {t['stream_seconds']} s), "
        f"{t['bound']} bound, {t['bound_twice']} twice, {t['lost']} lost, "
        f"{len(t['unexpected_restarts'])} unexpected restarts, {t['watcher_5xx']} watcher 5xx, "
        f"overcommitted nodes {t['overcommitted_nodes'] or 0}: {'PASS' if t['pass'] else 'FAIL'}"
    )
    return "\n".join(lines)
