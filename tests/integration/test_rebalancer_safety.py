"""The rebalancer as a cluster would run it: refusals, other schedulers' pods, dry run against
live, and leadership lost in the middle of a round.

One watcher and one Ballast scheduler serve the module; each test has its own kwok nodes (their
CPU set on the synthetic exporter), namespace and Deployments. The rebalancer reaches the
kube-apiserver through `SlowApi`, a plain-HTTP loopback proxy that forwards everything (watches
too) with the admin certificate, records every Eviction request as it arrives and can hold the
Evictions' answers: the tests read what was asked of the API server there.
"""

from __future__ import annotations

import http.client
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import yaml
from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from scheduler.config.profiles import build_profiles
from scheduler.kube.events import micro_time
from scheduler.rebalancer import limits, settings
from scheduler.rebalancer.runtime import Options, Rebalancer
from tests.fixtures.ports import free_port, wait_for
from tests.fixtures.watcher import WatcherProcess
from tests.integration.scheduler_support import placement, running
from tests.integration.test_rebalancer import budget_at_limit

T = 10
WATCHER = {"horizon_max": 3.0, "window": 30.0}
SECTION = {
    "interval": "300ms",
    "consecutive": 2,
    "resources": [{"name": "cpu", "high": 80, "low": 50}],
}
# Short, so a takeover is quick; an Eviction call may then take up to ~2.5 s (renew deadline
# less one retry period), more than the 1 s the proxy holds its answer.
ELECTION = {"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "500ms"}
LEASE_S = 4.0
SLOW_EVICTION_S = 1.0
HOP = frozenset(
    (
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "host",
        "content-length",
        "date",
        "server",
    )
)


class SlowApi:
    """A loopback HTTP proxy in front of the sandbox's kube-apiserver (TLS, admin certificate).

    `evictions` lists (arrival time, namespace, pod) of every Eviction request; `on_eviction`
    is called as one arrives, before it is forwarded; its answer is held `delay` seconds after
    the API server gave it (the eviction happened, the call is slow)."""

    def __init__(self, sandbox: Any) -> None:
        up = urlsplit(sandbox.base_url)
        self._upstream = (up.hostname or "127.0.0.1", up.port or 443)
        self._ctx = ssl.create_default_context(cafile=str(sandbox.ca_file))
        self._ctx.load_cert_chain(str(sandbox.admin_cert), str(sandbox.admin_key))
        self.delay = 0.0
        self.on_eviction: Callable[[], None] | None = None
        self.evictions: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> SlowApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def api_client(self) -> client.ApiClient:
        cfg = client.Configuration()
        cfg.host = self.url
        return client.ApiClient(cfg)

    def kubeconfig(self, path: Path) -> Path:
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "proxy", "user": {}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}],
            "current-context": "proxy",
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    def asked(self, namespace: str) -> list[tuple[float, str]]:
        """(arrival, pod) of the Eviction requests for pods in `namespace`."""
        with self._lock:
            return [(t, pod) for t, ns, pod in self.evictions if ns == namespace]

    def _arrived(self, path: str) -> None:
        parts = path.split("?")[0].split("/")  # /api/v1/namespaces/NS/pods/NAME/eviction
        with self._lock:
            self.evictions.append((time.time(), parts[4], parts[6]))
        hook = self.on_eviction
        if hook is not None:
            hook()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                eviction = self.command == "POST" and self.path.split("?")[0].endswith("/eviction")
                if eviction:
                    proxy._arrived(self.path)
                conn = http.client.HTTPSConnection(
                    *proxy._upstream, context=proxy._ctx, timeout=600
                )
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    if eviction and proxy.delay:
                        time.sleep(proxy.delay)
                    self.send_response(resp.status)
                    for key, value in resp.getheaders():
                        if key.lower() not in HOP:
                            self.send_header(key, value)
                    if resp.getheader("Content-Length") is not None:
                        data = resp.read()
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                        return
                    # A watch: passed on chunk by chunk as the API server sends it.
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    while chunk := resp.read1(65536):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (OSError, http.client.HTTPException):
                    self.close_connection = True  # a watch the API server or the client ended
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        return Handler


class Stage:
    def __init__(self, watcher: WatcherProcess, proxy: SlowApi) -> None:
        self.watcher = watcher
        self.proxy = proxy
        self.api = proxy.api_client()


