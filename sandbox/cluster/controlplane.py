"""The sandbox control plane: etcd, kube-apiserver, kwok and kube-controller-manager on loopback.

`ControlPlane(state_dir).start()` is what `ballast sandbox up`, the test fixtures, the demo and
the benchmarks share. The state folder holds everything a run writes: the PKI, etcd's data, a
kubeconfig and env file, one log and one pid file per process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import requests
import yaml
from kubernetes import client

from sandbox.cluster import build, defaults, processes
from sandbox.cluster.certs import (
    PROXY_CLIENT_NAME,
    AggregationPki,
    Pki,
    ensure_aggregation_pki,
    ensure_pki,
)
from sandbox.cluster.errors import AlreadyRunningError, SandboxError, StartupError
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import NodeSpec, create_nodes, wait_ready

# Namespaces the apiserver creates itself; their `default` ServiceAccount is ours to make.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Stopped in this order: clients before the apiserver before its storage.
STOP_ORDER = (
    "metrics-server",
    "kube-scheduler",
    "kube-controller-manager",
    "kwok",
    "kube-apiserver",
    "etcd",
)
# Without kube-controller-manager nothing would ever lift the not-ready taint this admission
# plugin puts on every new node, and no pod could schedule.
DISABLED_ADMISSION = "TaintNodesByCondition"
PORTS_FILE = "ports.json"
# Every default controller except node IPAM: kwok gives pods their IPs, and no node needs a
# podCIDR. The cloud controllers skip themselves without --cloud-provider.
CONTROLLERS = "*,-node-ipam-controller"
# Published by the root-CA controller into every namespace once the controllers run: the
# sign that kube-controller-manager has synced its informers and started.
CONTROLLERS_READY_CONFIGMAP = ("default", "kube-root-ca.crt")


class Addon(Protocol):
    """A peer that runs beside the control plane (metrics-server): flags for kwok before kwok
    starts, then its own start once the nodes are Ready. Whoever composes the two passes it in,
    so the cluster never imports a peer."""

    def kwok_args(self, plane: ControlPlane) -> list[str]: ...

    def start(self, plane: ControlPlane) -> None: ...


def aggregation_args(agg: AggregationPki) -> list[str]:
    """kube-apiserver's flags for the aggregation layer (what kubeadm sets)."""
    return [
        f"--requestheader-client-ca-file={agg.front_proxy_ca_cert}",
        f"--requestheader-allowed-names={PROXY_CLIENT_NAME}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={agg.proxy_client_cert}",
        f"--proxy-client-key-file={agg.proxy_client_key}",
    ]


@dataclass(frozen=True)
class Ports:
    apiserver: int
    etcd_client: int
    etcd_peer: int

    @classmethod
    def fixed(cls) -> Ports:
        return cls(defaults.APISERVER_PORT, defaults.ETCD_CLIENT_PORT, defaults.ETCD_PEER_PORT)

    @classmethod
    def free(cls) -> Ports:
        return cls(*processes.free_ports(3))


