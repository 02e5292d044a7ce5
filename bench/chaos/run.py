"""`make chaos`: faults under load, with figures per fault.

One sandbox (kube-apiserver with its watch cache off, so watches read etcd directly), Redis,
Prometheus scraping a synthetic exporter, two watcher replicas behind a Service-like proxy, two
scheduler replicas with leader election. A steady stream of pods (20/s by default) runs for the
whole schedule while each fault is injected several times, one after the other:

- kill-poller: SIGKILL of the watcher replica whose poller holds the lock;
- stop-watcher-worker: SIGTERM to one gunicorn worker of a watcher replica (as gunicorn's own
  worker timeout or a max-requests recycle would end it); the master starts another;
- kill-leader: SIGKILL of the leading scheduler in the middle of a burst of pods;
- kill-redis-keep / kill-redis-wipe: SIGKILL of the Redis master, restarted with its data /
  empty (Sentinel told not to fail over meanwhile: the outage itself is the fault);
- sentinel-failover: SIGKILL of the Redis master; the Sentinel promotes the replica, the
  watchers follow it through their redis+sentinel:// URL; the old master returns as a replica;
- kill-prometheus: SIGKILL of Prometheus, restarted on its data after a pause;
- restart-apiserver: SIGKILL of kube-apiserver and a restart (watches resume from etcd);
- slow-prometheus / garbage-prometheus: the proxy in front of Prometheus delays each answer by
  1-10 s, or answers with garbage, for a while;
- expire-watch: kube-apiserver stopped, etcd written and compacted, apiserver started: every
  watch resumes from a compacted resourceVersion and gets etcd's real 410 Gone.

A killed process is started again after a short pause, as a kubelet would. At the end the
invariant checker reads the apiserver (pods and events), never the processes' logs: every pod
bound once, none left pending 60 s after the stream stops, no node over its allocatable.
Figures per fault in bench/results/chaos.json; docs/chaos.md explains them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import requests
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from prometheus_client.parser import text_string_to_metric_families

from bench.chaos.check import (
    NAMESPACE,
    SAMPLE_INTERVAL,
    bound_twice,
    check,
    fallback_scores,
    list_all_pods,
    render,
    scores_resumed,
    seconds_without,
    seconds_without_writes,
)
from bench.harness import runguard
from bench.harness.common import RESULTS_DIR, child_pids, new_figure, redraw_option, save
from bench.harness.faultproxy import DELAY, GARBAGE, PASS, FaultProxy
from bench.harness.provenance import write_result
from sandbox.cluster import processes
from sandbox.cluster.controlplane import ControlPlane, Ports
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import NodeSpec
from sandbox.load.exporter import SyntheticExporter
from tests.fixtures.ports import free_port, wait_for
from tests.fixtures.prometheus import PrometheusServer
from tests.fixtures.redis import SENTINEL_DOWN_AFTER_MS, SENTINEL_MASTER, RedisServer, SentinelSet
from tests.fixtures.watcher import WatcherProcess
from watcher import defaults as watcher_defaults
from watcher.keys import Keys
from watcher.redis_store import client_for

RESULTS = RESULTS_DIR / "chaos.json"
T = 5.0  # seconds per API request of the harness
CANARY = "ballast-chaos:canary"  # set before a Redis kill; gone after a wipe
FAULTS = (
    "kill-poller",
    "stop-watcher-worker",
    "kill-leader",
    "kill-redis-keep",
    "kill-redis-wipe",
    "sentinel-failover",
    "kill-prometheus",
    "restart-apiserver",
    "slow-prometheus",
    "garbage-prometheus",
    "expire-watch",
)
# Upstream kube-scheduler's lease timings: an apiserver restart shorter than the renew deadline
# must not cost the leader its lease.
LEADER_ELECTION = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"}
WATCHER_SETTINGS = {
    "poll_interval": 2.0,
    "poll_jitter": 0.0,
    "rate_range": "10s",
    "lock_ttl": 6.0,
    "provider_timeout": 5.0,  # some of the slow proxy's 1-10 s answers come too late
    "workers": 2,
    "threads": 4,
    "snapshot_check": 0.25,
}
POD_CPU, POD_MEMORY = "10m", "16Mi"
DRIFT = 6.0  # percentage points a node's CPU or memory may move per poll interval
LOST_AFTER = 60.0  # a pod still pending this long after the stream stops is lost


@dataclass
class ChaosConfig:
    nodes: int = 20
    rate: float = 20.0  # pods per second, steady
    repeats: int = 3  # rounds of the whole fault list
    faults: tuple[str, ...] = FAULTS
    warmup: float = 20.0  # seconds of load before the first fault (the baseline)
    gap: float = 10.0  # seconds of plain load after each fault has been cleared
    down: float = 3.0  # seconds a killed process stays dead
    bad_prometheus: float = 20.0  # seconds the proxy delays or garbles answers
    burst: int = 200  # extra pods at once before the leading scheduler is killed
    seed: int = 1
    state_dir: str = ""


@dataclass
class Episode:
    """One injected fault: when, what was killed, how long the injection took."""

    fault: str
    round: int
    start: float  # wall clock
    cleared: float = 0.0  # when the fault's cause was gone (process back, proxy passing)
    end: float = 0.0  # start of the next episode (or of the drain)
    killed: str = ""
    notes: dict[str, Any] = field(default_factory=dict)


class SchedulerProcess:
    """One `ballast scheduler` replica with its own log, port and identity."""

    def __init__(self, workdir: Path, kubeconfig: Path, config: dict, identity: str) -> None:
        self.workdir = workdir
        self.identity = identity
        self.port = free_port()
        self.config_path = workdir / f"{identity}.yaml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig = kubeconfig
        self.log_path = workdir / f"{identity}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> SchedulerProcess:
        # A new lease identity per start, as kube-scheduler's hostname_uuid: a restarted replica
        # does not take over its dead predecessor's lease before it runs out.
        self.starts += 1
        env = {k: v for k, v in os.environ.items() if not k.startswith("BALLAST_")}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ballast.cli", "scheduler", "--config",
                 str(self.config_path), "--kubeconfig", str(self.kubeconfig), "--metrics-listen",
                 f"127.0.0.1:{self.port}", "--identity", f"{self.identity}.{self.starts}",
                 "--watcher-interval", "1"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)

    def role(self) -> str:
        """ "leader", "standby", or "" (not answering)."""
        try:
            text = requests.get(f"{self.url}/healthz", timeout=1).text
        except requests.RequestException:
            return ""
        return "leader" if "leader" in text else "standby" if "standby" in text else ""

    def metrics(self) -> dict[str, float]:
        """Sums per metric name (labels folded), plus `name{result=...}` for binding results."""
        text = requests.get(f"{self.url}/metrics", timeout=2).text
        out: dict[str, float] = defaultdict(float)
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[s.name] += s.value
                if "result" in s.labels:
                    out[f"{s.name}{{{s.labels['result']}}}"] += s.value
        return dict(out)


class Load:
    """Creates pods at a steady rate (plus bursts) from two threads, retrying through outages."""

    def __init__(self, api: client.ApiClient, rate: float) -> None:
        self.core = client.CoreV1Api(api)
        self.rate = rate
        self.created: dict[str, float] = {}  # pod name -> wall time of its successful create
        self.create_errors = 0
        self._lock = threading.Lock()
        self._next = 0
        self._extra = 0
        self._start = 0.0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(2)]

    def start(self) -> Load:
        self._start = time.monotonic()
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)

    def burst(self, count: int) -> None:
        with self._lock:
            self._extra += count

    def _take(self) -> int | None:
        """The next pod's number once it is due (steady schedule or a pending burst)."""
        while not self._stop.is_set():
            with self._lock:
                due = int((time.monotonic() - self._start) * self.rate) + self._extra
                if self._next < due:
                    self._next += 1
                    return self._next
            time.sleep(0.005)
        return None

    def _run(self) -> None:
        while (n := self._take()) is not None:
            name = f"p{n:06d}"
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": {"app": "chaos"}},
                "spec": {
                    "schedulerName": "ballast",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "app",
                            "image": "example.invalid/app:1",
                            "resources": {"requests": {"cpu": POD_CPU, "memory": POD_MEMORY}},
                        }
                    ],
                },
            }
            while not self._stop.is_set():
                try:
                    self.core.create_namespaced_pod(NAMESPACE, body, _request_timeout=T)
                except ApiException as exc:
                    if exc.status != 409:  # 409: an earlier try went through after all
                        self._failed()
                        continue
                except Exception:  # noqa: BLE001 - apiserver down: try again, like a controller
                    self._failed()
                    continue
                with self._lock:
                    self.created[name] = time.time()
                break

    def _failed(self) -> None:
        with self._lock:
            self.create_errors += 1
        time.sleep(0.2)


