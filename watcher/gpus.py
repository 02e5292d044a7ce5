"""GPU use from NVIDIA's dcgm-exporter, through the Prometheus provider: a window per GPU.

dcgm-exporter publishes one series per GPU and metric, labelled `gpu` (the index on its node),
`UUID`, `device`, `modelName` and `Hostname` (the node, when the exporter runs with NODE_NAME
set, as its DaemonSet does); framebuffer figures are in MiB. With its pod mapping on, a GPU
used by pods carries `namespace`/`pod`/`container` too, repeated per pod on a shared GPU: the
default queries take `max by` node and GPU, so a GPU is one series whatever shares it.

Per poll: the utilisation query first; when it answers with no series (a cluster without
GPUs, or without dcgm-exporter) the two memory queries are not asked. Nodes without GPUs
cost nothing: they have no entry. Samples are validated as node samples are (NaN, Inf,
negative, utilisation over 100 %, a GPU named twice, an unknown node: rejected and counted).

The window, its statistics and the adaptive staleness are the node window's (watcher/window.py,
stats.py, staleness.py), one column per GPU (`node/index`); a GPU's horizon is the shorter of
its utilisation's and its memory use's (in percent of its framebuffer). The poller holding the
lock polls GPUs after pods, and stores one JSON document the API serves (/api/v1/gpus). A
poller taking over starts an empty GPU window: it fills within a few polls.

A distributed store missing a part answers partially (the node path's rule, watcher/lacking.py):
the store's note goes in `lastPoll.partial` per query and `counters.partialAnswers`, and a GPU
such an answer leaves out keeps its last window with the shortest horizon, so it turns stale
(GpuLoad then never refuses on it) instead of vanishing or reading as idle.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from watcher.errors import ProviderError
from watcher.gpupods import GpuProfiles, parse_pods, pod_shares
from watcher.lacking import Lacking
from watcher.nodenames import NodeNamer
from watcher.staleness import horizon, state, worst
from watcher.stats import summarize
from watcher.validate import check_value, gpu_index, node_of
from watcher.window import Frame, Window

log = logging.getLogger(__name__)

UTIL, FB_USED, FB_FREE, MEMORY, PODS = "util", "fbUsed", "fbFree", "memory", "pods"
QUERIES = (UTIL, FB_USED, FB_FREE)  # what is asked of Prometheus, in this order
GpuKey = tuple[str, str]  # (Kubernetes node name, GPU index)


def column(key: GpuKey) -> str:
    """A GPU's column in the window: node names never contain "/"."""
    return f"{key[0]}/{key[1]}"


@dataclass
class GpuFetch:
    time: float
    values: dict[str, dict[GpuKey, float]] = field(default_factory=dict)  # metric -> GPU -> v
    # (UUID, modelName, GPU_I_PROFILE): the profile "" for a whole GPU
    info: dict[GpuKey, tuple[str, ...]] = field(default_factory=dict)
    pods: dict[GpuKey, set[tuple[str, str]]] = field(default_factory=dict)  # (namespace, pod)
    mapped: bool = False  # the pod mapping was asked and answered
    partial: dict[str, str] = field(default_factory=dict)  # query key -> the store's note
    rejected: Counter[str] = field(default_factory=Counter)
    error: ProviderError | None = None


def parse(
    items: list[Any], label: str, namer: NodeNamer, percent: bool
) -> tuple[dict[GpuKey, float], dict[GpuKey, tuple[str, ...]], Counter[str]]:
    """Prometheus vector items -> value per GPU (a MIG instance is one: validate.gpu_index),
    each GPU's (UUID, model, MIG profile), and the rejected samples by reason. Two series for
    one GPU make both untrustworthy: neither is kept."""
    accepted: dict[GpuKey, float] = {}
    info: dict[GpuKey, tuple[str, ...]] = {}
    duplicates: Counter[GpuKey] = Counter()
    rejected: Counter[str] = Counter()
    for item in items:
        try:
            labels, raw = item["metric"], item["value"][1]
            raw_node, index = labels.get(label), gpu_index(labels)
        except (KeyError, IndexError, TypeError, AttributeError):
            rejected["malformed"] += 1
            continue
        if not isinstance(index, str) or not index:
            rejected["no_gpu_label"] += 1
            continue
        node, reason = node_of(raw_node, namer)
        if node is None:
            rejected[reason or "unknown_node"] += 1
            continue
        value, reason = check_value(raw, percent)
        if reason is not None:
            rejected[reason] += 1
            continue
        key = (node, index)
        if key in accepted or key in duplicates:
            duplicates[key] += 1
            continue
        accepted[key] = value
        info[key] = tuple(str(labels.get(k) or "") for k in ("UUID", "modelName", "GPU_I_PROFILE"))
    for key, repeats in duplicates.items():
        accepted.pop(key, None)
        info.pop(key, None)
        rejected["duplicate"] += repeats + 1
    return accepted, info, rejected