@pytest.fixture(scope="module")
def stage(sandbox, kube_api, prometheus, tmp_path_factory) -> Iterator[Stage]:
    watcher = WatcherProcess(tmp_path_factory.mktemp("watcher"), prometheus.url, **WATCHER)
    watcher.start()
    proxy = SlowApi(sandbox).start()
    try:
        with running(kube_api, {"watcherAddress": watcher.url}):
            yield Stage(watcher, proxy)
    finally:
        proxy.stop()
        watcher.stop()


def deployment(
    name: str,
    replicas: int,
    cpu: str | None = "300m",
    node: str | None = None,
    scheduler: str = "ballast",
) -> dict[str, Any]:
    """`cpu` None: BestEffort. `node`: bound there by nodeName, as another scheduler (or an
    earlier placement) would have put it, so that no scheduler is needed."""
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu, "memory": "32Mi"}}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def create(api: client.ApiClient, namespace: str, *bodies: dict[str, Any]) -> None:
    apps = client.AppsV1Api(api)
    for body in bodies:
        apps.create_namespaced_deployment(namespace, body, _request_timeout=T)


def cordon(api: client.ApiClient, node: str, on: bool) -> None:
    client.CoreV1Api(api).patch_node(node, {"spec": {"unschedulable": on}}, _request_timeout=T)


def on_node(api: client.ApiClient, namespace: str, node: str, at_least: int = 0) -> list[str]:
    """The pods on `node`; [] while fewer than `at_least`."""
    pods = sorted(p for p, n in placement(api, namespace).items() if n == node)
    return pods if len(pods) >= at_least else []


@contextmanager
def rebalancer(
    api: client.ApiClient,
    watcher_url: str,
    section: dict[str, Any],
    election: dict[str, Any] | None = None,
    identity: str = "",
) -> Iterator[Rebalancer]:
    body = {
        "watcherAddress": watcher_url,
        "leaderElection": election or {"leaderElect": False},
        "profiles": [{"schedulerName": "ballast"}],
        "rebalancer": {**SECTION, **section},
    }
    cfg = settings.parse(body)
    options = Options(
        watcher_interval=0.3, watcher_max_backoff=0.5, provider_lag=1.0, identity=identity
    )
    r = Rebalancer(cfg, api, build_profiles(cfg.scheduler), options)
    r.start()
    try:
        yield r
    finally:
        r.stop()


def count(metric: Any, *labels: str) -> float:
    return (metric.labels(*labels) if labels else metric)._value.get()


def rounds(r: Rebalancer, role: str = "leader") -> float:
    return count(r.telemetry.rounds, role)


def moves(r: Rebalancer) -> list[tuple[str, str, str]]:
    acted = [d for d in r.decisions.latest() if d["action"] in ("evict", "would-evict")]
    return [(d["node"], d["pod"], d["target"]) for d in acted]


def skips(r: Rebalancer, node: str) -> set[tuple[str, str]]:
    return {
        (d["pod"], d["reason"])
        for d in r.decisions.latest()
        if d["node"] == node and d["action"] == "skip"
    }


