"""`make bench-scheduler-perf`: kube-scheduler's own scheduler_perf workloads, side by side.

The workloads are read at run time from upstream's `test/integration/scheduler_perf` folder in
the Go module cache (k8s.io/kubernetes@v1.34.x, downloaded by `ballast sandbox build
--with-kube-scheduler`; `--upstream DIR` or BALLAST_SCHEDULER_PERF_DIR point elsewhere): the
test case's `workloadTemplate` (its ops in order), the named workload's `params`, and the node,
pod and object templates the ops name. Nothing of upstream's YAML is copied into this repo.

Per workload: a fresh sandbox (etcd, kube-apiserver, kwok; no kube-controller-manager), the
nodes of the `createNodes` ops, then each contender in turn (the order rotates from one workload
and round to the next): it starts, the init pods are created and bound, then the measured pods
(`collectMetrics: true`) are created at once by 16 threads while a `churn` op, if any, creates
one of its pods every `intervalMilliseconds`; after the contender its pods are deleted and the
next one starts on the same empty nodes. As upstream's throughput collector, pods/s is the
median (and mean) of the per-second counts of measured pods bound, from the first measured
pod's creation to the last one's binding; latency is creation to binding.

How upstream's objects are translated, and why:
- `spec.priority: N` (the churn templates) becomes `priorityClassName` of a PriorityClass of
  value N created per sandbox: upstream's integration apiserver runs without the Priority
  admission plugin, ours runs with it, which refuses a bare `priority`.
- `spec.schedulerName` is set to the contender's (`ballast`, `default-scheduler`, `raw-bind`).
- Node templates become kwok nodes (kwok's annotation added) with the template's capacity,
  labels and taints; `labelNodePrepareStrategy` gives node i the value `labelValues[i % n]`
  (upstream picks one at random per node).
- Upstream's templates are decoded case-insensitively by Go; `NodeAffinityPolicy` and
  `NodeTaintsPolicy` in a topology spread constraint are sent as the API's camelCase names.
- `featureGates` are ignored: both schedulers run v1.34's defaults.
`--size quick` runs each test case's `500Nodes` workload (upstream's `performance, short`
entry); `--size full` the 5,000-node ones the issue names, with `--max-pods` capping each
createPods op (and `--max-nodes` each createNodes op) on a machine that cannot hold the rest;
the JSON says for every op what upstream asks and what ran.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client

from bench.harness import runguard
from bench.harness.common import (
    RAW_BIND,
    RESULTS_DIR,
    THREADS,
    Contender,
    PodMaker,
    PodWatch,
    RawBinder,
    T,
    compile_ballast,
    ms_per_pod_by_thread,
    new_figure,
    redraw_option,
    save,
    spy_on,
    start_ballast,
    start_kube_scheduler,
    start_sandbox,
    thread_cpu_seconds,
)
from bench.harness.provenance import write_result
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import NodeSpec, create_nodes, wait_ready
from scheduler.kube import kubeapi

TIMEOUT = 900.0  # a phase that has not bound its pods by then is reported as it stands
UPSTREAM_ENV = "BALLAST_SCHEDULER_PERF_DIR"
UPSTREAM_SUBDIR = "test/integration/scheduler_perf"
CONTENDERS = ("raw-bind", "ballast", "kube-scheduler")
SCHEDULER_NAMES = {
    "raw-bind": RAW_BIND,
    "ballast": "ballast",
    "kube-scheduler": "default-scheduler",
}

# test case -> (config folder, quick workload, full workload); the full ones are those the issue
# names with their thresholds.
WORKLOADS: dict[str, tuple[str, str, str]] = {
    "SchedulingBasic": ("misc", "500Nodes", "5000Nodes_10000Pods"),
    "SchedulingPodAntiAffinity": ("affinity", "500Nodes", "5000Nodes_2000Pods"),
    "SchedulingPodAffinity": ("affinity", "500Nodes", "5000Nodes_5000Pods"),
    "TopologySpreading": ("topology_spreading", "500Nodes", "5000Nodes_5000Pods"),
    "PreferredTopologySpreading": ("topology_spreading", "500Nodes", "5000Nodes_5000Pods"),
    "DefaultTopologySpreading": ("topology_spreading", "500Nodes", "5000Nodes_50000Pods"),
    "SchedulingWithNodeInclusionPolicy": ("topology_spreading", "500Nodes", "5000Nodes"),
    "PreemptionAsync": ("misc", "500Nodes", "5000Nodes"),
    "Unschedulable": ("misc", "500Nodes/10Init/1kPods", "5kNodes/100Init/10kPods"),
}
SPREAD_KEYS = ("nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys", "minDomains")


class UpstreamNotFound(RuntimeError):
    pass


def find_upstream(explicit: Path | None = None) -> Path:
    """The scheduler_perf folder: `explicit`, $BALLAST_SCHEDULER_PERF_DIR, or the newest
    k8s.io/kubernetes@v1.34.* in the Go module cache."""
    if explicit is None and os.environ.get(UPSTREAM_ENV):
        explicit = Path(os.environ[UPSTREAM_ENV])
    if explicit is not None:
        if (explicit / "misc" / "performance-config.yaml").is_file():
            return explicit
        raise UpstreamNotFound(f"{explicit}: no misc/performance-config.yaml there")
    roots = [Path(os.environ["GOMODCACHE"])] if os.environ.get("GOMODCACHE") else []
    roots.append(Path(os.environ.get("GOPATH", Path.home() / "go")) / "pkg" / "mod")
    for root in roots:
        found = sorted((root / "k8s.io").glob("kubernetes@v1.34.*"), reverse=True)
        for module in found:
            if (module / UPSTREAM_SUBDIR / "misc" / "performance-config.yaml").is_file():
                return module / UPSTREAM_SUBDIR
    raise UpstreamNotFound(
        "kube-scheduler's scheduler_perf configs not found: looked for "
        f"k8s.io/kubernetes@v1.34.*/{UPSTREAM_SUBDIR} under {', '.join(map(str, roots))}. "
        "`ballast sandbox build --with-kube-scheduler` downloads that module; or pass "
        f"--upstream DIR / set {UPSTREAM_ENV}."
    )


@dataclass
class Op:
    """One op of a workload template, its counts resolved from the workload's params."""

    opcode: str
    count: int = 0
    upstream_count: int = 0
    template: dict[str, Any] = field(default_factory=dict)
    namespace: str = ""
    collect: bool = False
    label_key: str = ""
    label_values: list[str] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    interval_s: float = 0.0


