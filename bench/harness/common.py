"""What the benchmarks share: the sandbox and the schedulers they start, the pod watches, the
raw binder and the pod creator, the /proc readers for CPU and memory, and how their pictures
and tables are drawn.

The scheduler benchmarks (`bench.scheduler` and its modules), `bench.watcher`, `bench.chaos`
and `bench.profiles` build on this module rather than on one another; the placement and
rebalancing benchmarks start their stack through `bench.harness.simulated_cluster`.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
import urllib3
import yaml
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from sandbox.cluster import build, processes
from sandbox.cluster.controlplane import ControlPlane, Ports
from sandbox.cluster.nodes import NodeSpec, create_nodes, wait_ready
from scheduler.backend.cache import interrupt
from scheduler.kube import kubeapi

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"  # every benchmark's result files
THREADS = 16  # client threads creating pods, Ballast's binder parallelism and the raw binder's
T = (5.0, 30.0)  # connect and read timeouts of the benchmarks' API calls
ZONES = 3
ZONE = "topology.kubernetes.io/zone"
RAW_BIND = "raw-bind"  # the scheduler name the raw binder serves
BIND_TRIES = 3


WORKLOADS = ("plain", "spread")
GROUP = 50  # pods per Deployment-like group in the `spread` workload
HOSTNAME = "kubernetes.io/hostname"


def pod_body(name: str, scheduler: str, workload: str = "plain", index: int = 0) -> dict[str, Any]:
    """A bench pod. `spread` adds what a typical Deployment's pod carries: a group label,
    required anti-affinity to its own group per node and a zone spread of maxSkew 1."""
    requests_ = {"cpu": "100m", "memory": "128Mi"}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "app",
                    "image": "example.invalid/app:1",
                    "resources": {"requests": requests_},
                }
            ],
        },
    }
    if workload == "spread":
        group = {"app": f"{name[0]}g{index // GROUP}"}
        selector = {"matchLabels": group}
        body["metadata"]["labels"] = group
        body["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": HOSTNAME}
                ]
            }
        }
        body["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ]
    return body


# -- /proc readers (Linux) -------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its waited-for children, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User + system CPU per thread of a process (by OS thread id), from /proc (Linux)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def thread_names(pid: int) -> dict[int, str]:
    """Python thread names by OS thread id (py-spy dump), the pool's number left out
    ("bind_3" -> "bind", "events-1" -> "events")."""
    spy = Path(sys.executable).with_name("py-spy")
    dump = subprocess.run(
        [str(spy), "dump", "--nonblocking", "--pid", str(pid)],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    found = re.findall(r'^Thread (\d+) \([^)]*\): "(.*)"$', dump, re.MULTILINE)
    return {int(tid): re.sub(r"[-_]\d+$", "", name) for tid, name in found}


def ms_per_pod_by_thread(
    pid: int, before: dict[int, float], after: dict[int, float], pods: int
) -> dict[str, float]:
    """The CPU a process spent between two `thread_cpu_seconds` readings, per thread name, in
    ms per pod, largest first (kernel counts, not samples)."""
    names = thread_names(pid)
    by_thread: dict[str, float] = {}
    for tid, cpu in after.items():
        name = names.get(tid, "(ended or unnamed)")
        by_thread[name] = by_thread.get(name, 0.0) + cpu - before.get(tid, 0.0)
    return {
        name: round(1000 * cpu / pods, 3)
        for name, cpu in sorted(by_thread.items(), key=lambda kv: -kv[1])
        if cpu > 0
    }


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine since boot, summed over cores, from
    /proc/stat: their differences over a phase say how many cores were busy in it."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick


def sandbox_cpu_seconds(plane: ControlPlane, contender: int | None) -> dict[str, float]:
    """CPU so far of each of the sandbox's processes (etcd, kube-apiserver, kwok, ...) but the
    contender's, and of this bench process (its client threads, its watch, and the raw bind
    loop when it runs)."""
    out = {"bench": process_cpu_seconds(os.getpid())}
    for rec in processes.recorded(plane.pid_dir):
        if rec.pid != contender and processes.alive(rec):
            out[rec.name] = process_cpu_seconds(rec.pid)
    return out


def _status_mb(pid: int, field: str) -> float | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def process_rss_mb(pid: int) -> float | None:
    """A process's resident memory now, in MB (VmRSS)."""
    return _status_mb(pid, "VmRSS")


