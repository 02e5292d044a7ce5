"""A node's load as the load-aware plugins see it, with the metrics fallback in one place.

- fresh data: the watcher's numbers as they are.
- no data, or expired data: an allocation-based prediction, usage = requested / allocatable
  (std 0), so a node without metrics is judged by what is placed on it, never scored as idle
  or as full.
- stale data (older than its freshness horizon, not yet expired): blended toward that
  prediction by age, w = clamp((expiry - age) / (expiry - horizon), 0, 1),
  usage = w * measured + (1 - w) * predicted, std = w * std. w falls linearly from 1 at the
  horizon to 0 at expiry, so a scheduling decision never jumps when a sample crosses a state.
Every node that needed a fallback is counted once per cycle in CycleState.fallbacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.framework import CPU, MEMORY, CycleState, MetricStats, NodeInfo, Snapshot

if TYPE_CHECKING:
    from scheduler.framework.fields import Fields

FRESH = "fresh"
STALE = "stale"
EXPIRED = "expired"
MISSING = "missing"
UNSERVED = "unserved"  # the node has load data, only not for this metric
# The watcher's window: samples older than this are no data when the source gives no expiry.
DEFAULT_EXPIRY_S = 300.0

_CACHE = "loadview"
_COUNTED = "loadview.counted"


@dataclass(frozen=True)
class Usage:
    avg: float  # percent of the node
    std: float  # percent of the node
    weight: float  # share of measured data: 1 fresh, 0 allocation only
    reason: str  # FRESH, STALE, EXPIRED, MISSING or UNSERVED


def allocation_percent(node: NodeInfo, resource: str, less_requested: int = 0) -> float:
    """Requested / allocatable in percent (less `less_requested` of the requests); 0 for a
    node that offers none of the resource."""
    allocatable = node.allocatable.get(resource, 0)
    if allocatable <= 0:
        return 0.0
    return 100.0 * (node.requested.get(resource, 0) - less_requested) / allocatable


def blend_weight(stats: MetricStats) -> float:
    """How much a stale sample still counts (1 at its horizon, 0 at expiry)."""
    horizon = stats.horizon or 0.0
    expiry = stats.expiry if stats.expiry is not None else DEFAULT_EXPIRY_S
    if expiry <= horizon:
        return 1.0 if stats.age <= horizon else 0.0
    return min(max((expiry - stats.age) / (expiry - horizon), 0.0), 1.0)


def note_fallback(state: CycleState, node: str, reason: str) -> None:
    """Count a node's fallback once per cycle however many plugins or resources hit it."""
    counted = state.setdefault(_COUNTED, {}).setdefault(reason, set())  # reason -> nodes
    if node not in counted:
        counted.add(node)
        state.count_fallback(reason)


def metric_stats(snap: Snapshot, node: str, key: str) -> MetricStats | None:
    load = snap.loads.get(node)
    return load.metrics.get(key) if load is not None else None


def usage(
    state: CycleState, node: NodeInfo, snap: Snapshot, resource: str, less_requested: int = 0
) -> Usage:
    """The node's `resource` ("cpu" or "memory") usage after the fallback rule; memoised.
    With `less_requested`, as if pods requesting that much of it were off the node (what a
    preemption weighs; not memoised)."""
    cache = state.setdefault(_CACHE, {})
    hit = None if less_requested else cache.get((node.name, resource))
    if hit is not None:
        return hit
    stats = metric_stats(snap, node.name, resource)
    measured = None
    if stats is not None:
        measured = stats.avg if stats.avg is not None else stats.latest
    if measured is None or stats is None or stats.state == EXPIRED:
        reason = MISSING if measured is None else EXPIRED
        load = snap.loads.get(node.name)
        if reason == MISSING and load is not None and load.metrics:
            reason = UNSERVED  # a watcher without this metric is no failure worth counting
        else:
            note_fallback(state, node.name, reason)
        result = Usage(allocation_percent(node, resource, less_requested), 0.0, 0.0, reason)
    elif stats.state == STALE:
        note_fallback(state, node.name, STALE)
        w = blend_weight(stats)
        predicted = allocation_percent(node, resource, less_requested)
        result = Usage(w * measured + (1 - w) * predicted, w * (stats.std or 0.0), w, STALE)
    else:
        result = Usage(measured, stats.std or 0.0, 1.0, FRESH)
    if not less_requested:
        cache[(node.name, resource)] = result
    return result