class Monitor:
    """Samples every 0.5 s who leads (schedulers, pollers) and the schedulers' counters."""

    INTERVAL = SAMPLE_INTERVAL

    def __init__(self, chaos: Chaos) -> None:
        self.chaos = chaos
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            self.samples.append(self.sample())

    def sample(self) -> dict[str, Any]:
        c = self.chaos
        s: dict[str, Any] = {"t": time.time(), "leaders": [], "pollers": [], "fallbacks": 0.0}
        for sched in c.schedulers:
            if sched.role() == "leader":
                s["leaders"].append(sched.identity)
                try:
                    m = sched.metrics()
                except requests.RequestException:
                    continue
                s["fallbacks"] = m.get("ballast_scheduler_load_fallbacks_total", 0.0)
                s["bound"] = m.get("ballast_scheduler_binding_results_total{bound}", 0.0)
                s["snapshot_age"] = m.get("ballast_scheduler_watcher_snapshot_age_seconds", -1.0)
        for i, w in enumerate(c.watchers):
            try:
                resp = w.get("/api/v1/status", timeout=1)
            except (requests.RequestException, AssertionError):
                # The test fixture turns a timeout into an AssertionError (with the watcher's
                # log, for a test's report); here a slow answer is one sample without a poller,
                # not the end of the monitor's thread and of every sample after it.
                continue
            if resp.status_code >= 500:
                c.status_5xx += 1
            elif resp.ok and resp.json()["poller"]["leading"]:
                s["pollers"].append(i)
        s["store_version"] = c.store_version()
        return s