class PrometheusGpus:
    """dcgm-exporter's series from Prometheus; `provider` is the watcher's PrometheusProvider
    (its session, auth, TLS and error mapping)."""

    def __init__(self, provider: Any, queries: dict[str, str], label: str, namer: NodeNamer):
        self.provider = provider
        self.queries = queries
        self.label = label
        self.namer = namer

    def fetch(self) -> GpuFetch:
        result = GpuFetch(time=time.time())
        try:
            for key in QUERIES:
                items = self._answer(result, key, f"gpu {key}")
                if key == UTIL and not items:
                    return result  # no GPU anywhere: the memory queries would say the same
                values, info, rejected = parse(items, self.label, self.namer, key == UTIL)
                result.values[key] = values
                result.info.update(info)
                result.rejected.update(rejected)
            if self.queries.get(PODS):  # the pod mapping: which pods use which GPU
                items = self._answer(result, PODS, "gpu pods")
                result.pods, rejected = parse_pods(items, self.label, self.namer)
                result.rejected.update(rejected)
                result.mapped = True
        except ProviderError as exc:
            result.error = exc
        return result

    def _answer(self, result: GpuFetch, key: str, what: str) -> list[Any]:
        items, partial = self.provider.answer(self.queries[key], result.time, what)
        if partial:
            result.partial[key] = partial
        return items


def frame_of(fetch: GpuFetch) -> Frame | None:
    """One poll's GPUs as a window frame: utilisation, framebuffer used and free (MiB), and
    memory use in percent of the framebuffer where both figures are there."""
    util = fetch.values.get(UTIL) or {}
    used = fetch.values.get(FB_USED) or {}
    free = fetch.values.get(FB_FREE) or {}
    memory = {
        column(k): 100.0 * used[k] / (used[k] + free[k])
        for k in used.keys() & free.keys()
        if used[k] + free[k] > 0
    }
    by_metric = {
        UTIL: {column(k): v for k, v in util.items()},
        FB_USED: {column(k): v for k, v in used.items()},
        FB_FREE: {column(k): v for k, v in free.items()},
        MEMORY: memory,
    }
    if not any(by_metric.values()):
        return None
    return Frame.build(fetch.time, by_metric)


STATS = ("avg", "std", "min", "max", "p95", "latest")


def gpu_stats(
    window: Window,
    info: dict[str, tuple[str, ...]],
    tolerance: float,
    bounds: tuple[float, float],
    lacking: set[str] | frozenset[str] = frozenset(),
) -> dict[str, dict[str, dict[str, Any]]]:
    """{node: {GPU index: {uuid, model, util, memory, fbUsed, fbFree: {stat: value},
    fbTotal, count, last, horizon, and for a MIG instance mig: {gpu, instance, profile}}}} for
    every GPU with a sample in the window; a GPU in `lacking` (columns a partial answer left
    out) gets the shortest horizon."""
    columns = window.nodes()
    if not columns:
        return {}
    per_metric = {}
    for key in (UTIL, MEMORY, FB_USED, FB_FREE):
        times, values = window.matrix(key, columns)
        per_metric[key] = summarize(times, values)
    horizons = {
        key: horizon(per_metric[key]["volatility"], tolerance, *bounds) for key in (UTIL, MEMORY)
    }
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for i, name in enumerate(columns):
        counts = [int(per_metric[k]["count"][i]) for k in per_metric]
        if not any(counts):
            continue
        node, _, index = name.rpartition("/")
        uuid, model, *more = info.get(name, ("", ""))
        gpu: dict[str, Any] = {"uuid": uuid, "model": model}
        parent, _, instance = index.partition("-mig")
        if instance:
            gpu["mig"] = {"gpu": parent, "instance": instance, "profile": more[0] if more else ""}
        for key, s in per_metric.items():
            if s["count"][i]:
                gpu[key] = {f: round(float(s[f][i]), 3) for f in STATS}
        if FB_USED in gpu and FB_FREE in gpu:
            gpu["fbTotal"] = round(gpu[FB_USED]["latest"] + gpu[FB_FREE]["latest"], 3)
        gpu["count"] = max(counts)
        gpu["last"] = max(float(s["last"][i]) for s in per_metric.values() if s["count"][i])
        gpu["horizon"] = round(
            min(float(h[i]) for k, h in horizons.items() if per_metric[k]["count"][i])
            if any(per_metric[k]["count"][i] for k in horizons) and name not in lacking
            else bounds[0],
            3,
        )
        out.setdefault(node, {})[index] = gpu
    return out


def with_state(doc: dict[str, Any], now: float, node: str | None = None) -> dict[str, Any]:
    """The stored document (or one node's part) with each GPU's and node's staleness state
    and age as of `now`, as /api/v1/nodes gives them."""
    expiry = float(doc.get("expiry") or 0)
    nodes = doc.get("nodes") or {}
    picked = nodes if node is None else {node: nodes[node]} if node in nodes else {}
    out_nodes = {}
    for name, gpus in picked.items():
        states, ages, out_gpus = [], [], {}
        for index, gpu in gpus.items():
            age = max(0.0, now - gpu["last"])
            st = state(age, gpu["horizon"], expiry)
            states.append(st)
            ages.append(age)
            out_gpus[index] = {**gpu, "state": st, "age": round(age, 3), "expiry": expiry}
        out_nodes[name] = {"state": worst(states), "age": round(max(ages), 3), "gpus": out_gpus}
    head = {k: v for k, v in doc.items() if k != "nodes"}
    return {**head, "timestamp": round(now, 3), "nodes": out_nodes}