def recent_cpu_m(snap: Snapshot, node: NodeInfo, u: Usage) -> float:
    """Millicores of pods bound to the node recently, counted as far as `u` is measured: the
    allocation fallback already holds them."""
    return snap.recent_cpu_m.get(node.name, 0) * u.weight


def usage_arrays(
    state: CycleState, nodes: list[NodeInfo], snap: Snapshot, resource: str
) -> tuple[list[float], list[float], list[float]]:
    """(avg, std, weight) of `usage` for many nodes, node order kept; the same numbers and the
    same fallback counts as calling `usage` on each. Nodes with fresh data (the usual case) or
    without any (the whole cluster when no watcher answers) skip the per-node objects: the cost
    that matters when a cycle scores hundreds of nodes."""
    loads = snap.loads
    if not loads:
        # No watcher data at all: every node on the allocation fallback, in one comprehension
        # (the same expression as below, so the same floats) instead of a loop of appends;
        # for cpu and memory from the node's attributes (requested = allocatable - room).
        if resource == CPU:
            avg = [
                100.0 * (a - node.room_cpu) / a if (a := node.allocatable_cpu) > 0 else 0.0
                for node in nodes
            ]
        elif resource == MEMORY:
            avg = [
                100.0 * (a - node.room_memory) / a if (a := node.allocatable_memory) > 0 else 0.0
                for node in nodes
            ]
        else:
            avg = [
                100.0 * node.requested.get(resource, 0) / allocatable if allocatable > 0 else 0.0
                for node in nodes
                for allocatable in (node.allocatable.get(resource, 0),)
            ]
        _count_missing(state, [node.name for node in nodes])
        return avg, [0.0] * len(nodes), [0.0] * len(nodes)
    avg: list[float] = []
    std: list[float] = []
    weight: list[float] = []
    missing: list[str] = []
    for node in nodes:
        load = loads.get(node.name)
        if load is not None:
            # Fresh data, the common case with a watcher, as `usage` gives it, minus the object.
            stats = load.metrics.get(resource)
            if stats is not None and stats.state == FRESH:
                measured = stats.avg if stats.avg is not None else stats.latest
                if measured is not None:
                    avg.append(measured)
                    std.append(stats.std or 0.0)
                    weight.append(1.0)
                    continue
            u = usage(state, node, snap, resource)
            avg.append(u.avg)
            std.append(u.std)
            weight.append(u.weight)
            continue
        allocatable = node.allocatable.get(resource, 0)
        avg.append(
            100.0 * node.requested.get(resource, 0) / allocatable if allocatable > 0 else 0.0
        )
        std.append(0.0)
        weight.append(0.0)
        missing.append(node.name)
    _count_missing(state, missing)
    return avg, std, weight


def _count_missing(state: CycleState, names: list[str]) -> None:
    """note_fallback(MISSING) for many nodes at once."""
    if not names:
        return
    counted = state.setdefault(_COUNTED, {}).setdefault(MISSING, set())
    before = len(counted)
    counted.update(names)
    if len(counted) > before:
        fallbacks = state.fallbacks
        fallbacks[MISSING] = fallbacks.get(MISSING, 0) + len(counted) - before


def trimaran_spec(f: Fields) -> str:
    """The args every Trimaran plugin shares (TrimaranSpec): returns its watcherAddress.

    Ballast reads load only from a watcher, so a metricProvider (Trimaran's library mode) is
    refused instead of being silently ignored.
    """
    if f.has("metricProvider"):
        raise f.error("metricProvider", "not supported: point watcherAddress at a watcher")
    address = f.string("watcherAddress", "").strip().rstrip("/")
    if address and not address.startswith(("http://", "https://")):
        raise f.error("watcherAddress", f"expected an http(s) URL, got {address!r}")
    return address


def parse_prediction(f: Fields, default_cpu_m: int, default_multiplier: float) -> tuple[int, float]:
    """TargetLoadPacking's prediction args: defaultRequests.cpu (millicores) and
    defaultRequestsMultiplier (upstream writes it as a string, "1.5")."""
    requests = f.section("defaultRequests")
    cpu_m = requests.cpu("cpu", default_cpu_m)
    requests.raw("memory")  # part of upstream's ResourceList; the prediction reads cpu only
    requests.finish()
    multiplier = f.number("defaultRequestsMultiplier", default_multiplier, 0, 1000)
    return cpu_m, multiplier