class Chaos:
    def __init__(self, cfg: ChaosConfig) -> None:
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.dir = Path(cfg.state_dir or tempfile.mkdtemp(prefix="ballast-chaos-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.plane = ControlPlane(self.dir / "sandbox", Ports.free(), True, watch_cache=False)
        self.api: client.ApiClient | None = None
        self.exporter: SyntheticExporter | None = None
        self.store: SentinelSet | None = None  # the watchers' Redis: master, replica, Sentinel
        self._store_reader: Any = None
        self.prometheus: PrometheusServer | None = None
        self.prom_proxy: FaultProxy | None = None
        self.service: FaultProxy | None = None
        self.watchers: list[WatcherProcess] = []
        self.schedulers: list[SchedulerProcess] = []
        self.load: Load | None = None
        self.monitor: Monitor | None = None
        self.episodes: list[Episode] = []
        self.status_5xx = 0  # the monitor's own status reads answered 5xx
        self.exits: list[dict[str, Any]] = []  # processes that ended without being killed
        self.expected: set[str] = set()  # names being killed on purpose right now
        self.redis_persist = True
        self.node_names = [f"chaos-{i}" for i in range(cfg.nodes)]
        self._drifting = threading.Event()

    # -- start and stop --------------------------------------------------------------------
    def start(self) -> None:
        nodes = [NodeSpec(n, cpu="32", memory="128Gi", pods=1000) for n in self.node_names]
        self.plane.start(nodes)
        self.api = self.plane.api_client()
        ensure_namespace(self.api, NAMESPACE)
        self.exporter = SyntheticExporter(cpus=32).start()
        for name in self.node_names:
            self.exporter.set(name, cpu=self.rng.uniform(5, 80), memory=self.rng.uniform(10, 70))
        threading.Thread(target=self._drift, daemon=True).start()
        self.store = SentinelSet(self.dir / "redis").start()
        self._store_reader = client_for(self.store.url)
        for node in (self.store.master, self.store.replica):
            self._redis_persistence(node)
        self.prometheus = PrometheusServer(self.dir / "prometheus", [self.exporter.target])
        self.prometheus.start()
        self.prom_proxy = FaultProxy([self.prometheus.url], seed=self.cfg.seed).start()
        for i in range(2):
            w = WatcherProcess(
                self.dir / f"watcher-{i}", self.prom_proxy.url, self.store.url, **WATCHER_SETTINGS
            )
            self.watchers.append(w.start())
        self.service = FaultProxy([w.url for w in self.watchers]).start()
        self.watchers[0].wait_nodes(self.node_names, timeout=60)
        config = {
            "watcherAddress": self.service.url,
            "leaderElection": {
                "leaderElect": True,
                **LEADER_ELECTION,
                "resourceName": "ballast-chaos",
                "resourceNamespace": "kube-system",
            },
        }
        for i in range(2):
            sched = SchedulerProcess(self.dir, self.plane.kubeconfig, config, f"scheduler-{i}")
            self.schedulers.append(sched.start())
        wait_for(self._leader, timeout=60, what="a leading scheduler")

    def stop(self) -> None:
        self._drifting.set()
        for part in (self.load, self.monitor):
            if part is not None:
                part.stop()
        for sched in self.schedulers:
            sched.kill()
        for w in self.watchers:
            w.stop()
        for proxy in (self.service, self.prom_proxy):
            if proxy is not None:
                proxy.stop()
        for server in (self.prometheus, self.store):
            if server is not None:
                server.stop()
        if self.exporter is not None:
            self.exporter.stop()
        if self.api is not None:
            self.api.close()
        self.plane.stop()

    def _drift(self) -> None:
        """Node load wanders a few points every poll interval, as a real cluster's does: the
        watcher's adaptive horizons stay short, so an outage turns data stale within seconds
        instead of never."""
        load = {n: [self.rng.uniform(5, 80), self.rng.uniform(10, 70)] for n in self.node_names}
        while not self._drifting.wait(WATCHER_SETTINGS["poll_interval"]):
            for name, values in load.items():
                values[0] = min(95.0, max(2.0, values[0] + self.rng.uniform(-DRIFT, DRIFT)))
                values[1] = min(95.0, max(2.0, values[1] + self.rng.uniform(-DRIFT, DRIFT)))
                assert self.exporter is not None
                self.exporter.set(name, cpu=values[0], memory=values[1])

    def _redis_persistence(self, node: RedisServer) -> None:
        # An RDB snapshot every second with any change: a SIGKILL loses at most about 1 s.
        if self.redis_persist:
            node.client().config_set("save", "1 1")

    @property
    def redis(self) -> RedisServer:
        """The Redis node the Sentinel names master now."""
        assert self.store is not None
        port = self.store.master_port()
        return next(n for n in (self.store.master, self.store.replica) if n.port == port)

    def store_version(self) -> str | None:
        """The snapshot version in the store (through the Sentinel), None when unreachable."""
        try:
            value = self._store_reader.get(Keys(watcher_defaults.KEY_PREFIX).version)
        except Exception:  # noqa: BLE001 - any Redis error: no answer this sample
            return None
        return value.decode() if value is not None else None

    def _leader(self) -> SchedulerProcess | None:
        return next((s for s in self.schedulers if s.role() == "leader"), None)

    def _poller(self) -> WatcherProcess | None:
        for w in self.watchers:
            try:
                if w.status()["poller"]["leading"]:
                    return w
            except (requests.RequestException, KeyError, ValueError):
                continue
        return None

    # -- supervision -----------------------------------------------------------------------
    def _processes(self) -> dict[str, Any]:
        named: dict[str, Any] = {s.identity: s for s in self.schedulers}
        named.update({f"watcher-{i}": w for i, w in enumerate(self.watchers)})
        return named

    def revive(self) -> None:
        """Restarts (and records) a scheduler or watcher that ended on its own: the kubelet."""
        for name, proc in self._processes().items():
            p = proc.proc
            if name in self.expected or p is None or p.poll() is None:
                continue
            tail = processes.log_tail(proc.log_path, 15)
            self.exits.append({"t": time.time(), "name": name, "code": p.returncode, "log": tail})
            proc.start(**({"wait": False} if isinstance(proc, WatcherProcess) else {}))

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.revive()
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))

    def _kill_and_restart(self, ep: Episode, name: str, proc: Any) -> None:
        self.expected.add(name)
        ep.killed = name
        proc.kill()
        self.wait(self.cfg.down)
        if isinstance(proc, WatcherProcess):
            proc.start(wait=False)
        else:
            proc.start()
        self.expected.discard(name)

    # -- the faults --------------------------------------------------------------------------
    def inject(self, ep: Episode) -> None:
        getattr(self, "_fault_" + ep.fault.replace("-", "_"))(ep)
        ep.cleared = time.time()

    def _fault_kill_poller(self, ep: Episode) -> None:
        poller = wait_for(self._poller, timeout=30, what="an active poller")
        name = f"watcher-{self.watchers.index(poller)}"
        self._kill_and_restart(ep, name, poller)
        wait_for(self._poller, timeout=60, what="a poller to take over")

    def _fault_stop_watcher_worker(self, ep: Episode) -> None:
        watcher = self.rng.choice(self.watchers)
        assert watcher.proc is not None
        master = watcher.proc.pid
        before = worker_pids(master)
        victim = self.rng.choice(sorted(before))
        ep.killed = f"watcher-{self.watchers.index(watcher)} worker"
        os.kill(victim, signal.SIGTERM)
        wait_for(lambda: len(w := worker_pids(master)) == len(before) and victim not in w,
                 timeout=30, what="gunicorn to replace the worker")  # fmt: skip

    def _fault_kill_leader(self, ep: Episode) -> None:
        leader = wait_for(self._leader, timeout=60, what="a leading scheduler")
        assert self.load is not None
        before = len(self.load.created)
        self.load.burst(self.cfg.burst)
        # Mid-burst: part of the burst is created (and being scheduled) when the leader dies.
        wait_for(lambda: len(self.load.created) >= before + self.cfg.burst // 3, timeout=30)
        ep.notes["burst"] = self.cfg.burst
        self._kill_and_restart(ep, leader.identity, leader)
        wait_for(self._leader, timeout=60, what="a scheduler to take over")

    def _kill_redis(self, ep: Episode, keep: bool) -> None:
        assert self.store is not None
        master = self.redis
        ep.killed = "redis"
        sentinel = self.store.sentinel()
        # A Redis outage, not a failover: the Sentinel waits a minute before it acts.
        sentinel.sentinel_set(SENTINEL_MASTER, "down-after-milliseconds", 60_000)
        try:
            # A key of the bench's own: the watcher may write again as soon as Redis is back,
            # so what shows the data went is this key's absence, not an empty database.
            master.client().set(CANARY, "1")
            master.kill()
            self.wait(self.cfg.down)
            if not keep:
                for f in master.workdir.glob("*.rdb"):
                    f.unlink()
            master.start()
            ep.notes["canary_after_restart"] = master.client().exists(CANARY)
            self._redis_persistence(master)
        finally:
            sentinel.sentinel_set(
                SENTINEL_MASTER, "down-after-milliseconds", SENTINEL_DOWN_AFTER_MS
            )

    def _fault_kill_redis_keep(self, ep: Episode) -> None:
        self._kill_redis(ep, keep=True)

    def _fault_kill_redis_wipe(self, ep: Episode) -> None:
        self._kill_redis(ep, keep=False)

    def _fault_sentinel_failover(self, ep: Episode) -> None:
        assert self.store is not None
        old = self.redis
        new = self.store.replica if old is self.store.master else self.store.master
        ep.killed = "redis master"
        killed = time.monotonic()
        old.kill()
        wait_for(lambda: self.store.master_port() == new.port, timeout=60, what="a promotion")
        ep.notes["promoted_after_s"] = round(time.monotonic() - killed, 2)
        promoted = self.store_version()
        # Restarted as a replica of the new master (the Sentinel would convert it anyway).
        new.args = ()
        old.args = ("--replicaof", "127.0.0.1", str(new.port))
        self.wait(max(0.0, self.cfg.down - (time.monotonic() - killed)))
        old.start()
        self._redis_persistence(old)
        # The fault is over when a poller has written to the promoted master: a poller whose
        # store calls failed during the promotion backs off first, which can outlast a short gap.
        wait_for(lambda: self.store_version() not in (None, promoted), timeout=60,
                 what="a write to the promoted master")  # fmt: skip
        ep.notes["writes_resumed_after_s"] = round(time.monotonic() - killed, 2)

    def _fault_kill_prometheus(self, ep: Episode) -> None:
        assert self.prometheus is not None and self.prometheus.proc is not None
        ep.killed = "prometheus"
        self.prometheus.proc.kill()
        self.prometheus.proc.wait(timeout=10)
        self.prometheus.proc = None
        self.wait(self.cfg.down)
        self.prometheus.start()

    def _fault_restart_apiserver(self, ep: Episode) -> None:
        ep.killed = "kube-apiserver"
        ep.notes["apiserver_down_s"] = round(self.plane.restart_apiserver(), 2)

    def _fault_expire_watch(self, ep: Episode) -> None:
        ep.killed = "kube-apiserver"

        def compact() -> None:
            ep.notes["compacted_revision"] = compact_etcd(self.plane.ports.etcd_client)

        def relists() -> float:
            return sum(s.metrics().get("ballast_scheduler_watch_relists_total", 0.0)
                       for s in self.schedulers)  # fmt: skip

        before = relists()
        ep.notes["apiserver_down_s"] = round(self.plane.restart_apiserver(before=compact), 2)
        # The proof that the 410 path ran: both replicas' reflectors listed again.
        wait_for(lambda: relists() > before, timeout=60, what="re-lists after 410 Gone")
        ep.notes["relists"] = relists() - before

    def _bad_prometheus(self, mode: str) -> None:
        assert self.prom_proxy is not None
        self.prom_proxy.set_mode(mode)
        self.wait(self.cfg.bad_prometheus)
        self.prom_proxy.set_mode(PASS)

    def _fault_slow_prometheus(self, ep: Episode) -> None:
        self._bad_prometheus(DELAY)

    def _fault_garbage_prometheus(self, ep: Episode) -> None:
        self._bad_prometheus(GARBAGE)

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        assert self.api is not None
        started = time.time()
        self.load = Load(self.api, self.cfg.rate).start()
        self.monitor = Monitor(self).start()
        baseline = Episode("baseline", 0, time.time())
        self.episodes.append(baseline)
        self.wait(self.cfg.warmup)
        baseline.cleared = time.time()
        for rnd in range(self.cfg.repeats):
            for fault in self.cfg.faults:
                ep = Episode(fault, rnd, time.time())
                self.episodes[-1].end = ep.start
                self.episodes.append(ep)
                self.inject(ep)
                self.wait(self.cfg.gap)
        self.load.stop()
        stream_end = time.time()
        self.episodes[-1].end = stream_end
        deadline = time.monotonic() + LOST_AFTER
        while time.monotonic() < deadline and self._pending_count():
            self.wait(1.0)
        self.monitor.stop()
        checked = check(self.api, self.load.created)
        return summarize(self, checked, started, stream_end)

    def _pending_count(self) -> int:
        assert self.api is not None
        try:
            return sum(1 for p in list_all_pods(self.api) if not p["spec"].get("nodeName"))
        except Exception:  # noqa: BLE001 - the apiserver may be slow after the run: go on
            return 1


def worker_pids(master: int) -> set[int]:
    """The gunicorn master's children: its workers."""
    return set(child_pids(master))


def compact_etcd(port: int) -> int:
    """Two more etcd revisions, then everything before the last compacted: with the apiserver
    down, every watch's last resourceVersion (even one that saw the latest write, whose resume
    starts at the next revision) is gone from etcd's history. Returns the revision."""
    url = f"http://127.0.0.1:{port}/v3"
    with requests.Session() as s:
        s.trust_env = False
        for _ in range(2):
            put = s.post(f"{url}/kv/put", json={"key": "Y2hhb3M=", "value": "eA=="}, timeout=T)
            put.raise_for_status()
        revision = int(put.json()["header"]["revision"])
        s.post(f"{url}/kv/compaction", json={"revision": revision}, timeout=T).raise_for_status()
    return revision


def summarize(chaos: Chaos, checked: dict[str, Any], started: float, stream_end: float) -> dict:
    assert chaos.load is not None and chaos.monitor is not None
    samples = chaos.monitor.samples
    pods = checked["pods"]
    lost_deadline = stream_end + LOST_AFTER
    episodes = []
    for ep in chaos.episodes:
        names = [n for n, t in chaos.load.created.items() if ep.start <= t < ep.end]
        exits = [e for e in chaos.exits if ep.start <= e["t"] < ep.end]
        figures = {
            "fault": ep.fault,
            "round": ep.round,
            "seconds": round(ep.end - ep.start, 1),
            "inject_seconds": round(ep.cleared - ep.start, 1),
            "killed": ep.killed,
            "pods_created": len(names),
            "bound": sum(1 for n in names if pods[n]["node"]),
            "bound_twice": sum(1 for n in names if bound_twice(pods[n])),
            "lost": sum(1 for n in names if not pods[n]["node"]),
            "bound_without_event": sum(
                1 for n in names if pods[n]["node"] and not pods[n]["scheduled_events"]
            ),
            "seconds_without_leader": seconds_without(samples, "leaders", ep.start, ep.end),
            "seconds_without_poller": seconds_without(samples, "pollers", ep.start, ep.end),
            "seconds_without_writes": seconds_without_writes(samples, ep.start, ep.end),
            "seconds_until_load_scores": scores_resumed(samples, ep.start, ep.end),
            "fallback_node_scores": fallback_scores(samples, ep.start, ep.end),
            "max_watcher_snapshot_age": max(
                (s.get("snapshot_age", 0.0) for s in samples if ep.start <= s["t"] < ep.end),
                default=0.0,
            ),
            "unexpected_restarts": [e["name"] for e in exits],
            **ep.notes,
        }
        episodes.append(figures)
    per_fault: dict[str, dict[str, Any]] = {}
    for fig in episodes:
        agg = per_fault.setdefault(
            fig["fault"],
            {"episodes": 0, "pods_created": 0, "bound": 0, "bound_twice": 0, "lost": 0,
             "bound_without_event": 0,
             "unexpected_restarts": 0, "max_seconds_without_leader": 0.0,
             "max_seconds_without_poller": 0.0, "max_seconds_until_load_scores": 0.0,
             "max_seconds_without_writes": 0.0, "fallback_node_scores": 0},
        )  # fmt: skip
        agg["episodes"] += 1
        for k in ("pods_created", "bound", "bound_twice", "lost", "bound_without_event"):
            agg[k] += fig[k]
        agg["unexpected_restarts"] += len(fig["unexpected_restarts"])
        agg["max_seconds_without_leader"] = max(
            agg["max_seconds_without_leader"], fig["seconds_without_leader"]
        )
        agg["max_seconds_without_poller"] = max(
            agg["max_seconds_without_poller"], fig["seconds_without_poller"]
        )
        agg["max_seconds_without_writes"] = max(
            agg["max_seconds_without_writes"], fig["seconds_without_writes"]
        )
        agg["fallback_node_scores"] += fig["fallback_node_scores"]
        resumed = fig["seconds_until_load_scores"]
        prev = agg["max_seconds_until_load_scores"]
        agg["max_seconds_until_load_scores"] = (
            None if resumed is None or prev is None else max(prev, resumed)
        )
    assert chaos.service is not None
    totals = {
        "pods_created": len(pods),
        "bound": sum(1 for p in pods.values() if p["node"]),
        "bound_twice": sum(1 for f in episodes for _ in range(f["bound_twice"])),
        "lost": sum(1 for p in pods.values() if not p["node"]),
        "missing": sum(1 for p in pods.values() if p["missing"]),
        "overcommitted_nodes": checked["overcommitted_nodes"],
        "unexpected_restarts": chaos.exits,
        "watcher_5xx": chaos.service.count_5xx(),
        "watcher_status_5xx": chaos.status_5xx,
        "watcher_answers": dict(sorted((str(k), v) for k, v in chaos.service.statuses.items())),
        "watcher_unreachable": chaos.service.refused,
        "watcher_broken_answers": chaos.service.broken,
        "pod_create_retries": chaos.load.create_errors,
        "stream_seconds": round(stream_end - started, 1),
        "pods_per_second": round(len(pods) / max(1.0, stream_end - started), 1),
        "lost_deadline": "stream end + 60 s",
    }
    totals["pass"] = (
        totals["bound_twice"] == 0
        and totals["lost"] == 0
        and totals["missing"] == 0
        and not totals["overcommitted_nodes"]
        and not chaos.exits
        and totals["watcher_5xx"] == 0
    )
    return {
        "config": asdict(chaos.cfg) | {"faults": list(chaos.cfg.faults)},
        "setup": {
            "leader_election": LEADER_ELECTION,
            "watcher": WATCHER_SETTINGS,
            "apiserver": "--watch-cache=false",
            "pod_requests": {"cpu": POD_CPU, "memory": POD_MEMORY},
            "machine": f"{os.cpu_count()} cores",
        },
        "totals": totals,
        "per_fault": per_fault,
        "episodes": episodes,
        "lost_deadline_wall": lost_deadline,
    }


# Every fault once under a lighter stream: `--quick`, and the reduced run in `make test`
# (tests/integration/test_chaos.py).
QUICK = ChaosConfig(
    nodes=5, rate=10.0, repeats=1, warmup=8.0, gap=6.0, down=2.0, bad_prometheus=8.0, burst=60
)


def run_chaos(cfg: ChaosConfig) -> dict[str, Any]:
    chaos = Chaos(cfg)
    try:
        chaos.start()
        return chaos.run() | {"state_dir": str(chaos.dir)}
    finally:
        chaos.stop()


GAPS = (
    ("max_seconds_without_leader", "s without a leading scheduler"),
    ("max_seconds_without_poller", "s without a polling watcher"),
    ("max_seconds_until_load_scores", "s until the leader scores by load again"),
)


def plot(result: dict[str, Any], path: Path) -> None:
    """Per fault, the longest of each gap over its runs (bars), and what the invariants counted
    (pods created, bound twice, lost) beside its name."""
    faults = list(result["per_fault"])
    fig, ax = new_figure(10, 0.45 * len(faults) + 1.5)
    height = 0.8 / len(GAPS)
    for i, (key, label) in enumerate(GAPS):
        ys = [k + (i - 1) * height for k in range(len(faults))]
        values = [result["per_fault"][f].get(key) or 0.0 for f in faults]
        ax.barh(ys, values, height, label=f"longest {label}")
    names = []
    for fault in faults:
        row = result["per_fault"][fault]
        names.append(
            f"{fault} (x{row['episodes']}): {row['pods_created']} pods, "
            f"{row['bound_twice']} twice, {row['lost']} lost"
        )
    ax.set_yticks(range(len(faults)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    totals = result["totals"]
    ax.set_title(
        f"Faults under load, {totals['pods_per_second']} pods/s: "
        f"{'every invariant held' if totals['pass'] else 'an invariant FAILED'}"
    )
    save(fig, path, "lower right")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every fault once at 10 pods/s on 5 nodes, as `make test` runs it (about 2.5 "
        "minutes), into bench/results/chaos-quick.json",
    )
    base = ChaosConfig()
    parser.add_argument("--rate", type=float, default=None, help=f"pods/s ({base.rate:g})")
    parser.add_argument("--repeats", type=int, default=None, help=f"default {base.repeats}")
    parser.add_argument("--nodes", type=int, default=None, help=f"default {base.nodes}")
    parser.add_argument("--gap", type=float, default=None, help=f"default {base.gap:g} s")
    parser.add_argument("--faults", nargs="*", choices=FAULTS, default=list(FAULTS))
    parser.add_argument("--state-dir", default="", help="logs and state (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=None, help="bench/results/chaos.json")
    redraw_option(parser, "--plot", "only draw an earlier result")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    if args.plot is not None:
        plot(json.loads(args.plot.read_text()), args.plot.with_suffix(".png"))
        return 0
    runguard.start_run(parser, args.allow_dirty)
    given = {k: getattr(args, k) for k in ("rate", "repeats", "nodes", "gap")}
    cfg = replace(
        QUICK if args.quick else base,
        **{k: v for k, v in given.items() if v is not None},
        faults=tuple(args.faults),
        state_dir=args.state_dir,
    )
    args.out = args.out or (RESULTS.with_name("chaos-quick.json") if args.quick else RESULTS)
    result = run_chaos(cfg)
    write_result(args.out, result)  # before the picture: a failing plot never loses a run
    plot(result, args.out.with_suffix(".png"))
    print(render(result))
    print(f"results in {args.out}; logs in {result['state_dir']}")
    return 0 if result["totals"]["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