def process_rss_peak_mb(pid: int) -> float | None:
    """A process's peak resident memory so far, in MB (VmHWM)."""
    return _status_mb(pid, "VmHWM")


def child_pids(pid: int) -> list[int]:
    """The children of a process's main thread (a gunicorn master's workers, py-spy's child)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:  # the process ended
        return []


# -- sizes and summaries ------------------------------------------------------------------------


def sized(args: argparse.Namespace, quick: dict[str, Any], full: dict[str, Any]) -> None:
    """Each option the command line left unset (None) from the quick size (`--quick`: a few
    minutes, its own result file, never the one the docs quote) or the full one."""
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)


def redraw_option(parser: argparse.ArgumentParser, flag: str, what: str) -> None:
    """An option naming an earlier result (JSON) to draw again instead of running."""
    parser.add_argument(flag, type=Path, default=None, metavar="JSON", help=what)


def redraw(result: Path, *draws: Callable[..., list[Path]]) -> int:
    """Each `draw(doc, folder, prefix=...)` over an earlier result, its pictures beside it."""
    doc = json.loads(result.read_text())
    for draw in draws:
        for path in draw(doc, result.parent, prefix=result.stem):
            print(f"plot: {path}")
    return 0


def new_figure(width: float, height: float, **layout: Any) -> tuple[Any, Any]:
    """A matplotlib figure and its axes, drawn to files only (the `bench` extra brings
    matplotlib; it is imported here so that a benchmark imports it only to draw). `layout`:
    `plt.subplots`' other arguments (nrows, ncols, sharey, width_ratios)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a CI machine
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), **layout)


def save(
    fig: Any, path: Path, legend: str | None = "best", title: str = "", dpi: int = 110
) -> Path:
    """The legend of the first axes placed (`legend=None`: the caller placed its legends), the
    title over all axes, then the figure written to `path` (its folder made) and closed."""
    import matplotlib.pyplot as plt

    if legend is not None:
        fig.axes[0].legend(fontsize=8, loc=legend)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


# The contenders of the placement and rebalancing pictures, each with its own colour.
COLORS = {
    # the placement benchmark's schedulers
    "ballast-tlp": "#1b7837",
    "ballast-lvrb": "#5aae61",
    "ballast-peak": "#01665e",
    "ballast-peak-recent": "#35978f",
    "ballast-tlp-always": "#762a83",
    "ballast-lvrb-always": "#af8dc3",
    "trimaran-tlp": "#c51b7d",
    "trimaran-lvrb": "#e9a3c9",
    "kube-scheduler": "#4575b4",
    "koordinator": "#e08214",
    "koordinator-agg": "#fdb863",
    # the rebalancing benchmark's
    "none": "#4575b4",
    "ballast": "#1b7837",
    "ballast-n1": "#7fbf7b",
    "ballast-latest": "#5aae61",
    "ballast-saturated": "#00441b",
    "ballast-saturated-n1": "#41ab5d",
    "ballast-saturated-m3": "#a1d99b",
    "ballast-saturated-n1-m3": "#74c476",
    "ballast-saturated-n1-m3-rn": "#238b45",
    "ballast-saturated-n1-warm": "#006d2c",
    "descheduler": "#c51b7d",
    "koord-descheduler": "#e08214",
    "koord-descheduler-migration": "#b35806",
}