class ControlPlane:
    def __init__(
        self,
        state_dir: Path | str,
        ports: Ports | None = None,
        die_with_parent: bool = False,
        watch_cache: bool = True,
        addons: Sequence[Addon] = (),
        controllers: bool = False,
    ) -> None:
        """`die_with_parent`: the processes end with this one (fixtures); `up` leaves them.
        `watch_cache=False` serves every watch straight from etcd, so a watch from a compacted
        resourceVersion gets etcd's real 410 Gone (the chaos suite's expired-watch fault).
        `controllers=True` also runs kube-controller-manager (Deployments, ReplicaSets, Jobs,
        PDB status, garbage collection, ...); `ballast sandbox up` and the test fixtures do, the
        benchmarks leave it out so their CPU figures stay the schedulers' own."""
        self.state_dir = Path(state_dir).resolve()
        self.ports = ports or Ports.fixed()
        self.pki = Pki.at(self.state_dir / "pki")
        self.log_dir = self.state_dir / "logs"
        self.pid_dir = self.state_dir / "pids"
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.env_file = self.state_dir / "env"
        self._procs: dict[str, subprocess.Popen] = {}
        self._die_with_parent = die_with_parent
        self._watch_cache = watch_cache
        # e.g. kwok serves kubelet resource metrics and metrics-server runs behind the aggregator.
        self._addons = tuple(addons)
        self._controllers = controllers

    @classmethod
    def attach(cls, state_dir: Path | str) -> ControlPlane:
        """The control plane an earlier `start` (maybe another process's) left in `state_dir`."""
        state_dir = Path(state_dir)
        try:
            ports = json.loads((state_dir / PORTS_FILE).read_text())
            return cls(state_dir, Ports(**ports))
        except (OSError, ValueError, TypeError) as exc:
            raise SandboxError(
                f"no sandbox state in {state_dir} ({exc}): start one with `ballast sandbox up`"
            ) from exc

    # -- what clients need -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def ca_file(self) -> Path:
        return self.pki.ca_cert

    @property
    def admin_cert(self) -> Path:
        return self.pki.admin_cert

    @property
    def admin_key(self) -> Path:
        return self.pki.admin_key

    def api_client(self) -> client.ApiClient:
        """A kubernetes ApiClient authenticated as the admin (group system:masters)."""
        config = client.Configuration()
        config.host = self.base_url
        config.ssl_ca_cert = str(self.ca_file)
        config.cert_file = str(self.admin_cert)
        config.key_file = str(self.admin_key)
        return client.ApiClient(config)

    def session(self) -> requests.Session:
        """A requests session with the admin's client certificate, for raw API calls."""
        s = requests.Session()
        # Otherwise REQUESTS_CA_BUNDLE in the environment silently replaces `verify`, and
        # proxy variables could route loopback calls elsewhere.
        s.trust_env = False
        s.verify = str(self.ca_file)
        s.cert = (str(self.admin_cert), str(self.admin_key))
        return s

    # -- lifecycle ---------------------------------------------------------------------------

    def running(self) -> list[str]:
        return [r.name for r in processes.recorded(self.pid_dir) if processes.alive(r)]

    def start(self, nodes: list[NodeSpec] | None = None) -> float:
        """Starts everything, creates `nodes` and waits until they are Ready; returns seconds."""
        started = time.monotonic()
        if self.running():
            raise AlreadyRunningError(
                f"a sandbox from {self.state_dir} is running ({', '.join(self.running())}): "
                "use it, or stop it first with `ballast sandbox down`"
            )
        names = ["etcd", "kube-apiserver", "kwok"]
        if self._controllers:
            names.append("kube-controller-manager")
        binaries = {n: build.binary(n) for n in names}
        processes.check_port_free(self.ports.apiserver, "kube-apiserver", "--apiserver-port")
        processes.check_port_free(self.ports.etcd_client, "etcd clients", "--etcd-port")
        processes.check_port_free(self.ports.etcd_peer, "etcd peers", "--etcd-peer-port")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        # A fresh cluster every time: state from an earlier run only confuses a demo or test.
        shutil.rmtree(self.state_dir / "etcd", ignore_errors=True)
        service_ip = defaults.SERVICE_CLUSTER_IP_RANGE.split("/")[0].rsplit(".", 1)[0] + ".1"
        ensure_pki(self.pki.dir, defaults.ADMIN_USER, service_ip)
        ensure_aggregation_pki(self.pki)
        self._write_kubeconfig()
        (self.state_dir / PORTS_FILE).write_text(json.dumps(asdict(self.ports)))
        try:
            self.spawn("etcd", [str(binaries["etcd"]), *self._etcd_args()])
            self._wait_etcd()
            apiserver = [str(binaries["kube-apiserver"]), *self._apiserver_args()]
            self.spawn("kube-apiserver", apiserver)
            self._wait_apiserver()
            with self.api_client() as api:
                for ns in SYSTEM_NAMESPACES:
                    ensure_namespace(api, ns)
                if self._controllers:
                    kcm = binaries["kube-controller-manager"]
                    self.spawn("kube-controller-manager", [str(kcm), *self._controller_args()])
                # Its own work folder, so a ~/.kwok/kwok.yaml on the machine changes nothing.
                kwok_env = dict(os.environ, KWOK_WORKDIR=str(self.state_dir / "kwok"))
                self.spawn("kwok", [str(binaries["kwok"]), *self._kwok_args()], kwok_env)
                if nodes:
                    create_nodes(api, nodes)
                    wait_ready(api, [n.name for n in nodes])
                for addon in self._addons:
                    addon.start(self)
                if self._controllers:
                    self._wait_controllers(api)
        except BaseException:
            self.stop()
            raise
        return time.monotonic() - started

    def stop(self, timeout: float = defaults.STOP_TIMEOUT) -> list[str]:
        """Stops every process this state folder recorded; returns the names that were running."""
        recs = {r.name: r for r in processes.recorded(self.pid_dir)}
        order = [n for n in STOP_ORDER if n in recs] + [n for n in recs if n not in STOP_ORDER]
        stopped = [n for n in order if processes.stop(recs[n], timeout)]
        self._procs.clear()
        return stopped

    # -- internals ---------------------------------------------------------------------------

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Starts a process that belongs to this sandbox: logged, recorded, stopped by stop()."""
        self._procs[name] = processes.spawn(
            name, argv, self.log_dir, self.pid_dir, env, self._die_with_parent
        )

    def _check_alive(self, name: str) -> None:
        proc = self._procs[name]
        if proc.poll() is not None:
            log = self.log_dir / f"{name}.log"
            raise StartupError(
                f"{name} exited with code {proc.returncode} while starting; log {log}:\n"
                + processes.log_tail(log)
            )

    def wait_until(self, name: str, ready, timeout: float = defaults.STARTUP_TIMEOUT) -> None:
        """Polls `ready()` until true; fails early with the log's tail if `name` exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive(name)
            try:
                if ready():
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        log = self.log_dir / f"{name}.log"
        raise StartupError(
            f"{name} not ready after {timeout:.0f} s; log {log}:\n" + processes.log_tail(log)
        )

    def restart_apiserver(
        self, sig: int = signal.SIGKILL, before: Callable[[], object] | None = None
    ) -> float:
        """Ends kube-apiserver with `sig` and starts it again with the same flags, calling
        `before()` while it is down; returns the seconds until it answers /readyz again. etcd
        and its data stay, so watches can resume (unless `before` compacted etcd)."""
        started = time.monotonic()
        for rec in processes.recorded(self.pid_dir):
            if rec.name == "kube-apiserver" and processes.alive(rec):
                os.killpg(rec.pid, sig)
                processes.stop(rec, defaults.STOP_TIMEOUT)
        if before is not None:
            before()
        # The port may still be held for a moment after `stop` saw the process go (its main
        # thread exits before the others): starting at once failed with "address in use".
        self.wait_until(
            "etcd", lambda: processes.port_free(self.ports.apiserver), timeout=defaults.STOP_TIMEOUT
        )
        self.spawn("kube-apiserver", [str(build.binary("kube-apiserver")), *self._apiserver_args()])
        self._wait_apiserver()
        return time.monotonic() - started

    def _wait_etcd(self) -> None:
        url = f"http://127.0.0.1:{self.ports.etcd_client}/health"
        with requests.Session() as s:
            s.trust_env = False  # no proxy for loopback
            self.wait_until("etcd", lambda: s.get(url, timeout=1).json().get("health") == "true")

    def _wait_apiserver(self) -> None:
        with self.session() as s:
            url = f"{self.base_url}/readyz"
            self.wait_until("kube-apiserver", lambda: s.get(url, timeout=2).status_code == 200)

    def _etcd_args(self) -> list[str]:
        client_url = f"http://127.0.0.1:{self.ports.etcd_client}"
        peer_url = f"http://127.0.0.1:{self.ports.etcd_peer}"
        return [
            "--name=sandbox",
            f"--data-dir={self.state_dir / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=sandbox={peer_url}",
            # The data is thrown away at the next `up`; fsync would only slow every write.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]

    def _apiserver_args(self) -> list[str]:
        pki = self.pki
        return [
            f"--etcd-servers=http://127.0.0.1:{self.ports.etcd_client}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports.apiserver}",
            f"--cert-dir={pki.dir}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_key}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={defaults.SERVICE_CLUSTER_IP_RANGE}",
            "--authorization-mode=RBAC",
            f"--disable-admission-plugins={DISABLED_ADMISSION}",
            "--profiling=false",
            # Its endpoints reconciler refuses a loopback address and would log every 10 s.
            "--endpoint-reconciler-type=none",
            # The aggregation layer, for metrics-server's metrics.k8s.io (an APIService).
            *aggregation_args(ensure_aggregation_pki(pki)),
        ] + ([] if self._watch_cache else ["--watch-cache=false"])

    def _wait_controllers(self, api: client.ApiClient) -> None:
        core = client.CoreV1Api(api)
        namespace, name = CONTROLLERS_READY_CONFIGMAP

        def published() -> bool:
            try:
                core.read_namespaced_config_map(name, namespace, _request_timeout=2)
            except client.ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            return True

        self.wait_until("kube-controller-manager", published)

    def _controller_args(self) -> list[str]:
        pki = self.pki
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--controllers={CONTROLLERS}",
            # One instance: no Lease to wait for at start.
            "--leader-elect=false",
            # Nothing scrapes it here, and readiness shows in the API (see _wait_controllers).
            "--secure-port=0",
            # The token controller signs legacy service-account token Secrets with the key the
            # apiserver verifies; the root-CA controller publishes the CA as kube-root-ca.crt.
            f"--service-account-private-key-file={pki.sa_key}",
            f"--root-ca-file={pki.ca_cert}",
            f"--cluster-signing-cert-file={pki.ca_cert}",
            f"--cluster-signing-key-file={pki.ca_key}",
            f"--service-cluster-ip-range={defaults.SERVICE_CLUSTER_IP_RANGE}",
            "--allocate-node-cidrs=false",
            # kwok's nodes are never really down; on a loaded 2-core machine a late heartbeat
            # must not make them NotReady (taints, pods marked not ready, NoExecute evictions).
            # Nodes a test makes by hand, without a heartbeat, stay Ready as long.
            "--node-monitor-grace-period=5m",
            "--profiling=false",
        ]

    def _kwok_args(self) -> list[str]:
        key, value = defaults.KWOK_NODE_ANNOTATION
        return [
            f"--kubeconfig={self.kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={key}={value}",
            f"--cidr={defaults.POD_CIDR}",
            # Heartbeats through Leases, renewed every quarter of this, as kubelets do: the
            # node lifecycle controller reads them, and a Lease renewal is one small write that
            # a burst of pod status patches does not hold up.
            "--node-lease-duration-seconds=40",
        ] + [arg for addon in self._addons for arg in addon.kwok_args(self)]

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "ballast-sandbox",
                    "cluster": {
                        "server": self.base_url,
                        "certificate-authority": str(self.ca_file),
                    },
                }
            ],
            "users": [
                {
                    "name": defaults.ADMIN_USER,
                    "user": {
                        "client-certificate": str(self.admin_cert),
                        "client-key": str(self.admin_key),
                    },
                }
            ],
            "contexts": [
                {
                    "name": "ballast-sandbox",
                    "context": {"cluster": "ballast-sandbox", "user": defaults.ADMIN_USER},
                }
            ],
            "current-context": "ballast-sandbox",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        bin_dir = build.bin_dir()
        self.env_file.write_text(
            f"export KUBECONFIG={self.kubeconfig}\nexport PATH={bin_dir}:$PATH\n"
        )