def test_refused_and_foreign_pods_leave_the_relief_to_the_next_one(
    stage, kube_api, kube_nodes, namespace, exporter, monkeypatch
):
    """The issue's case: the hot node's first candidates are a replica of another scheduler's
    workload and one of a workload whose PodDisruptionBudget is at its limit; a web replica
    beside them moves. A dry run reports the same moves as the live run after it."""
    hot, cold = f"{namespace}-hot", f"{namespace}-cold"
    exporter.set(hot, cpu=92.0, memory=30.0)
    exporter.set(cold, cpu=15.0, memory=30.0)
    try:
        kube_nodes([NodeSpec(hot, cpu="2", memory="8Gi"), NodeSpec(cold, cpu="2", memory="8Gi")])
        cordon(kube_api, cold, True)
        create(
            kube_api,
            namespace,
            deployment("other", 2, cpu=None, node=hot, scheduler="default-scheduler"),
            deployment("db", 2, cpu=None, node=hot),
            deployment("web", 2),
        )
        before = wait_for(
            lambda: on_node(kube_api, namespace, hot, 6),
            timeout=60,
            what="six pods on the hot node",
        )
        budget_at_limit(kube_api, namespace, "db", 2)
        cordon(kube_api, cold, False)
        stage.watcher.wait_nodes([hot, cold], metrics=("cpu",))

        with rebalancer(stage.api, stage.watcher.url, {"dryRun": True}) as dry:
            wait_for(lambda: count(dry.telemetry.would_evict) >= 1, timeout=30, what="a held move")
            start = rounds(dry)
            wait_for(lambda: rounds(dry) >= start + 8, timeout=30)
            # The node rests after a held move as after an eviction: reported once.
            assert count(dry.telemetry.would_evict) == 1
        assert stage.proxy.asked(namespace) == []  # the at-limit budget read from the cache

        # The live run, on the same state, with a cache that has not seen the budget at its
        # limit: the API server's 429 must not stop the round either.
        monkeypatch.setattr(limits, "budget_at_limit", lambda workload, index: "")
        # Rounds 2 s apart: the web replica must go in the round of the refusal, not the next.
        with rebalancer(stage.api, stage.watcher.url, {"interval": "2s"}) as live:
            wait_for(
                lambda: count(live.telemetry.evictions, "cpu-hot") >= 1,
                timeout=30,
                what="an eviction",
            )
            start = rounds(live)
            wait_for(lambda: rounds(live) >= start + 3, timeout=30)
        assert count(live.telemetry.evictions, "cpu-hot") == 1
        (db_at, db), (web_at, web) = stage.proxy.asked(namespace)  # db's budget asked once
        assert db.startswith("db-") and web.startswith("web-")
        assert web_at - db_at < 1.5, web_at - db_at
        assert count(live.telemetry.skipped, "pdb") >= 1
        assert moves(live) == moves(dry) and moves(live)[0][2] == cold
        assert skips(live, hot) == skips(dry, hot)
        foreign = {p for p in before if p.startswith("other-")}
        assert {(f"{namespace}/{p}", "other-scheduler") for p in foreign} <= skips(live, hot)
        # The web replica's replacement lands on the cold node; the others never moved.
        wait_for(
            lambda: [p for p in on_node(kube_api, namespace, cold) if p.startswith("web-")],
            timeout=30,
            what="the web replacement on the cold node",
        )
        left = on_node(kube_api, namespace, hot)
        assert [p for p in before if not p.startswith("web-")] == [
            p for p in left if not p.startswith("web-")
        ]
    finally:
        exporter.remove(hot)
        exporter.remove(cold)


def three_hot_nodes(
    kube_api: client.ApiClient, kube_nodes: Any, namespace: str, exporter: Any, cpu: float
) -> tuple[list[str], str]:
    """Three nodes at `cpu` %, each with its own 2-replica Deployment bound on it, and a big
    cold node: a round plans three moves."""
    hot = [f"{namespace}-h{i}" for i in range(3)]
    cold = f"{namespace}-cold"
    for name in hot:
        exporter.set(name, cpu=cpu, memory=30.0)
    exporter.set(cold, cpu=10.0, memory=30.0)
    kube_nodes([*(NodeSpec(n, cpu="2", memory="8Gi") for n in hot), NodeSpec(cold, cpu="16")])
    create(kube_api, namespace, *(deployment(f"a{i}", 2, node=n) for i, n in enumerate(hot)))
    wait_for(
        lambda: sum(len(on_node(kube_api, namespace, n)) for n in hot) == 6,
        timeout=60,
        what="two pods on each hot node",
    )
    return hot, cold


def take_lease(api: client.ApiClient, namespace: str, name: str, holder: str) -> None:
    """Another identity writes itself into the Lease, freshly renewed."""
    patch = {"spec": {"holderIdentity": holder, "renewTime": micro_time()}}
    client.CoordinationV1Api(api).patch_namespaced_lease(name, namespace, patch, _request_timeout=T)


def test_no_eviction_after_the_lease_is_taken_mid_round(
    stage, kube_api, kube_nodes, namespace, exporter
):
    hot, _ = three_hot_nodes(kube_api, kube_nodes, namespace, exporter, 92.0)
    stage.watcher.wait_nodes(hot, metrics=("cpu",))
    taken: list[float] = []
    lease = "ballast-rebalancer"

    def intrude() -> None:
        if not taken:  # the first Eviction is on its way: another replica takes the Lease
            take_lease(kube_api, namespace, lease, "intruder")
            taken.append(time.time())

    stage.proxy.delay = SLOW_EVICTION_S
    stage.proxy.on_eviction = intrude
    election = {"leaderElect": True, "resourceNamespace": namespace, **ELECTION}
    try:
        with rebalancer(
            stage.api, stage.watcher.url, {"maxPerNamespace": 5}, election, "first"
        ) as r:
            wait_for(r.lost_lease.is_set, timeout=40, what="the loss noticed")
            start = rounds(r, "standby")
            wait_for(lambda: rounds(r, "standby") >= start + 3, timeout=30)
    finally:
        stage.proxy.delay = 0.0
        stage.proxy.on_eviction = None
        for name in hot:
            exporter.remove(name)
        exporter.remove(f"{namespace}-cold")
    asked = stage.proxy.asked(namespace)
    # One Eviction was in flight when the Lease went; none was sent after.
    assert len(asked) == 1 and asked[0][0] <= taken[0]
    assert count(r.telemetry.evictions, "cpu-hot") <= 1