def color_of(contender: str) -> str:
    """The contender's colour in every benchmark's pictures (grey for one without)."""
    return COLORS.get(contender, "grey")


def draw_scenarios(
    doc: dict[str, Any], folder: Path, prefix: str, draw: Callable[..., Path]
) -> list[Path]:
    """One picture per scenario of a result whose `runs` each name their scenario:
    `draw(scenario, doc["setup"], runs, path)` into `folder/<prefix>-<scenario>.png`."""
    paths = []
    for scenario in dict.fromkeys(run["scenario"] for run in doc["runs"]):
        runs = [r for r in doc["runs"] if r["scenario"] == scenario]
        paths.append(draw(scenario, doc["setup"], runs, folder / f"{prefix}-{scenario}.png"))
    return paths


def spread(values: list[float]) -> dict[str, float]:
    """Median, min and max of a figure over rounds or seeds."""
    return {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values)}


def scenario_table(doc: dict[str, Any], scenario: str, columns: tuple[tuple[str, str], ...]) -> str:
    """A markdown table of each contender's figures over a result's runs of `scenario`: per
    column (key, heading) the median, followed by (min..max) where the runs differ; empty
    without such a run."""
    runs = [r for r in doc["runs"] if r["scenario"] == scenario]
    if not runs:
        return ""
    out = [f"| {scenario} | " + " | ".join(label for _, label in columns) + " |"]
    out.append("| --- " * (len(columns) + 1) + "|")
    for c in doc["setup"]["contenders"]:
        cells = []
        for key, _ in columns:
            values = [r["contenders"][c][key] for r in runs if c in r["contenders"]]
            extent = f" ({min(values):g}..{max(values):g})" if min(values) != max(values) else ""
            cells.append(f"{statistics.median(values):g}{extent}")
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# -- contenders, watches, binders --------------------------------------------------------------


class Contender:
    """A running scheduler under test: how to stop it and, for a process, its pid."""

    def __init__(
        self, stop: Callable[[], None], pid: int | None = None, metrics_url: str = ""
    ) -> None:
        self.stop = stop
        self.pid = pid
        self.metrics_url = metrics_url  # Ballast's /metrics

    def attempts(self) -> dict[str, float]:
        """Ballast's scheduling attempts so far by result, and their summed cycle time in
        seconds (`seconds`); empty for a contender without /metrics."""
        if not self.metrics_url:
            return {}
        counts: dict[str, float] = {}
        for line in requests.get(self.metrics_url, timeout=5).text.splitlines():
            if line.startswith("ballast_scheduler_schedule_attempts_total{"):
                result = line.split('result="', 1)[1].split('"', 1)[0]
                counts[result] = counts.get(result, 0.0) + float(line.rsplit(" ", 1)[1])
            elif line.startswith("ballast_scheduler_scheduling_attempt_duration_seconds_sum"):
                counts["seconds"] = counts.get("seconds", 0.0) + float(line.rsplit(" ", 1)[1])
        return counts

    def cpu(self) -> float | None:
        return process_cpu_seconds(self.pid) if self.pid else None

    def rss_peak_mb(self) -> float | None:
        return process_rss_peak_mb(self.pid) if self.pid else None