class GpuPoller:
    """Polled in the node poller's tick, on the replica holding the lock, after the node frame
    and the pods: node data never waits on GPUs."""

    def __init__(
        self,
        source: Any,
        store: Any,
        window: float,
        expiry: float,
        tolerance: float,
        bounds: tuple[float, float],
        owners: Any = None,
    ) -> None:
        self.source = source
        self.store = store
        self.window = Window(window)
        # Per-pod GPU use by workload (watcher/gpupods.py), joined through the pod poller's
        # owners; without them (no Kubernetes access) every pod is counted `no_owner`.
        self.owners = owners
        self.profiles = GpuProfiles(window)
        self.expiry = expiry
        self.tolerance = tolerance
        self.bounds = bounds
        self.info: dict[str, tuple[str, ...]] = {}  # column -> (UUID, model, MIG profile)
        self.rejected: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.partial_answers: Counter[str] = Counter()  # by query key
        self.lacking = Lacking()  # per query key, GPU columns partial answers left out
        self.gpus = 0  # GPUs in the last poll's answer
        self.polls = 0
        self.last: dict[str, Any] = {"time": None, "ok": False, "error": "no poll yet"}
        self._logged: set[str] = set()

    def counters(self) -> dict[str, Any]:
        return {
            "polls": self.polls,
            "gpus": self.gpus,
            "pollErrors": dict(self.errors),
            "rejected": dict(self.rejected),
            "partialAnswers": dict(self.partial_answers),
        }

    def poll(self) -> None:
        self.polls += 1
        fetch = self.source.fetch()
        if fetch.error is not None:
            self.errors[fetch.error.reason] += 1
            self._log_once(f"error:{fetch.error.reason}", f"GPU query failed: {fetch.error}")
            self.last = {"time": fetch.time, "ok": False, "error": str(fetch.error)}
        else:
            self._logged = {k for k in self._logged if not k.startswith("error:")}
            self.last = {"time": fetch.time, "ok": True, "error": None}
        for key, note in fetch.partial.items():
            self.partial_answers[key] += 1
            self._log_once(f"partial:{key}", f"GPU query {key}: partial answer ({note})")
        if not fetch.partial:
            self._logged = {k for k in self._logged if not k.startswith("partial:")}
        # A partial answer (utilisation before a failed memory query) still counts.
        frame = frame_of(fetch)
        if frame is not None:
            self.window.add(frame)
            self.info.update({column(k): v for k, v in fetch.info.items()})
        self.lacking.update(fetch, frame)
        self.gpus = len(fetch.values.get(UTIL) or {})
        used, util = fetch.values.get(FB_USED) or {}, fetch.values.get(UTIL) or {}
        shares = pod_shares(fetch.pods, used, util)
        unowned = self.profiles.add(fetch.time, shares, self.owners)
        if unowned:
            fetch.rejected["no_owner"] += unowned
        self.profiles.trim(fetch.time)
        if fetch.rejected:
            self.rejected.update(fetch.rejected)
            self._log_once(
                "rejected:" + ",".join(sorted(fetch.rejected)),
                f"GPU samples rejected: {dict(fetch.rejected)}",
            )
        self.window.trim(fetch.time)
        live = set(self.window.nodes())
        self.info = {k: v for k, v in self.info.items() if k in live}
        lacking = {c for columns in self.lacking.nodes.values() for c in columns}
        nodes = gpu_stats(self.window, self.info, self.tolerance, self.bounds, lacking)
        self.lacking.known(
            {
                column((node, index)): gpu
                for node, gpus in nodes.items()
                for index, gpu in gpus.items()
            }
        )
        # The store's note per query whose answer lacked data, and how many GPUs are missing
        # from such answers (kept at their last window, aging), as the node poll reports them.
        self.last = {
            **self.last,
            "partial": dict(fetch.partial) or None,
            "lacking": self.lacking.counts() or None,
        }
        doc = {
            "built": fetch.time,
            "window": self.window.length,
            "expiry": self.expiry,
            "lastPoll": self.last,
            "counters": self.counters(),
            "nodes": nodes,
            "workloads": self.profiles.doc(),
        }
        if fetch.mapped:  # which pods use each GPU now: the scheduler predicts the next one's
            for node, gpus in doc["nodes"].items():
                for index, gpu in gpus.items():
                    users = fetch.pods.get((node, index), ())
                    gpu["pods"] = sorted(f"{namespace}/{pod}" for namespace, pod in users)
        body = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
        self.store.save_gpus(body, self.window.length + 60)

    def _log_once(self, cause: str, message: str) -> None:
        if cause not in self._logged:
            self._logged.add(cause)
            log.warning(message)