@dataclass
class Workload:
    case: str
    name: str
    source: str
    ops: list[Op]
    threshold: float | None = None

    def namespaces(self) -> list[str]:
        return list(dict.fromkeys(op.namespace for op in self.ops if op.namespace))


def _template(folder: Path, relative: str) -> dict[str, Any]:
    return yaml.safe_load((folder / relative).read_text())


def _count(raw: dict[str, Any], params: dict[str, Any]) -> int:
    if "countParam" in raw:
        return int(params[raw["countParam"].lstrip("$")])
    return int(raw.get("count", 0))


def load_workload(
    upstream: Path, case: str, name: str, max_nodes: int | None, max_pods: int | None
) -> Workload:
    """Test case `case`, workload `name`, from its folder's performance-config.yaml."""
    folder = upstream / WORKLOADS[case][0]
    config = folder / "performance-config.yaml"
    cases = {c["name"]: c for c in yaml.safe_load(config.read_text())}
    tc = cases[case]
    workload = next((w for w in tc["workloads"] if w["name"] == name), None)
    if workload is None:
        raise UpstreamNotFound(f"{config}: {case} has no workload {name!r}")
    params = workload.get("params") or {}
    default_pod = tc.get("defaultPodTemplatePath")
    ops: list[Op] = []
    for index, raw in enumerate(tc["workloadTemplate"]):
        code = raw["opcode"]
        if code == "createNodes":
            n = _count(raw, params)
            strategy = raw.get("labelNodePrepareStrategy") or {}
            ops.append(
                Op(
                    code,
                    min(n, max_nodes or n),
                    n,
                    _template(
                        folder, raw.get("nodeTemplatePath", "../templates/node-default.yaml")
                    ),
                    label_key=strategy.get("labelKey", ""),
                    label_values=list(strategy.get("labelValues") or []),
                )
            )
        elif code == "createNamespaces":
            for i in range(_count(raw, params)):
                ops.append(Op(code, namespace=f"{raw['prefix']}-{i}"))
        elif code == "createPods":
            n = _count(raw, params)
            path = raw.get("podTemplatePath") or default_pod or "../templates/pod-default.yaml"
            ops.append(
                Op(
                    code,
                    min(n, max_pods or n),
                    n,
                    _template(folder, path),
                    # upstream's default for a createPods op without a namespace
                    namespace=raw.get("namespace") or f"namespace-{index}",
                    collect=bool(raw.get("collectMetrics")),
                )
            )
        elif code == "createAny":
            ops.append(
                Op(code, 1, 1, _template(folder, raw["templatePath"]), namespace=raw["namespace"])
            )
        elif code == "churn":
            if raw.get("mode") != "create":
                raise UpstreamNotFound(f"{case}: churn mode {raw.get('mode')!r} not supported")
            ops.append(
                Op(
                    code,
                    templates=[_template(folder, p) for p in raw["templatePaths"]],
                    namespace=f"namespace-{index}",
                    interval_s=int(raw.get("intervalMilliseconds", 500)) / 1000,
                )
            )
        else:
            raise UpstreamNotFound(f"{case}: opcode {code!r} not supported by this bench")
    return Workload(case, name, str(config), ops, workload.get("threshold"))