class Replica:
    """`ballast rebalancer` as its Deployment runs it, through the proxy."""

    def __init__(self, config: Path, kubeconfig: Path, identity: str, log: Path) -> None:
        self.port = free_port()
        self.identity = identity
        self._log = log.open("wb")
        argv = [sys.executable, "-m", "ballast.cli", "rebalancer", f"--config={config}"]
        argv += [f"--kubeconfig={kubeconfig}", f"--listen=127.0.0.1:{self.port}"]
        argv += [f"--identity={identity}", "--watcher-interval=0.3"]
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)

    def healthy(self) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).ok
        except requests.RequestException:
            return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._log.close()


def holder(api: client.ApiClient, namespace: str, name: str) -> str:
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease(
            name, namespace, _request_timeout=T
        )
    except client.ApiException:
        return ""
    return lease.spec.holder_identity or ""


def test_a_standby_takes_over_a_leader_killed_mid_round(
    stage, kube_api, kube_nodes, namespace, exporter, tmp_path
):
    # Not hot yet: both replicas are up and settled before the first round with work.
    hot, cold = three_hot_nodes(kube_api, kube_nodes, namespace, exporter, 60.0)
    lease = "ballast-rebalancer"
    doc = {
        "watcherAddress": stage.watcher.url,
        "leaderElection": {"leaderElect": True, "resourceNamespace": namespace, **ELECTION},
        "profiles": [{"schedulerName": "ballast"}],
        "rebalancer": {**SECTION, "maxPerNamespace": 5, "leaseName": lease},
    }
    config = tmp_path / "rebalancer.yaml"
    config.write_text(yaml.safe_dump(doc))
    kubeconfig = stage.proxy.kubeconfig(tmp_path / "kubeconfig")
    killed: list[float] = []
    replicas: list[Replica] = []
    try:
        first = Replica(config, kubeconfig, "first", tmp_path / "first.log")
        replicas.append(first)
        wait_for(
            lambda: holder(kube_api, namespace, lease) == "first", timeout=60, what="first leads"
        )
        second = Replica(config, kubeconfig, "second", tmp_path / "second.log")
        replicas.append(second)
        wait_for(second.healthy, timeout=60, what="the standby up")

        def kill_the_leader() -> None:
            if not killed:  # its first Eviction is on its way: the rest of its round never comes
                first.kill()
                killed.append(time.monotonic())

        stage.proxy.delay = SLOW_EVICTION_S
        stage.proxy.on_eviction = kill_the_leader
        for name in hot:
            exporter.set(name, cpu=92.0, memory=30.0)
        wait_for(lambda: killed, timeout=40, what="the leader's first eviction")
        wait_for(
            lambda: holder(kube_api, namespace, lease) == "second",
            timeout=LEASE_S + 20,
            what="the standby leading",
        )
        took = time.monotonic() - killed[0]
        # The standby moves what the killed leader's round left, one pod per hot node.
        wait_for(
            lambda: {pod[:2] for _, pod in stage.proxy.asked(namespace)} >= {"a0", "a1", "a2"},
            timeout=40,
            what="an eviction from every hot node",
        )
        # Its Lease taken by another identity, the new leader exits as the scheduler does.
        take_lease(kube_api, namespace, lease, "intruder")
        exited = wait_for(lambda: second.proc.poll() is not None, timeout=30, what="an exit")
        assert exited and second.proc.returncode == 1
    finally:
        stage.proxy.delay = 0.0
        stage.proxy.on_eviction = None
        for replica in replicas:
            replica.kill()
        for name in [*hot, cold]:
            exporter.remove(name)
    # Within the lease duration, give or take one retry period and the load of the machine.
    assert took <= LEASE_S + 2.0, took
    pods = [pod for _, pod in stage.proxy.asked(namespace)]
    assert len(pods) == len(set(pods)), pods  # no pod asked twice
    # Nor a second pod off the node the killed leader took one from: its rest was on record
    # (an Event) before its Eviction call.
    workloads = [pod.split("-")[0] for pod in pods]
    assert workloads.count(workloads[0]) == 1, pods