class PodWatch:
    """A watch on the pods of one namespace (or of all, `namespace=None`) on its own thread,
    resumed from the last version seen; `handle` gets each event's decoded object. With
    `existing`, the pods already there come first (as ADDED), else only what happens after."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str | None,
        handle: Callable[[dict[str, Any]], None],
        existing: bool = False,
    ) -> None:
        self._core = client.CoreV1Api(api)
        self._ns = namespace
        self._handle = handle
        self._existing = existing
        self._stop = threading.Event()
        self._resp: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = threading.Event()

    def start(self) -> None:
        self._thread.start()
        self._started.wait(10)

    def stop(self) -> None:
        self._stop.set()
        interrupt(self._resp)
        self._thread.join(5)

    def _list(self, **kwargs: Any) -> Any:
        if self._ns is None:
            return self._core.list_pod_for_all_namespaces(_preload_content=False, **kwargs)
        return self._core.list_namespaced_pod(self._ns, _preload_content=False, **kwargs)

    def _run(self) -> None:
        rv = None  # a watch without a version starts with every pod there as ADDED
        if not self._existing:
            head = json.loads(self._list(limit=1, _request_timeout=T).data)
            rv = head["metadata"]["resourceVersion"]
        while not self._stop.is_set():
            try:
                self._resp = self._list(
                    watch=True,
                    resource_version=rv,
                    timeout_seconds=600,
                    _request_timeout=(5, 660),
                )
                self._started.set()
                for line in iter_resp_lines(self._resp):
                    obj = json.loads(line).get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    self._handle(obj)
            except Exception:  # noqa: BLE001 - reconnect from the last version
                if self._stop.is_set():
                    return
                time.sleep(0.2)


class BindTracker:
    """Watches one namespace and notes when each pod first shows a node."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.bound: dict[str, float] = {}
        self._watch = PodWatch(api, namespace, self._seen)

    def start(self) -> None:
        self._watch.start()

    def stop(self) -> None:
        self._watch.stop()

    def _seen(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if (obj.get("spec") or {}).get("nodeName") and name not in self.bound:
            self.bound[name] = time.monotonic()


class RawBinder:
    """The ceiling: a loop that only binds. It watches the pending pods named for `raw-bind` (of
    one namespace, or of all with `namespace=None`; those already there first) and binds them
    round robin over `nodes` on THREADS threads, no filter, no score.

    One rule for repeated watch events: a pod is queued once, at its first event, and a later
    event about the same pod is dropped. A scheduler's queue holds a pod once too, so the ceiling
    does the work a scheduler must do per pod and no more: re-queuing each repeated event (as
    bench.scheduler's binder once did) sent a second Binding that the API server refused with
    409, a cost no scheduler pays that lowered the ceiling and raised every "vs raw bind"
    ratio. A bind that fails for any other reason than the pod being bound (409) or gone (404)
    is tried again (BIND_TRIES in all), so a transient error does not leave a pod pending.
    """

    def __init__(
        self, api: client.ApiClient, nodes: list[str], namespace: str | None = None
    ) -> None:
        self._api = api
        self._nodes = nodes
        self._next = 0
        self._queued: set[tuple[str, str]] = set()
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="raw-bind")
        # PodWatch resumes when the apiserver ends a watch (it closes one that falls behind:
        # this process's bind threads share its interpreter); a lost event is a pod never bound.
        self._watch = PodWatch(api, namespace, self._seen, existing=True)

    def start(self) -> Contender:
        self._watch.start()
        return Contender(self.stop)

    def stop(self) -> None:
        self._watch.stop()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _seen(self, obj: dict[str, Any]) -> None:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        if spec.get("schedulerName") != RAW_BIND or spec.get("nodeName") or key in self._queued:
            return
        self._queued.add(key)
        node = self._nodes[self._next % len(self._nodes)]
        self._next += 1
        self._pool.submit(self._bind, *key, node)

    def _bind(self, namespace: str, name: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        problem = ""
        for _ in range(BIND_TRIES):
            try:
                answer = kubeapi.request(self._api, "POST", path, body, T)
            except (OSError, urllib3.exceptions.HTTPError) as exc:  # transport: try again
                problem = str(exc)
                continue
            if answer.ok or answer.status in (404, 409):  # bound, or deleted meanwhile
                return
            problem = answer.message()
        print(f"raw bind {namespace}/{name}: {problem}", file=sys.stderr)


def _wait_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=1, verify=False).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} not healthy after {timeout:.0f}s")


