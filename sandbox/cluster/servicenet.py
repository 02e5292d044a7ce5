"""Services for the real node's pods: kube-proxy, cluster DNS and the apiserver at an address
pods reach, so that a pod finds the apiserver and other pods as it would in a cluster.

- The apiserver keeps listening on 127.0.0.1 only (a kwok-only sandbox is unchanged). A relay
  (sandbox/cluster/relay.py, a process of its own) listens on the bridge's gateway at the
  apiserver's port, and the `kubernetes` Service's EndpointSlice, which the sandbox writes
  itself (its apiserver runs with `--endpoint-reconciler-type=none`), names that address. Pods
  dial the Service's IP, the first of defaults.SERVICE_CLUSTER_IP_RANGE, which the serving
  certificate carries (certs.py); the relay passes TLS through.
- kube-proxy, built from the pinned Kubernetes module with the kubelet, runs in iptables mode on
  the host for this node: Service IPs to endpoints, NodePorts on the gateway address only, no
  localhost NodePorts (so no route_localnet), the host's conntrack settings left as they are.
  On stop, `kube-proxy --cleanup` removes its chains; the KUBE-FIREWALL chain it also makes (a
  copy of the kubelet's, which cleanup leaves for the kubelet) goes too unless it was there
  before.
- CoreDNS, built from the pinned release with only the plugins named in coredns/main.go, answers
  `cluster.local` (Services and pods, from the apiserver) on the gateway address, port 53; the
  kubelet gives pods that address as their nameserver. No other zone is answered and nothing is
  forwarded: no query leaves the machine.

`ServiceNet(...).start()` after the node is Ready; `stop()` undoes it. Its processes are recorded
in the node's pid folder, so `RealNode.stop` ends them with the kubelet and containerd.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import requests
from kubernetes import client

from sandbox.cluster import build, defaults, processes, versions
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.errors import SandboxError, StartupError

CLUSTER_DOMAIN = "cluster.local"
COREDNS_DIR = Path(__file__).resolve().parent / "coredns"
# The kubelet's wrapper module builds kube-proxy too (its own package there): one go.mod, one
# set of pins, and the build cache the kubelet warmed.
KUBE_PROXY_PACKAGE = "./kube-proxy"
ENDPOINT_MANAGER = "ballast-sandbox"
STATE_FILE = "servicenet.json"
READY_TIMEOUT = 120.0
COMMAND_TIMEOUT = 60.0
FIREWALL_CHAIN = "KUBE-FIREWALL"


def kube_proxy_binary() -> Path:
    return build.bin_dir() / "kube-proxy"


def coredns_binary() -> Path:
    return build.bin_dir() / versions.coredns_binary()


def coredns_go_mod_mismatches() -> list[str]:
    return versions.coredns_go_mod_mismatches((COREDNS_DIR / "go.mod").read_text())


def ensure_coredns(say: build.Printer = print) -> Path:
    """CoreDNS from its wrapper module (sandbox/cluster/coredns), built when missing. A Go
    build: run it alone, never beside another (2 cores)."""
    target = coredns_binary()
    if build.cached(target, lambda _: None):
        return target
    problems = coredns_go_mod_mismatches()
    if problems:
        raise SandboxError(
            f"{COREDNS_DIR / 'go.mod'} disagrees with sandbox/cluster/versions.py: "
            f"{'; '.join(problems)}; in {COREDNS_DIR} run "
            "`go get github.com/coredns/coredns@vX.Y.Z && go mod tidy`, or change the pin"
        )
    say(f"building CoreDNS {versions.COREDNS_VERSION}")
    return build.build_command(target, COREDNS_DIR, ".", target.name, "CoreDNS", say)


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if check and done.returncode != 0:
        raise SandboxError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return done


# kube-proxy makes KUBE-FIREWALL in both families (empty in IPv6) and its cleanup leaves it.
FAMILIES = ("iptables", "ip6tables")


def _firewall_chains() -> list[str]:
    """The families (iptables, ip6tables) whose filter table has KUBE-FIREWALL now."""
    return [
        family
        for family in FAMILIES
        if f":{FIREWALL_CHAIN} " in _run([f"{family}-save", "-t", "filter"]).stdout
    ]


class ServiceNet:
    def __init__(
        self,
        plane: ControlPlane,
        node_name: str,
        gateway: str,
        pod_cidr: str,
        state_dir: Path,
        log_dir: Path,
        pid_dir: Path,
        die_with_parent: bool = False,
    ) -> None:
        self.plane = plane
        self.node_name = node_name
        self.gateway = gateway
        self.pod_cidr = pod_cidr
        self.state_dir = state_dir
        self.log_dir = log_dir
        self.pid_dir = pid_dir
        self.die_with_parent = die_with_parent

    @property
    def dns(self) -> str:
        """The nameserver pods get (the kubelet's clusterDNS)."""
        return self.gateway

    def start(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        # Where someone else's kubelet or kube-proxy made KUBE-FIREWALL already, it stays.
        state = {"firewall_chain_before": _firewall_chains()}
        (self.state_dir / STATE_FILE).write_text(json.dumps(state))
        port = self.plane.ports.apiserver
        self._spawn(
            "relay",
            [sys.executable, "-m", "sandbox.cluster.relay", self.gateway, str(port), str(port)],
            env=dict(os.environ, PYTHONPATH=str(defaults.REPO_ROOT)),
        )
        self._write_endpoints(port)
        ready_port = processes.free_port()
        self._spawn(
            "coredns",
            [str(coredns_binary()), "-conf", str(self._write_corefile(ready_port))],
        )
        self._wait("coredns", f"http://127.0.0.1:{ready_port}/ready")
        healthz = processes.free_port()
        self._spawn("kube-proxy", [str(kube_proxy_binary()), *self._kube_proxy_args(healthz)])
        self._wait("kube-proxy", f"http://127.0.0.1:{healthz}/healthz")

    def stop(self, api_up: bool = True) -> None:
        """Ends the three processes, removes kube-proxy's rules and, with the apiserver up,
        the `kubernetes` EndpointSlice."""
        for rec in processes.recorded(self.pid_dir):
            if rec.name in ("kube-proxy", "coredns", "relay"):
                processes.stop(rec, defaults.STOP_TIMEOUT)
        state_file = self.state_dir / STATE_FILE
        if state_file.is_file():
            self.cleanup_rules(json.loads(state_file.read_text())["firewall_chain_before"])
            state_file.unlink()
        if api_up:
            with self.plane.api_client() as api:
                try:
                    client.DiscoveryV1Api(api).delete_namespaced_endpoint_slice(
                        "kubernetes", "default", _request_timeout=defaults.REQUEST_TIMEOUT
                    )
                except client.ApiException:
                    pass

    def cleanup_rules(self, firewall_chain_before: list[str]) -> None:
        # kube-proxy's own cleanup: its chains and jumps in both families (it also tries IPVS and
        # nftables, whose absence it reports; its exit code says nothing about iptables alone).
        with (self.log_dir / "kube-proxy-cleanup.log").open("w") as log:
            if kube_proxy_binary().is_file():
                subprocess.run(
                    [str(kube_proxy_binary()), "--cleanup", "--proxy-mode=iptables"],
                    stdout=log, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT,
                )  # fmt: skip
        for family in _firewall_chains():
            if family in firewall_chain_before:
                continue
            for hook in ("INPUT", "OUTPUT"):
                unhook = [family, "-D", hook, "-j", FIREWALL_CHAIN]
                while _run(unhook, check=False).returncode == 0:
                    pass
            _run([family, "-F", FIREWALL_CHAIN], check=False)
            _run([family, "-X", FIREWALL_CHAIN], check=False)

    # -- pieces --------------------------------------------------------------------------------

    def _write_endpoints(self, port: int) -> None:
        slice_ = client.V1EndpointSlice(
            metadata=client.V1ObjectMeta(
                name="kubernetes",
                labels={
                    "kubernetes.io/service-name": "kubernetes",
                    # Not the EndpointSlice controller's: it leaves this one alone.
                    "endpointslice.kubernetes.io/managed-by": ENDPOINT_MANAGER,
                },
            ),
            address_type="IPv4",
            endpoints=[
                client.V1Endpoint(
                    addresses=[self.gateway], conditions=client.V1EndpointConditions(ready=True)
                )
            ],
            ports=[client.DiscoveryV1EndpointPort(name="https", port=port, protocol="TCP")],
        )
        with self.plane.api_client() as api:
            discovery = client.DiscoveryV1Api(api)
            try:
                discovery.delete_namespaced_endpoint_slice(
                    "kubernetes", "default", _request_timeout=defaults.REQUEST_TIMEOUT
                )
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
            discovery.create_namespaced_endpoint_slice(
                "default", slice_, _request_timeout=defaults.REQUEST_TIMEOUT
            )

    def _write_corefile(self, ready_port: int) -> Path:
        zones = f"{CLUSTER_DOMAIN} in-addr.arpa ip6.arpa"
        corefile = f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {self.gateway}
    errors
    ready 127.0.0.1:{ready_port}
    kubernetes {zones} {{
        kubeconfig {self.plane.kubeconfig} ballast-sandbox
        pods insecure
    }}
    cache 30
}}
"""
        path = self.state_dir / "Corefile"
        path.write_text(corefile)
        return path

    def _kube_proxy_args(self, healthz: int) -> list[str]:
        return [
            f"--kubeconfig={self.plane.kubeconfig}",
            "--proxy-mode=iptables",
            f"--hostname-override={self.node_name}",
            f"--bind-address={self.gateway}",
            f"--cluster-cidr={self.pod_cidr}",
            # NodePorts on the bridge's address only, never on the machine's own interfaces,
            # and none on localhost (which would set route_localnet for the whole host).
            f"--nodeport-addresses={self.gateway}/32",
            "--iptables-localhost-nodeports=false",
            f"--healthz-bind-address=127.0.0.1:{healthz}",
            f"--metrics-bind-address=127.0.0.1:{processes.free_port()}",
            # A shared machine's conntrack table and timeouts stay as they are.
            "--conntrack-max-per-core=0",
            "--conntrack-tcp-timeout-established=0",
            "--conntrack-tcp-timeout-close-wait=0",
            "--v=1",
        ]

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        processes.spawn(
            name, argv, self.log_dir, self.pid_dir, env, die_with_parent=self.die_with_parent
        )

    def _wait(self, name: str, url: str, timeout: float = READY_TIMEOUT) -> None:
        """Until `url` answers 200; fails with its last answer and the log's tail."""
        deadline = time.monotonic() + timeout
        answer = "no answer yet"
        while time.monotonic() < deadline:
            rec = next((r for r in processes.recorded(self.pid_dir) if r.name == name), None)
            if rec is None or not processes.alive(rec):
                answer = "exited"
                break
            answer = _probe(url)
            if answer == "200":
                return
            time.sleep(0.3)
        log = self.log_dir / f"{name}.log"
        raise StartupError(
            f"{name} not ready after {timeout:.0f} s ({url}: {answer}); log {log}:\n"
            + processes.log_tail(log, 30)
        )


def _probe(url: str) -> str:
    """The status code `url` answers, or why there was none."""
    with requests.Session() as s:
        s.trust_env = False  # no proxy for loopback
        try:
            answer = s.get(url, timeout=2)
        except requests.RequestException as exc:
            return type(exc).__name__
        return str(answer.status_code) + ("" if answer.ok else f" {answer.text[:200]}")