# ---- translating upstream's objects -------------------------------------------------------


def priority_class(value: int) -> str:
    return f"perf-priority-{value}"


def pod_from_template(template: dict[str, Any], name: str, scheduler: str) -> dict[str, Any]:
    body = copy.deepcopy(template)
    meta = body.setdefault("metadata", {})
    meta.pop("generateName", None)
    meta["name"] = name
    spec = body.setdefault("spec", {})
    spec["schedulerName"] = scheduler
    if "priority" in spec:
        spec["priorityClassName"] = priority_class(int(spec.pop("priority")))
    for constraint in spec.get("topologySpreadConstraints") or []:
        for key in list(constraint):
            proper = next((k for k in SPREAD_KEYS if k.lower() == key.lower()), key)
            if proper != key:
                constraint[proper] = constraint.pop(key)
    return body


def node_specs(op: Op, first: int) -> list[NodeSpec]:
    meta = op.template.get("metadata") or {}
    capacity = (op.template.get("status") or {}).get("capacity") or {}
    taints = [
        {k: v for k, v in t.items() if k in ("key", "value", "effect")}
        for t in (op.template.get("spec") or {}).get("taints") or []
    ]
    prefix = meta.get("generateName", "scheduler-perf-")
    specs = []
    for i in range(op.count):
        labels = dict(meta.get("labels") or {})
        if op.label_key:
            labels[op.label_key] = op.label_values[(first + i) % len(op.label_values)]
        specs.append(
            NodeSpec(
                f"{prefix}{first + i}",
                cpu=str(capacity.get("cpu", "4")),
                memory=str(capacity.get("memory", "32Gi")),
                labels=labels,
                taints=taints,
                pods=int(capacity.get("pods", 110)),
            )
        )
    return specs


def _priorities(workload: Workload) -> set[int]:
    found = set()
    for op in workload.ops:
        for tpl in [op.template, *op.templates]:
            if "priority" in (tpl.get("spec") or {}):
                found.add(int(tpl["spec"]["priority"]))
    return found


def prepare_cluster(api: client.ApiClient, workload: Workload) -> list[str]:
    """Nodes, namespaces, PriorityClasses and the createAny objects, once per sandbox."""
    t0 = time.monotonic()
    specs: list[NodeSpec] = []
    for op in workload.ops:
        if op.opcode == "createNodes":
            specs += node_specs(op, len(specs))
    chunks = [specs[i::THREADS] for i in range(THREADS)]
    with ThreadPoolExecutor(THREADS) as pool:
        names = [n for part in pool.map(lambda c: create_nodes(api, c), chunks) for n in part]
    wait_ready(api, names, timeout=600)
    print(f"{len(names)} nodes ready in {time.monotonic() - t0:.1f}s", flush=True)
    for ns in workload.namespaces():
        ensure_namespace(api, ns)
    for value in _priorities(workload):
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class(value)},
            "value": value,
        }
        _must(kubeapi.request(api, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body, T))
    for op in workload.ops:
        if op.opcode == "createAny":
            body = copy.deepcopy(op.template)
            meta = body.setdefault("metadata", {})
            meta["name"] = meta.pop("generateName", "object-").rstrip("-") + "-0"
            kind = body["kind"].lower() + "s"
            path = f"/api/v1/namespaces/{op.namespace}/{kind}"  # core kinds: the Service
            _must(kubeapi.request(api, "POST", path, body, T))
    return names