def _profiled(argv: list[str], out: Path | None) -> list[str]:
    """`argv` run under py-spy (sampling every thread, raw collapsed stacks to `out`), whose
    child is then the scheduler: its own CPU stays what /proc reports for it."""
    if out is None:
        return argv
    spy = Path(sys.executable).with_name("py-spy")
    return [str(spy), "record", "--nonblocking", "--format", "raw", "-o", str(out), "--", *argv]


def spy_on(pid: int, out: Path, rate: int = 200) -> Callable[[], None]:
    """py-spy attached to a running process (every thread, raw collapsed stacks to `out`) until
    the returned function is called: a profile of one phase of a run."""
    spy = Path(sys.executable).with_name("py-spy")
    argv = [str(spy), "record", "--nonblocking", "--format", "raw", "--rate", str(rate)]
    proc = subprocess.Popen(
        [*argv, "--pid", str(pid), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def stop() -> None:
        proc.send_signal(signal.SIGINT)  # py-spy writes its stacks on Ctrl-C
        proc.wait(60)

    return stop


def _child_pid(pid: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = child_pids(pid)
        if children:
            return children[0]
        time.sleep(0.05)
    raise TimeoutError(f"process {pid} started no child")


BALLAST_PACKAGES = ("ballast", "scheduler", "shared")


def compile_ballast() -> list[str]:
    """Compile Ballast's own packages to bytecode beside their sources, as its image ships them
    (Dockerfile): this machine sets PYTHONDONTWRITEBYTECODE=1 and the install is editable,
    so without this every start compiles them all from source, CPU that a deployed scheduler
    does not pay (docs/scheduler.md, "Bytecode", says how much). The started process still
    writes nothing; it reads what is compiled here (checked against each source's mtime, so
    an edit is never run stale).
    Returns the folders compiled."""
    done = []
    for name in BALLAST_PACKAGES:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            if not compileall.compile_dir(folder, quiet=1):
                raise RuntimeError(f"compileall failed in {folder}")
            done.append(folder)
    return done


def start_ballast(
    plane: ControlPlane,
    work: Path,
    profile: Path | None = None,
    record: bool = True,
    settings: dict[str, Any] | None = None,
) -> Contender:
    """`settings`: more of the scheduler's config (a watcherAddress, profiles)."""
    cfg = work / "ballast.yaml"
    config = {"parallelism": THREADS, "leaderElection": {"leaderElect": False}}
    cfg.write_text(yaml.safe_dump(config | (settings or {})))
    port = processes.free_port()
    exe = Path(sys.executable).with_name("ballast")
    proc = processes.spawn(
        "ballast-scheduler",
        _profiled(
            [
                str(exe),
                "scheduler",
                "--config",
                str(cfg),
                "--kubeconfig",
                str(plane.kubeconfig),
                "--metrics-listen",
                f"127.0.0.1:{port}",
                "--log-level",
                "WARNING",
                *(() if record else ("--decisions", "0")),
            ],
            profile,
        ),
        plane.log_dir,
        plane.pid_dir,
        None,
        True,
    )
    pid = proc.pid if profile is None else _child_pid(proc.pid)
    _wait_http(f"http://127.0.0.1:{port}/healthz")

    def stop() -> None:
        _print_cycle_time(f"http://127.0.0.1:{port}/metrics")
        if profile is not None:
            os.kill(pid, signal.SIGTERM)  # py-spy writes its stacks when its child exits
            proc.wait(60)
        _end(proc)

    return Contender(stop, pid, f"http://127.0.0.1:{port}/metrics")


def _print_cycle_time(url: str) -> None:
    """Mean time of one scheduling cycle as Ballast measured it (pop to hand-off)."""
    total = count = 0.0
    for line in requests.get(url, timeout=5).text.splitlines():
        if line.startswith("ballast_scheduler_scheduling_attempt_duration_seconds_sum"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith("ballast_scheduler_scheduling_attempt_duration_seconds_count"):
            count += float(line.rsplit(" ", 1)[1])
    if count:
        print(f"[ballast] {count:.0f} cycles, mean {1000 * total / count:.2f} ms", flush=True)


def start_kube_scheduler(plane: ControlPlane, work: Path) -> Contender:
    cfg = work / "kube-scheduler.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {
                    "kubeconfig": str(plane.kubeconfig),
                    "qps": 5000,
                    "burst": 5000,
                },
                "leaderElection": {"leaderElect": False},
            }
        )
    )
    port = processes.free_port()
    proc = processes.spawn(
        "kube-scheduler",
        [
            str(build.binary("kube-scheduler")),
            f"--config={cfg}",
            f"--secure-port={port}",
            "--bind-address=127.0.0.1",
            f"--cert-dir={work / 'kube-scheduler-certs'}",
            "--v=1",
        ],
        plane.log_dir,
        plane.pid_dir,
        None,
        True,
    )
    _wait_http(f"https://127.0.0.1:{port}/healthz")
    return Contender(lambda: _end(proc), proc.pid)


