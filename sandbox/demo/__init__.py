"""`ballast demo [--keep-running]`: the whole system on this machine, end to end.

Starts the sandbox (eight kwok nodes of mixed sizes, kube-controller-manager), Redis, a load
simulator feeding a real Prometheus, the watcher and the scheduler; creates six Deployments and a
PodDisruptionBudget (sandbox.demo.workload), waits for each to become available through Ballast
and prints where its replicas went; scales one up and shows the new replicas placed by load;
prints each node's load over the window, staleness and winning score, and the FailedScheduling
reason of the pod that fits nowhere. Then the rebalancer acts on the nodes left hot: in dry run
first (what it would move, and why), then live (the eviction, the replacement's node, the hot
node relieved or what stayed on it, the table after; sandbox.demo.rebalance). With Prometheus
as the source, GPU nodes join last: one GPU made busy and all but full, GPU pods placed by GPU
load through a profile with GpuLoad, and where they went and why (sandbox.demo.gpu). Then it
stops everything it started.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import requests
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from sandbox.cluster.controlplane import ControlPlane, Ports
from sandbox.cluster.errors import SandboxError
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.demo import workload
from sandbox.demo.gpu import PROFILE as GPU_PROFILE
from sandbox.demo.gpu import GpuAct
from sandbox.demo.rebalance import Rebalancing
from sandbox.demo.stack import Stack
from sandbox.load.exporter import SyntheticExporter
from sandbox.load.simulator import Simulator, SimulatorConfig
from sandbox.peers import metrics_server

T = 10.0  # seconds per API request
BIND_TIMEOUT = 60.0
# Before the scale-up, the watcher's window must hold every placed pod: the scheduler counts a
# bound pod's predicted use on its node until a sample newer than the bind plus its provider
# lag (15 s) arrives, and that sample reaches it through a 1 s scrape, a 2 s poll and a 2 s
# fetch. Sooner, every node still carries the whole workload as "recently bound" on top of the
# measured load, every node is past 100 % predicted, and TargetLoadPacking cannot tell them apart.
SETTLE_SECONDS = 25.0
PAUSE_BETWEEN_GROUPS = 4.0
WATCHER_ENV = {
    # Short intervals so a two-minute demo shows the loop: scrape 1 s, poll 2 s, 15 s rates.
    "BALLAST_POLL_INTERVAL": "2",
    "BALLAST_POLL_JITTER": "0",
    "BALLAST_RATE_RANGE": "15s",
    # The Node list every 10 s (default 60): the GPU nodes join late, and until the watcher has
    # listed them their dcgm-exporter series are samples of unknown nodes (sandbox.demo.gpu).
    "BALLAST_KUBE_REFRESH": "10",
}
# The background's wobble at 5 % of itself (the simulator's default 10 % would swing busy
# medium-2 by 7 points a minute, across the rebalancer's high threshold with no pod at all).
SIMULATOR = SimulatorConfig(seed=7, ramp_seconds=5.0, background=workload.BUSY_NODES, wobble=0.05)
METRICS = "ballast_scheduler"  # the scheduler's metric name prefix
SCORE_IN_NOTE = re.compile(r"score (\d+)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the whole system on a local sandbox and show where pods land",
        description=__doc__.split("\n\n")[1],
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="keep everything running after the summary (dashboard, `ballast top`) until Ctrl-C",
    )
    parser.add_argument("--state-dir", help="folder for logs and state (default: a temp dir)")
    parser.add_argument(
        "--source",
        choices=("prometheus", "metrics-server"),
        default="prometheus",
        help="what the watcher reads: Prometheus scraping the simulator, or metrics-server "
        "scraping kwok's kubelets (the simulator feeds both the same load)",
    )
    parser.set_defaults(func=run)


def say(text: str = "") -> None:
    print(text, flush=True)


def step(text: str) -> float:
    print(f"==> {text}", flush=True)
    return time.monotonic()


def run(args: argparse.Namespace) -> int:
    state = Path(args.state_dir or tempfile.mkdtemp(prefix="ballast-demo-"))
    state.mkdir(parents=True, exist_ok=True)
    demo = Demo(state, args.source)
    # SIGTERM ends the demo like Ctrl-C, and Ctrl-C works even where a shell started the demo
    # with SIGINT ignored (a background job): everything started is stopped on the way out.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)
    code = 1
    try:
        demo.start()
        ok = demo.submit_and_report()
        if args.keep_running:
            try:
                demo.keep_running()
            except KeyboardInterrupt:
                say()  # Ctrl-C is how --keep-running is meant to end
        code = 0 if ok else 1
    except KeyboardInterrupt:
        say("\ninterrupted")
        code = 130
    except (SandboxError, TimeoutError, requests.RequestException, client.ApiException) as exc:
        say(f"ballast demo: {exc}")
    finally:
        demo.stop()
    if code == 0 and args.state_dir is None:
        shutil.rmtree(state, ignore_errors=True)  # a clean run's logs are not worth keeping
    else:
        say(f"logs and state: {state}")
    return code


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


class Demo:
    def __init__(self, state: Path, source: str = "prometheus") -> None:
        self.state = state
        self.source = source
        self.plane = ControlPlane(
            state / "sandbox",
            Ports.free(),
            die_with_parent=True,
            addons=[metrics_server.Addon()] if source == "metrics-server" else [],
            controllers=True,
        )
        self.stack = Stack(state / "services")
        self.api: client.ApiClient | None = None
        self.exporter: SyntheticExporter | None = None
        self.simulator: Simulator | None = None
        self.watcher_url = ""
        self.scheduler_url = ""
        self.bound_seconds = 0.0
        self.scheduler_config: dict = {}
        self.rebalancing: Rebalancing | None = None
        self.gpu: GpuAct | None = None
        self.unplaceable = ""  # its FailedScheduling as first posted (GPU nodes join later)

    # -- start and stop ----------------------------------------------------------------------
    def start(self) -> None:
        count = len(workload.NODES)
        t = step(
            f"starting the sandbox with {count} nodes (etcd, kube-apiserver, kwok, "
            "kube-controller-manager)"
        )
        self.plane.start(workload.NODES)
        self.api = self.plane.api_client()
        sizes = ", ".join(f"{n.name} {n.cpu}c/{n.memory}" for n in workload.NODES)
        say(f"    ready in {time.monotonic() - t:.1f} s: {sizes}")

        t = step("starting redis-server")
        redis_url = self.stack.start_redis()
        say(f"    {redis_url} ({time.monotonic() - t:.1f} s)")

        step("starting the load simulator (background load + placed pods' use)")
        env = dict(os.environ, **WATCHER_ENV, BALLAST_KUBECONFIG=str(self.plane.kubeconfig))
        if self.source == "metrics-server":
            self.simulator = Simulator(self.api, None, SIMULATOR, kwok_usage=True).start()
            if not self.simulator.wait_synced(30):
                raise TimeoutError("the simulator could not list nodes and pods within 30 s")
            say("    as annotations kwok's kubelets report; metrics-server scrapes them every 15 s")
            t = step("starting the watcher (source: metrics-server, polls every 2 s, Redis)")
            env["BALLAST_PROVIDER"] = "metrics-server"
            self.watcher_url = self.stack.start_watcher("", redis_url, env)
        else:
            self.exporter = SyntheticExporter().start()
            self.simulator = Simulator(self.api, self.exporter, SIMULATOR).start()
            if not self.simulator.wait_synced(30):
                raise TimeoutError("the simulator could not list nodes and pods within 30 s")
            say(f"    node-exporter metrics at {self.exporter.url}/metrics")

            t = step("starting prometheus (scrapes the simulator every second)")
            prom = self.stack.start_prometheus(self.exporter.target)
            say(f"    {prom} ({time.monotonic() - t:.1f} s)")

            t = step("starting the watcher (source: Prometheus, polls every 2 s, Redis)")
            self.watcher_url = self.stack.start_watcher(prom, redis_url, env)
        self._wait(self._watcher_sees_all_nodes, 60, "the watcher to report every node")
        say(f"    {self.watcher_url} ({time.monotonic() - t:.1f} s)")

        gpus = "; `ballast-gpu`, GpuLoad x5" if self.source == "prometheus" else ""
        t = step(f"starting the scheduler (profile `ballast`, TargetLoadPacking x3{gpus}; a Lease)")
        config = {
            "watcherAddress": self.watcher_url,
            "leaderElection": {"leaderElect": True, "resourceNamespace": "kube-system"},
            "profiles": [
                {
                    "schedulerName": workload.SCHEDULER_NAME,
                    # Load over spreading: upstream's default spreading of a Deployment's
                    # replicas (PodTopologySpread, weight 2) would otherwise decide the
                    # scale-up whenever the replicas are unevenly spread.
                    "plugins": {"score": {"enabled": [{"name": "TargetLoadPacking", "weight": 3}]}},
                    "pluginConfig": [
                        {"name": "TargetLoadPacking", "args": {"targetUtilization": 40}}
                    ],
                }
            ],
        }
        if self.source == "prometheus":
            # GPU pods' own profile (sandbox.demo.gpu), second: the rebalancer judges with the
            # first, so the CPU acts are what they were.
            config["profiles"].append(GPU_PROFILE)
        self.scheduler_config = config
        self.scheduler_url = self.stack.start_scheduler(
            config, self.plane.kubeconfig, dict(os.environ)
        )
        # Submitting before the first watcher snapshot would place the first group from
        # allocation alone; wait until the scheduler leads, knows the nodes and has load data.
        self._wait(self._scheduler_ready, 60, "the scheduler to lead with a watcher snapshot")
        say(f"    {self.scheduler_url}/metrics ({time.monotonic() - t:.1f} s)")

    def stop(self) -> None:
        say("stopping everything the demo started ...")
        stopped = self.stack.stop()
        if self.simulator is not None:
            self.simulator.stop(timeout=2.0)
        if self.exporter is not None:
            self.exporter.stop()
            stopped.append("simulator")
        if self.api is not None:
            self.api.close()
        stopped += self.plane.stop()
        if stopped:
            say(f"stopped: {', '.join(stopped)}")

    def keep_running(self) -> None:
        say()
        say(f"dashboard:  {self.watcher_url}/")
        say(f"terminal:   ballast top --watcher {self.watcher_url}")
        say(f"kubectl:    export KUBECONFIG={self.plane.kubeconfig}")
        say("running until Ctrl-C ...")
        threading.Event().wait()

    # -- the workload ----------------------------------------------------------------------
    def submit_and_report(self) -> bool:
        ensure_namespace(self.api, workload.NAMESPACE)
        apps = client.AppsV1Api(self.api)
        replicas = sum(g.replicas for g in workload.GROUPS)
        say()
        say(
            f"creating {len(workload.GROUPS)} Deployments ({replicas} replicas) in namespace "
            f"{workload.NAMESPACE}, one at a time: their ReplicaSets create the pods, Ballast "
            f"places those whose template says schedulerName {workload.SCHEDULER_NAME}."
        )
        started = time.monotonic()
        for group in workload.GROUPS:
            t = time.monotonic()
            apps.create_namespaced_deployment(
                workload.NAMESPACE, group.deployment(), _request_timeout=T
            )
            head = f"  {group.name:<7} {group.replicas:>2} replicas, {group.note}"
            if group.scheduler is None:
                say(f"{head}: left to the default scheduler (none runs here): Pending")
                continue
            if group.name == workload.UNPLACEABLE:
                reason = self._wait(self._failed_reason, BIND_TIMEOUT, "a FailedScheduling event")
                self.unplaceable = reason
                say(f"{head}: {reason}")
                continue
            self._wait_available(group.name, group.replicas)
            say(f"{head}: available in {time.monotonic() - t:.1f} s -> {self._spread(group.name)}")
            if group.name == workload.PDB[0]:
                self._guard_with_pdb()
            time.sleep(PAUSE_BETWEEN_GROUPS)  # lets the simulator's load rise before the next
        self.bound_seconds = time.monotonic() - started
        say(f"\nletting the load settle for {SETTLE_SECONDS:.0f} s ...")
        time.sleep(SETTLE_SECONDS)
        self.scale_up()
        self.show_profiles()
        self.show_table()
        self.rebalance()
        if self.source == "prometheus":  # dcgm-exporter's series reach the watcher that way
            self.gpu = GpuAct(self.api, self.watcher_url, self.scheduler_url, self._wait, say)
            self.gpu.run()
        return self.report()

    def rebalance(self) -> None:
        """The rebalancer on the nodes the placement left hot: dry run, then live."""
        kubeconfig = self.plane.kubeconfig

        def start(name: str, config: dict) -> str:
            return self.stack.start_rebalancer(name, config, kubeconfig, dict(os.environ))

        self.rebalancing = Rebalancing(
            start,
            lambda name: self.stack.stop(only=name),
            self._bound_apps,
            self._cpu_now,
            self._wait,
            self.scheduler_config,
            say,
        )
        self.rebalancing.run()
        say("\nthe nodes after:")
        self.show_table(legend=False)

    def _bound_apps(self) -> dict[str, tuple[str, str]]:
        """Pod name -> (its app label, its node or "") of the pods not being deleted."""
        out = {}
        for p in self._pods():
            if p.metadata.deletion_timestamp is None:
                app = (p.metadata.labels or {}).get(workload.GROUP_LABEL, "")
                out[p.metadata.name] = (app, p.spec.node_name or "")
        return out

    def _cpu_now(self) -> dict[str, float]:
        nodes = requests.get(f"{self.watcher_url}/api/v1/nodes", timeout=5).json()["nodes"]
        out = {}
        for name, load in nodes.items():
            latest = ((load.get("metrics") or {}).get("cpu") or {}).get("latest")
            if isinstance(latest, (int, float)):
                out[name] = float(latest)
        return out

    def _wait_available(self, name: str, replicas: int) -> None:
        apps = client.AppsV1Api(self.api)

        def available() -> bool:
            status = apps.read_namespaced_deployment(
                name, workload.NAMESPACE, _request_timeout=T
            ).status
            return status.available_replicas == replicas and status.updated_replicas == replicas

        self._wait(available, BIND_TIMEOUT, f"Deployment {name} to have {replicas} available")

    def _placement(self, app: str) -> dict[str, str]:
        """Pod name -> node of the Deployment's bound, not deleted pods."""
        pods = self._pods(f"{workload.GROUP_LABEL}={app}")
        return {
            p.metadata.name: p.spec.node_name
            for p in pods
            if p.spec.node_name and p.metadata.deletion_timestamp is None
        }

    def _spread(self, app: str) -> str:
        counts = Counter(self._placement(app).values())
        return ", ".join(f"{n} x{c}" for n, c in sorted(counts.items()))

    def _guard_with_pdb(self) -> None:
        name, min_available = workload.PDB
        policy = client.PolicyV1Api(self.api)
        policy.create_namespaced_pod_disruption_budget(
            workload.NAMESPACE, workload.pdb_body(), _request_timeout=T
        )

        def filled():
            pdb = policy.read_namespaced_pod_disruption_budget(
                name, workload.NAMESPACE, _request_timeout=T
            )
            return pdb.status if pdb.status and pdb.status.observed_generation else None

        status = self._wait(filled, BIND_TIMEOUT, "the disruption controller to fill the PDB")
        say(
            f"          PodDisruptionBudget {name} (minAvailable {min_available}): the disruption "
            f"controller counts {status.current_healthy} healthy, allows "
            f"{status.disruptions_allowed} disruption(s)"
        )

    def scale_up(self) -> None:
        name, extra = workload.SCALE_UP
        before = self._placement(name)
        target = len(before) + extra
        nodes_doc = requests.get(f"{self.watcher_url}/api/v1/nodes", timeout=5).json()["nodes"]
        client.AppsV1Api(self.api).patch_namespaced_deployment_scale(
            name, workload.NAMESPACE, {"spec": {"replicas": target}}, _request_timeout=T
        )
        t = time.monotonic()
        self._wait_available(name, target)
        new = Counter(n for p, n in self._placement(name).items() if p not in before)
        say(
            f"\nscaled {name} from {len(before)} to {target} replicas: available in "
            f"{time.monotonic() - t:.1f} s; where the {extra} new ones went, against each node's "
            "CPU just before (the watcher's latest):"
        )
        say(render_scale_up(workload.NODES, nodes_doc, new))

    def _pods(self, selector: str = "") -> list:
        core = client.CoreV1Api(self.api)
        return core.list_namespaced_pod(
            workload.NAMESPACE, label_selector=selector, _request_timeout=T
        ).items

    def _events(self) -> list[dict]:
        # Raw JSON: the controllers' events have no eventTime, which the client's model refuses.
        resp = client.EventsV1Api(self.api).list_namespaced_event(
            workload.NAMESPACE, _preload_content=False, _request_timeout=T
        )
        return json.loads(resp.data)["items"]

    def _failed_reason(self) -> str | None:
        for ev in self._events():
            pod = ev.get("regarding", {}).get("name", "")
            huge = pod.startswith(f"{workload.UNPLACEABLE}-")
            if ev.get("reason") == "FailedScheduling" and huge:
                return f'FailedScheduling "{ev.get("note")}"'
        return None

    def scheduler_metrics(self) -> dict[str, float]:
        """The scheduler's own /metrics samples, by name and labels."""
        text = requests.get(f"{self.scheduler_url}/metrics", timeout=5).text
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return samples

    def _scheduler_ready(self) -> bool:
        m = self.scheduler_metrics()
        return (
            m.get(f"{METRICS}_leader") == 1
            and m.get(f"{METRICS}_nodes") == len(workload.NODES)
            and m.get(f"{METRICS}_watcher_snapshot_age_seconds", -1) >= 0
        )

    def _watcher_sees_all_nodes(self) -> bool:
        nodes = requests.get(f"{self.watcher_url}/api/v1/nodes", timeout=5).json()["nodes"]
        return all("cpu" in (nodes.get(n.name) or {}).get("metrics", {}) for n in workload.NODES)

    @staticmethod
    def _wait(condition, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                result = condition()
            except (requests.RequestException, ValueError, KeyError):
                result = None
            if result:
                return result
            time.sleep(0.3)
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")

    # -- the report ------------------------------------------------------------------------
    def show_profiles(self) -> None:
        """What the watcher learned of each Deployment's replicas: the profiles later pods of
        the same Deployments are predicted from (docs/profiles.md)."""
        from watcher.top import render_workloads

        url = f"{self.watcher_url}/api/v1/workloads?namespace={workload.NAMESPACE}"
        try:
            doc = requests.get(url, timeout=5).json()
        except (requests.RequestException, ValueError):
            return
        if doc.get("workloads"):
            say("\nlearned workload profiles (what one replica uses; new replicas are predicted")
            say("from these once a revision has 10 samples, from requests before):")
            say(render_workloads(doc))

    def show_table(self, legend: bool = True) -> None:
        pods = self._pods()
        nodes_doc = requests.get(f"{self.watcher_url}/api/v1/nodes", timeout=5).json()["nodes"]
        where = {p.metadata.name: p.spec.node_name for p in pods}
        won: dict[str, list[int]] = defaultdict(list)
        for ev in self._events():
            scheduled = ev.get("reason") == "Scheduled"
            match = SCORE_IN_NOTE.search(ev.get("note") or "") if scheduled else None
            node = where.get(ev.get("regarding", {}).get("name"))
            if match and node:
                won[node].append(int(match.group(1)))
        per_node = Counter(p.spec.node_name for p in pods if p.spec.node_name)
        say()
        say(render_table(workload.NODES, per_node, nodes_doc, won))
        if not legend:
            return
        say(
            "CPU/MEM: the watcher's window; STATE: freshness and data age; WON: the winning "
            "scores of the pods placed there\n(0 when every node was past 100 % predicted use, "
            "as after a burst of pods without requests: then the tie is broken at random)"
        )

    def report(self) -> bool:
        pods = self._pods()
        ballast_pods = [p for p in pods if p.spec.scheduler_name == workload.SCHEDULER_NAME]
        placed = [p for p in ballast_pods if p.spec.node_name]
        unplaced = [p.metadata.name for p in ballast_pods if not p.spec.node_name]
        others = [p for p in pods if p.spec.scheduler_name != workload.SCHEDULER_NAME]
        reason = self.unplaceable or self._failed_reason() or "no FailedScheduling event"
        huge = f"{workload.UNPLACEABLE}-"
        expected = len(unplaced) == 1 and unplaced[0].startswith(huge)
        say()
        say("summary")
        say(
            f"  {len(pods)} pods in {len(workload.GROUPS)} Deployments; "
            f"{len(placed)}/{len(ballast_pods)} with "
            f"schedulerName {workload.SCHEDULER_NAME} placed in {self.bound_seconds:.1f} s "
            f"(groups {PAUSE_BETWEEN_GROUPS:.0f} s apart)"
        )
        say(f"  fits nowhere: {workload.NAMESPACE}/{', '.join(unplaced) or '-'}: {reason}")
        say(
            f"  {len(others)} pods for the default scheduler: untouched "
            f"({', '.join(sorted({p.status.phase for p in others}))})"
        )
        fallbacks = sum(
            v
            for k, v in self.scheduler_metrics().items()
            if k.startswith(f"{METRICS}_load_fallbacks_total")
        )
        say(f"  nodes scored from allocation instead of load data: {fallbacks:.0f} times")
        busy = ", ".join(f"{n} {c:.0f}%" for n, (c, _) in workload.BUSY_NODES.items())
        say(f"  busy before the workload (background CPU): {busy}")
        loop = self.rebalancing is not None and self.rebalancing.closed()
        if self.rebalancing is not None:
            say(self.rebalancing.summary())
        gpu_ok = True
        if self.gpu is not None:
            say(self.gpu.summary())
            gpu_ok = self.gpu.ok()
        ok = expected and all(not p.spec.node_name for p in others) and loop and gpu_ok
        verdict = "OK" if ok else f"UNEXPECTED placement, see the logs in {self.state}"
        say(f"  result: {verdict}")
        return ok


def render_scale_up(nodes: list, loads: dict, new: dict[str, int]) -> str:
    """Per node, idlest first: its CPU before the scale-up and the new replicas it got."""

    def cpu(name: str) -> dict:
        return ((loads.get(name) or {}).get("metrics") or {}).get("cpu") or {}

    def key(spec) -> tuple[float, str]:
        latest = cpu(spec.name).get("latest")
        return (latest if isinstance(latest, (int, float)) else float("inf"), spec.name)

    lines = []
    for spec in sorted(nodes, key=key):
        got = new.get(spec.name, 0)
        size = f"{spec.cpu}c/{spec.memory}"
        added = f"+{got}" if got else "-"
        lines.append(
            f"  {spec.name:<9} {size:<9} CPU {_pct(cpu(spec.name), 'latest')} %  {added:>3}"
        )
    return "\n".join(lines)


def _pct(stats: dict | None, key: str) -> str:
    value = (stats or {}).get(key)
    return f"{value:5.1f}" if isinstance(value, (int, float)) else "    -"


def render_table(
    nodes: list, pods_per_node: dict[str, int], loads: dict, won: dict[str, list[int]]
) -> str:
    """Per node: size, pods placed, CPU/memory over the window, staleness, winning scores."""
    head = (
        f"{'NODE':<9} {'SIZE':<9} {'PODS':>4}  {'CPU% now':>8} {'avg':>5} {'std':>5}  "
        f"{'MEM% avg':>8}  {'STATE':<13} {'WON':>7}"
    )
    lines = [head]
    for spec in nodes:
        load = loads.get(spec.name) or {}
        metrics = load.get("metrics") or {}
        cpu, mem = metrics.get("cpu"), metrics.get("memory")
        age = load.get("age")
        state = "no data"
        if isinstance(age, (int, float)):
            state = f"{load.get('state', '?')} {age:.0f}s"
        scores = sorted(won.get(spec.name) or [])
        score = "-"
        if scores:
            score = str(scores[0]) if scores[0] == scores[-1] else f"{scores[0]}-{scores[-1]}"
        size = f"{spec.cpu}c/{spec.memory}"
        lines.append(
            f"{spec.name:<9} {size:<9} {pods_per_node.get(spec.name, 0):>4}  "
            f"{_pct(cpu, 'latest'):>8} {_pct(cpu, 'avg')} {_pct(cpu, 'std')}  "
            f"{_pct(mem, 'avg'):>8}  {state:<13} {score:>7}"
        )
    return "\n".join(lines)