def _must(answer: kubeapi.Answer) -> None:
    if not answer.ok and answer.status != 409:
        raise RuntimeError(answer.message())


# ---- watching, binding, creating ----------------------------------------------------------


# kwok deletes a pod by name when it plays the delete stage of a pod removed between two
# contenders, sometimes late: a name the next contender uses again in the same sandbox could be
# deleted under it (seen on a loaded machine: 400 of 1,000 raw-bind pods gone, the phase waiting
# out TIMEOUT). So each contender's run names its pods with a prefix of its own.
_RUNS = itertools.count()


class Tracker:
    """One contender's run: when each pod (namespace/name) was created (by the bench) and first
    showed a node, and the prefix of the names of the pods the run creates."""

    def __init__(self) -> None:
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.preempted = 0  # pods deleted while bound: victims
        self.prefix = f"r{next(_RUNS)}"

    def handle(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if (obj.get("spec") or {}).get("nodeName") and key not in self.bound:
            self.bound[key] = time.monotonic()


def create_pods(
    maker: PodMaker, tracker: Tracker, op: Op, prefix: str, scheduler: str
) -> list[str]:
    """The op's pods, created at once on 16 threads; their keys."""
    names = [f"{prefix}-{i:06d}" for i in range(op.count)]
    created = maker.burst(
        op.namespace, names, lambda name, _: pod_from_template(op.template, name, scheduler)
    )
    tracker.created.update({f"{op.namespace}/{n}": t for n, t in created.items()})
    return [f"{op.namespace}/{n}" for n in names]


class Churn:
    """Upstream's `churn` op in `create` mode: one pod of its templates every interval."""

    def __init__(self, maker: PodMaker, tracker: Tracker, op: Op, scheduler: str) -> None:
        self._maker, self._tracker = maker, tracker
        self.op, self.scheduler = op, scheduler
        self._stop = threading.Event()
        self.keys: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        maker, tracker, op, scheduler = self._maker, self._tracker, self.op, self.scheduler
        i = 0
        while not self._stop.wait(op.interval_s if i else 0):
            name = f"{tracker.prefix}-churn-{i:06d}"
            tpl = op.templates[i % len(op.templates)]
            key = f"{op.namespace}/{name}"
            tracker.created[key] = time.monotonic()
            try:
                maker.create(op.namespace, pod_from_template(tpl, name, scheduler))
                self.keys.append(key)
            except Exception as exc:  # noqa: BLE001 - a failed create is one churn pod less
                print(f"churn create {key}: {exc}", file=sys.stderr)
            i += 1


# ---- one contender on one workload --------------------------------------------------------


def _wait_bound(tracker: Tracker, keys: list[str], timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(k not in tracker.bound for k in keys):
        time.sleep(0.05)


def throughput(tracker: Tracker, keys: list[str]) -> dict[str, Any]:
    """As scheduler_perf's throughput collector: pods bound per 1-s interval of the phase,
    from the first creation to the last binding; median and mean of those samples."""
    bound = [tracker.bound[k] for k in keys if k in tracker.bound]
    if not bound:
        return {"bound": 0, "of": len(keys), "pods_per_second_p50": 0.0}
    start = min(tracker.created[k] for k in keys)
    seconds = max(bound) - start
    buckets = [0] * (int(seconds) + 1)
    for t in bound:
        buckets[int(t - start)] += 1
    samples = buckets[:-1] or buckets  # the last second is partial
    latencies = sorted(tracker.bound[k] - tracker.created[k] for k in keys if k in tracker.bound)
    return {
        "bound": len(bound),
        "of": len(keys),
        "seconds": round(seconds, 3),
        "pods_per_second_p50": round(statistics.median(samples), 1),
        "pods_per_second_mean": round(len(bound) / seconds, 1) if seconds > 0 else None,
        "latency_p50_s": round(statistics.median(latencies), 3),
        "latency_p99_s": round(latencies[math.ceil(0.99 * len(latencies)) - 1], 3),  # nearest rank
    }


def _per_pod(cpu_s: float | None, pods: int) -> float | None:
    return None if cpu_s is None or not pods else round(1000 * cpu_s / pods, 3)


def run_contender(
    name: str,
    workload: Workload,
    api: client.ApiClient,
    maker: PodMaker,
    start: Callable[[], Contender],
    preemptors: int = 0,
    profile: Path | None = None,
) -> dict[str, Any]:
    """Start the contender, run the workload's createPods ops in order (the measured one with
    its churn), then, with `preemptors` and a churn of pods that preempt, the preemption phase
    (see `preempt_one_by_one`; with `profile`, Ballast's stacks over that phase alone go to
    `profile`'s name with -preemptors)."""
    scheduler = SCHEDULER_NAMES[name]
    tracker = Tracker()
    watch = PodWatch(api, None, tracker.handle)
    watch.start()
    began = time.monotonic()
    contender = start()
    ready = time.monotonic()
    cpu_ready = contender.cpu()
    result: dict[str, Any] = {"startup_s": round(ready - began, 3), "cpu_startup_s": cpu_ready}
    churn: Churn | None = None
    every: list[str] = []
    cpu_before = cpu_ready
    for index, op in enumerate(workload.ops):
        if op.opcode == "churn":
            churn = Churn(maker, tracker, op, scheduler)
            continue
        if op.opcode != "createPods":
            continue
        if op.collect and churn is not None:
            churn.start()
        cpu_before = contender.cpu()
        t0 = time.monotonic()
        keys = create_pods(maker, tracker, op, f"{tracker.prefix}-p{index}", scheduler)
        created_s = time.monotonic() - t0
        _wait_bound(tracker, keys)
        every += keys
        phase = throughput(tracker, keys) | {"creation_s": round(created_s, 3)}
        if op.collect:
            cpu_after = contender.cpu()
            phase["cpu_ms_per_pod"] = _per_pod(
                None if cpu_after is None else cpu_after - (cpu_before or 0.0), phase["bound"]
            )
            result["measured"] = phase
        else:
            result.setdefault("init", []).append(phase)
        print(f"[{name}] {'measured' if op.collect else 'init'} {json.dumps(phase)}", flush=True)
    if churn is not None:
        churn.stop()
        _wait_bound(tracker, churn.keys, timeout=5)  # the last ones may still be preempting
        result["churn"] = throughput(tracker, churn.keys) | {"created": len(churn.keys)}
        every += churn.keys
        if preemptors and name != "raw-bind":
            spied = None
            if profile is not None and name == "ballast":
                spied = profile.with_name(f"{profile.stem}-preemptors{profile.suffix}")
            result["preemption"] = preempt_one_by_one(
                contender, maker, tracker, churn, preemptors, spied
            )
            every += result["preemption"].pop("keys")
    cpu_end = contender.cpu()
    bound_all = sum(1 for k in every if k in tracker.bound)
    result["whole_run"] = {
        "pods_bound": bound_all,
        "cpu_s": cpu_end,
        "cpu_ms_per_pod": _per_pod(cpu_end, bound_all),
        "rss_peak_mb": contender.rss_peak_mb(),
    }
    contender.stop()
    watch.stop()
    return result


def preempt_one_by_one(
    contender: Contender,
    maker: PodMaker,
    tracker: Tracker,
    churn: Churn,
    count: int,
    profile: Path | None = None,
) -> dict[str, Any]:
    """CPU and latency per preempting pod: `count` pods of the churn's template created one at
    a time on the full cluster, each waited for until bound, nothing else going on: first the
    contender is left to finish what the phases before left it (Ballast writes the Scheduled
    events of the pods before for a while after the last binding, CPU the preemptors' figures
    would otherwise carry; docs/scheduler.md says how long and how much). The contender's CPU
    per thread over the preemptors is read from /proc. With `profile`, py-spy is attached over the
    preemptors alone (stacks to that file)."""
    op, scheduler = churn.op, churn.scheduler
    settle_s = settle(contender)
    keys = []
    stop_spy = spy_on(contender.pid, profile) if profile and contender.pid else None
    attempts0 = contender.attempts()
    threads0 = thread_cpu_seconds(contender.pid) if contender.pid else {}  # /proc: cheap
    cpu0 = contender.cpu()
    for i in range(count):
        name = f"{tracker.prefix}-preemptor-{i:04d}"
        key = f"{op.namespace}/{name}"
        tracker.created[key] = time.monotonic()
        maker.create(op.namespace, pod_from_template(op.templates[0], name, scheduler))
        keys.append(key)
        _wait_bound(tracker, [key], timeout=60)
    cpu1 = contender.cpu()
    threads1 = thread_cpu_seconds(contender.pid) if threads0 and contender.pid else {}
    attempts1 = contender.attempts()
    if stop_spy is not None:
        stop_spy()
    out = throughput(tracker, keys)
    out["cpu_ms_per_preemptor"] = _per_pod(
        None if cpu1 is None or cpu0 is None else cpu1 - cpu0, out["bound"]
    )
    if attempts1 and out["bound"]:
        # Ballast's scheduling attempts per preemptor by result, and their cycles' wall time
        spent = {k: (v - attempts0.get(k, 0.0)) / out["bound"] for k, v in attempts1.items()}
        seconds = spent.pop("seconds", 0.0)
        out["attempts_per_preemptor"] = {k: round(v, 2) for k, v in sorted(spent.items())}
        out["cycle_ms_per_preemptor"] = round(1000 * seconds, 2)
    if threads1 and out["bound"] and contender.pid:
        # the process's CPU over the preemptors by thread (kernel counts, not samples)
        out["cpu_ms_per_preemptor_by_thread"] = ms_per_pod_by_thread(
            contender.pid, threads0, threads1, out["bound"]
        )
    return out | {"keys": keys, "settle_s": settle_s}


def settle(contender: Contender, quiet_ms_per_s: float = 30.0, limit_s: float = 60.0) -> float:
    """Wait until the contender spends less than `quiet_ms_per_s` of CPU per second over two
    seconds in a row (at most `limit_s`); the seconds waited."""
    t0 = time.monotonic()
    quiet = 0
    while quiet < 2 and time.monotonic() - t0 < limit_s:
        before = contender.cpu()
        time.sleep(1.0)
        after = contender.cpu()
        if before is None or after is None:
            break
        quiet = quiet + 1 if 1000 * (after - before) < quiet_ms_per_s else 0
    return round(time.monotonic() - t0, 1)


def reset(api: client.ApiClient, namespaces: list[str], timeout: float = 600.0) -> None:
    """Every pod of the workload's namespaces deleted (kwok completes it) and gone."""
    core = client.CoreV1Api(api)
    for ns in namespaces:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0, _request_timeout=T)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = sum(
            len(core.list_namespaced_pod(ns, limit=1, _request_timeout=T).items)
            for ns in namespaces
        )
        if not left:
            return
        time.sleep(0.5)
    raise TimeoutError(f"pods of {namespaces} still there after {timeout:.0f}s")


def run_workload(
    workload: Workload,
    order: list[str],
    rounds: int,
    offset: int,
    preemptors: int = 0,
    profile: Path | None = None,
) -> dict[str, Any]:
    """One fresh sandbox, its nodes, then `rounds` rounds of every contender; `preemptors`
    only for PreemptionAsync, the workload whose churn preempts."""
    if workload.case != "PreemptionAsync":
        preemptors = 0
    work, plane, api = start_sandbox("ballast-perf-")
    per_round: list[dict[str, Any]] = []
    orders = []
    t0 = time.monotonic()
    try:
        nodes = prepare_cluster(api, workload)
        namespaces = workload.namespaces()
        maker = PodMaker(plane)
        starters: dict[str, Callable[[], Contender]] = {
            "raw-bind": lambda: RawBinder(api, nodes).start(),
            "ballast": lambda: start_ballast(plane, work, profile),
            "kube-scheduler": lambda: start_kube_scheduler(plane, work),
        }
        for r in range(rounds):
            k = (offset + r) % len(order)
            this = order[k:] + order[:k]
            orders.append(this)
            print(f"{workload.case}/{workload.name} round {r + 1}: {', '.join(this)}", flush=True)
            results = {}
            for name in this:
                results[name] = run_contender(
                    name, workload, api, maker, starters[name], preemptors, profile
                )
                reset(api, namespaces)
            per_round.append(results)
    finally:
        plane.stop()
    return {
        "case": workload.case,
        "workload": workload.name,
        "source": workload.source,
        "threshold": workload.threshold,
        "ops": [
            {
                "opcode": op.opcode,
                "namespace": op.namespace,
                "upstream": op.upstream_count,
                "ran": op.count,
            }
            for op in workload.ops
            if op.opcode in ("createNodes", "createPods")
        ],
        "orders": orders,
        "seconds": round(time.monotonic() - t0, 1),
        "medians": summarize(per_round),
        "per_round": per_round,
    }


# ---- summaries -----------------------------------------------------------------------------

FIGURES = {
    "pods_per_second": ("measured", "pods_per_second_p50"),
    "latency_p50_s": ("measured", "latency_p50_s"),
    "latency_p99_s": ("measured", "latency_p99_s"),
    "cpu_ms_per_pod_measured": ("measured", "cpu_ms_per_pod"),
    "cpu_ms_per_pod_whole_run": ("whole_run", "cpu_ms_per_pod"),
    "cpu_startup_s": (None, "cpu_startup_s"),
    "rss_peak_mb": ("whole_run", "rss_peak_mb"),
    "preemptor_latency_p50_s": ("churn", "latency_p50_s"),
    "preemptor_latency_p99_s": ("churn", "latency_p99_s"),
    "preemptors_bound": ("churn", "bound"),
    "cpu_ms_per_preemptor": ("preemption", "cpu_ms_per_preemptor"),
    "preemption_latency_p50_s": ("preemption", "latency_p50_s"),
}
# Ballast over kube-scheduler: (figure, goal, higher is better)
GOALS = (
    ("pods_per_second", 1.0, True),
    ("cpu_ms_per_pod_whole_run", 1.0, False),
    ("rss_peak_mb", 1.2, False),
    ("latency_p99_s", None, False),
    ("cpu_ms_per_pod_measured", None, False),
    ("cpu_startup_s", 2.0, False),
    ("cpu_ms_per_preemptor", 1.0, False),
    ("preemption_latency_p50_s", None, False),
)


def _figure(result: dict[str, Any], where: str | None, key: str) -> float | None:
    part = result if where is None else result.get(where) or {}
    value = part.get(key)
    return None if value is None else float(value)


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in dict.fromkeys(n for r in rounds for n in r):
        out[name] = {}
        for figure, (where, key) in FIGURES.items():
            values = [_figure(r[name], where, key) for r in rounds if name in r]
            values = [v for v in values if v is not None]
            if values:
                out[name][figure] = round(statistics.median(values), 3)
    return out


def ratios(medians: dict[str, Any]) -> dict[str, Any]:
    ours, theirs = medians.get("ballast", {}), medians.get("kube-scheduler", {})
    raw = medians.get("raw-bind", {})
    out: dict[str, Any] = {}
    for figure, goal, higher in GOALS:
        a, b = ours.get(figure), theirs.get(figure)
        if a is None or not b:
            continue
        ratio = round(a / b, 2)
        entry: dict[str, Any] = {"ratio": ratio}
        if goal is not None:
            entry |= {"goal": goal, "met": ratio >= goal if higher else ratio <= goal}
        out[figure] = entry
    if ours.get("pods_per_second") and raw.get("pods_per_second"):
        out["pods_per_second_vs_raw_bind"] = {
            "ratio": round(ours["pods_per_second"] / raw["pods_per_second"], 2)
        }
    return out


def plot(report: dict[str, Any], path: Path) -> None:
    cases = [w["case"] for w in report["workloads"]]
    figures = [
        ("pods_per_second", "pods/s"),
        ("cpu_ms_per_pod_whole_run", "CPU per pod (whole run)"),
        ("latency_p99_s", "p99 latency"),
        ("rss_peak_mb", "peak RSS"),
    ]
    fig, ax = new_figure(11, 5)
    width = 0.2
    for i, (figure, label) in enumerate(figures):
        values = [w["ratios"].get(figure, {}).get("ratio", 0.0) for w in report["workloads"]]
        xs = [x + (i - 1.5) * width for x in range(len(cases))]
        ax.bar(xs, values, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("Ballast / kube-scheduler")
    ax.set_title(
        f"scheduler_perf shapes ({report['size']}), Ballast over kube-scheduler v1.34: "
        "pods/s higher is better, the rest lower"
    )
    save(fig, path)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(report: dict[str, Any]) -> str:
    """Per workload and contender the medians, then Ballast / kube-scheduler per figure."""
    lines = [
        "| workload | contender | pods/s (p50) | latency p50 / p99 s | CPU ms/pod measured / "
        "whole run | start-up CPU s | peak RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in report["workloads"]:
        for name, m in w["medians"].items():
            lines.append(
                f"| {w['case']} | {name} | {_fmt(m.get('pods_per_second'))} | "
                f"{_fmt(m.get('latency_p50_s'), 2)} / {_fmt(m.get('latency_p99_s'), 2)} | "
                f"{_fmt(m.get('cpu_ms_per_pod_measured'), 2)} / "
                f"{_fmt(m.get('cpu_ms_per_pod_whole_run'), 2)} | "
                f"{_fmt(m.get('cpu_startup_s'), 2)} | {_fmt(m.get('rss_peak_mb'), 0)} |"
            )
    figures = [f for f, _, _ in GOALS] + ["pods_per_second_vs_raw_bind"]
    lines += [
        "",
        "| workload | " + " | ".join(figures) + " |",
        "|---|" + "---|" * len(figures),
    ]
    for w in report["workloads"]:
        cells = []
        for f in figures:
            r = w["ratios"].get(f)
            if r is None:
                cells.append("-")
            else:
                mark = "" if "met" not in r else (" ok" if r["met"] else " **missed**")
                cells.append(f"{r['ratio']:.2f}x{mark}")
        lines.append(f"| {w['case']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size",
        choices=("quick", "full"),
        default="full",
        help="full: the 5,000-node entries the issue names; quick: each test case's 500Nodes "
        "entry (about 13 minutes for all nine on 2 cores)",
    )
    parser.add_argument(
        "--quick", action="store_const", const="quick", dest="size", help="--size quick"
    )
    parser.add_argument("--workloads", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--only", nargs="*", default=list(CONTENDERS), choices=CONTENDERS)
    parser.add_argument("--rounds", type=int, default=1, help="rounds per workload")
    parser.add_argument("--max-nodes", type=int, default=None, help="cap per createNodes op")
    parser.add_argument("--max-pods", type=int, default=None, help="cap per createPods op")
    parser.add_argument(
        "--preemptors",
        type=int,
        default=20,
        help="PreemptionAsync: then this many preempting pods one at a time (CPU per preemptor)",
    )
    parser.add_argument("--upstream", type=Path, default=None, help="scheduler_perf folder")
    parser.add_argument(
        "--out", type=Path, default=None, help="default bench/results/scheduler-perf-<size>.json"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run Ballast under py-spy: stacks in bench/results/profile-perf-<workload>.txt "
        "(one round, py-spy raw format), PreemptionAsync's preemptors alone "
        "in profile-perf-PreemptionAsync-preemptors.txt",
    )
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="run Ballast as this checkout is (here: every start compiles its own modules from "
        "source, PYTHONDONTWRITEBYTECODE=1) instead of from bytecode compiled beforehand, as "
        "its image ships it; runs before 2026-11-26 were from source",
    )
    redraw_option(parser, "--table", "print a result's markdown table, draw its plot; run nothing")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    if args.table is not None:
        report = json.loads(args.table.read_text())
        print(table(report))
        plot(report, args.table.with_suffix(".png"))
        return 0
    runguard.start_run(parser, args.allow_dirty)
    try:
        upstream = find_upstream(args.upstream)
    except UpstreamNotFound as exc:
        print(f"bench.scheduler.perf: {exc}", file=sys.stderr)
        return 2
    print(f"scheduler_perf configs from {upstream}", flush=True)
    pick = 1 if args.size == "quick" else 2
    workloads = [
        load_workload(upstream, case, WORKLOADS[case][pick], args.max_nodes, args.max_pods)
        for case in args.workloads
    ]
    out = args.out or RESULTS_DIR / f"scheduler-perf-{args.size}.json"
    urllib3.disable_warnings()
    if not args.from_source:
        compile_ballast()
    began = time.monotonic()
    report: dict[str, Any] = {
        "benchmark": "scheduler_perf shapes",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "upstream": str(upstream),
        "size": args.size,
        "cpus": os.cpu_count(),
        "rounds": args.rounds,
        "ballast": "default profile, no watcher, parallelism 16, decision recording on (default)",
        "ballast_bytecode": "from source" if args.from_source else "compiled beforehand",
        "kube_scheduler": "v1.34 default profile, client QPS/burst 5000",
        "workloads": [],
    }
    for i, workload in enumerate(workloads):
        profile = RESULTS_DIR / f"profile-perf-{workload.case}.txt" if args.profile else None
        result = run_workload(workload, list(args.only), args.rounds, i, args.preemptors, profile)
        result["ratios"] = ratios(result["medians"])
        report["workloads"].append(result)
        report["seconds"] = round(time.monotonic() - began, 1)
        write_result(out, report)  # after each workload: a cut run keeps what it measured
        print(f"{workload.case}: {json.dumps(result['medians'])} {json.dumps(result['ratios'])}")
    plot(report, out.with_suffix(".png"))
    print(f"results in {out}, plot in {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