def _end(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


class PodMaker:
    """Creates pods fast: raw JSON over one keep-alive session per thread."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self._local = threading.local()

    def create(self, namespace: str, body: dict[str, Any]) -> None:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = self.plane.session()
        url = f"{self.plane.base_url}/api/v1/namespaces/{namespace}/pods"
        resp = session.post(url, json=body, timeout=T)
        resp.raise_for_status()

    def burst(
        self, namespace: str, names: list[str], body: Callable[[str, int], dict[str, Any]]
    ) -> dict[str, float]:
        """The pods `body(name, index)` created at once on THREADS threads; when each was sent."""
        created: dict[str, float] = {}
        index = {pod: i for i, pod in enumerate(names)}

        def one(pod: str) -> None:
            created[pod] = time.monotonic()
            self.create(namespace, body(pod, index[pod]))

        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(one, names))
        return created


def wait_watcher(url: str, nodes: list[str], timeout: float = 90.0) -> None:
    """Until the watcher at `url` reports a CPU figure for every node of `nodes`: a benchmark
    that places pods before then measures the fallback, not load-aware placement."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            doc = requests.get(f"{url}/api/v1/nodes", timeout=5).json()["nodes"]
            if all("cpu" in (doc.get(n) or {}).get("metrics", {}) for n in nodes):
                return
        except (requests.RequestException, ValueError, KeyError):
            pass  # not serving yet, or no snapshot yet
        time.sleep(0.5)
    raise TimeoutError(f"the watcher did not report all {len(nodes)} nodes in {timeout:.0f} s")


# -- the sandbox -------------------------------------------------------------------------------


def start_sandbox(prefix: str) -> tuple[Path, ControlPlane, client.ApiClient]:
    """A fresh sandbox in a new work folder, and an API client pooled for the bench's threads;
    the caller stops the plane."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    plane = ControlPlane(work / "sandbox", Ports.free(), die_with_parent=True)
    print(f"starting the sandbox in {work}", flush=True)
    plane.start()
    cfg = plane.api_client().configuration
    cfg.connection_pool_maxsize = THREADS * 2
    return work, plane, client.ApiClient(cfg)


def make_nodes(api: client.ApiClient, count: int) -> list[str]:
    """`count` kwok nodes of 8 CPU / 32 GiB in 3 zones, created on 16 threads; their names once
    all are Ready."""
    specs = [
        NodeSpec(f"bench-node-{i}", cpu="8", memory="32Gi", labels={ZONE: f"zone-{i % ZONES}"})
        for i in range(count)
    ]
    t0 = time.monotonic()
    chunks = [specs[i::THREADS] for i in range(THREADS)]
    with ThreadPoolExecutor(THREADS) as pool:
        names = [n for part in pool.map(lambda c: create_nodes(api, c), chunks) for n in part]
    wait_ready(api, names, timeout=300)
    print(f"{len(names)} nodes ready in {time.monotonic() - t0:.1f}s", flush=True)
    return names
