"""One real node beside the kwok nodes: a kubelet built from the pinned Kubernetes module, with
containerd and runc from Debian's packages and the bridge CNI plugin.

Pods on it get addresses on a bridge this module makes (`BRIDGE`, `SUBNET`), inside network
namespaces containerd's CRI makes for each pod; their one route leads to the Service range
through the host, nothing is routed off the machine (no default route, no masquerading to the
outside). The kubelet reaches the apiserver on loopback with the sandbox's admin kubeconfig.
Services work as in a cluster (servicenet.py): kube-proxy turns Service IPs into endpoints,
CoreDNS answers `cluster.local`, and the `kubernetes` Service leads to the apiserver through a
relay on the bridge's gateway. Images come from `make image` (podman's store), imported into
containerd's `k8s.io` namespace, so nothing is pulled.

`RealNode(plane, state_dir).start()` starts containerd and the kubelet, waits for the Node to be
Ready and starts the Services' parts; `stop()` deletes the node's pods, stops everything and
removes what it left on the machine (leftovers.py): rules, bridge, namespaces, cgroups.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import yaml
from kubernetes import client

from sandbox.cluster import build, defaults, leftovers, processes, servicenet, versions
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.errors import SandboxError, StartupError

KUBELET_DIR = Path(__file__).resolve().parent / "kubelet"
NODE_NAME = "real-node-1"
BRIDGE = "ballast-rn0"
SUBNET = "10.250.0.0/24"
PAUSE_IMAGE = "localhost/ballast-pause:1"
READY_TIMEOUT = 120.0
COMMAND_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
# The CNI network's name: CNI keys its result cache on it (leftovers.forget_networks).
NETWORK = "ballast-realnode"
STATE_FILE = "realnode.json"


def kubelet_binary() -> Path:
    return build.bin_dir() / "kubelet"


def kubelet_go_mod_mismatches() -> list[str]:
    go_mod = (KUBELET_DIR / "go.mod").read_text()
    return versions.go_mod_mismatches(
        go_mod, {"k8s.io/kubernetes": f"v{versions.KUBERNETES_VERSION}"}
    )


def ensure_kubelet(say: build.Printer = print) -> Path:
    """The kubelet and kube-proxy from their wrapper module (sandbox/cluster/kubelet:
    components/go.mod's pins and replaces, tidied for their own imports; kube-proxy's main in
    its kube-proxy/ folder), built when missing, in one `go build`.

    A Go build: run it alone, never beside another (2 cores)."""
    target = kubelet_binary()
    todo = [p for p in (target, servicenet.kube_proxy_binary()) if not p.is_file()]
    if not todo:
        return target
    problems = kubelet_go_mod_mismatches()
    if problems:
        raise SandboxError(
            f"{KUBELET_DIR / 'go.mod'} disagrees with sandbox/versions.py: {'; '.join(problems)}; "
            "copy components/go.mod's pins and replaces into it and run `go mod tidy` there"
        )
    go = build.find_go()
    target.parent.mkdir(parents=True, exist_ok=True)
    names = " and ".join(p.name for p in todo)
    say(f"building {names} (Kubernetes {versions.KUBERNETES_VERSION})")
    packages = {"kubelet": ".", "kube-proxy": servicenet.KUBE_PROXY_PACKAGE}
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-kubelet-") as tmp:
        cmd = [go, "build", "-buildvcs=false", "-ldflags", build._version_ldflags()]
        cmd += ["-o", f"{tmp}/"] + [packages[p.name] for p in todo]
        log = target.parent / "build-kubelet.log"
        build._run(cmd, KUBELET_DIR, dict(os.environ), log, names, say)
        for path in todo:
            (Path(tmp) / path.name).replace(path)
    return target


def ensure_binaries(say: build.Printer = print) -> None:
    """Everything the real node runs that the sandbox builds: the kubelet and kube-proxy, then
    CoreDNS (one Go build after the other)."""
    ensure_kubelet(say)
    servicenet.ensure_coredns(say)


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if check and done.returncode != 0:
        raise SandboxError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return done


class RealNode:
    def __init__(
        self,
        plane: ControlPlane,
        state_dir: Path,
        name: str = NODE_NAME,
        die_with_parent: bool = False,
    ) -> None:
        self.plane = plane
        self.name = name
        self.state_dir = state_dir.resolve()
        self.log_dir = self.state_dir / "logs"
        self.pid_dir = self.state_dir / "pids"
        # A unix socket's path must stay under 108 bytes: containerd's lives in /run, under a
        # name `ballast sandbox down` finds again from the state folder.
        digest = hashlib.sha256(str(self.state_dir).encode()).hexdigest()[:12]
        self.run_dir = Path("/run") / f"ballast-realnode-{digest}"
        self.socket = self.run_dir / "containerd.sock"
        self.die_with_parent = die_with_parent
        net = ipaddress.ip_network(SUBNET)
        self.gateway = str(net.network_address + 1)
        self.prefix = net.prefixlen
        self.services = servicenet.ServiceNet(
            plane, name, self.gateway, SUBNET, self.state_dir, self.log_dir, self.pid_dir,
            die_with_parent,
        )  # fmt: skip

    # -- files ------------------------------------------------------------------------------

    def _write_containerd_config(self) -> Path:
        cni_dir = self.state_dir / "cni"
        cni_dir.mkdir(parents=True, exist_ok=True)
        conflist = {
            "cniVersion": "0.4.0",
            "name": NETWORK,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    # Pod traffic stays on the machine: no NAT to the outside.
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": SUBNET, "gateway": self.gateway}]],
                        # Service IPs through the host, where kube-proxy's rules turn them into
                        # endpoints; no default route: any other address is unreachable.
                        "routes": [{"dst": defaults.SERVICE_CLUSTER_IP_RANGE}],
                        "dataDir": str(self.state_dir / "cni-ipam"),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }
        (cni_dir / "10-ballast-realnode.conflist").write_text(json.dumps(conflist, indent=1))
        config = f"""version = 2
root = "{self.state_dir / "containerd"}"
state = "{self.run_dir / "state"}"
[grpc]
  address = "{self.socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # The kubelet asks for oom_score_adj -998 on the pod sandbox; lowering it needs
  # CAP_SYS_RESOURCE, which root lacks on this project's machines (runc's init then dies:
  # "can't get final child's PID from pipe"). Kept at containerd's own instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni_dir}"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
"""
        path = self.state_dir / "containerd.toml"
        path.write_text(config)
        return path

    def _write_kubelet_config(self) -> Path:
        healthz = processes.free_port()
        self.healthz_port = healthz
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "failSwapOn": False,
            # This machine has cgroup v1 (1.34 still runs on it, with a warning).
            "failCgroupV1": False,
            "address": "127.0.0.1",
            "port": processes.free_port(),
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": healthz,
            # Only the apiserver's admin talks to it (logs, exec): no webhook to a delegate.
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": False},
                "x509": {"clientCAFile": str(self.plane.ca_file)},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "podCIDR": SUBNET,
            # Pods resolve through the sandbox's CoreDNS only (servicenet.py): no search path
            # or nameserver of the machine's own reaches them, so no query leaves it.
            "clusterDNS": [self.services.dns],
            "clusterDomain": servicenet.CLUSTER_DOMAIN,
            "resolvConf": "",
            # The kubelet's KUBE-FIREWALL and canary chains would stay on the machine after it
            # stops; kube-proxy makes the one rule that matters and the sandbox removes it.
            "makeIPTablesUtilChains": False,
            # Containers' logs in the state folder, not /var/log/pods.
            "podLogsDir": str(self.state_dir / "pod-logs"),
            "protectKernelDefaults": False,
            "serializeImagePulls": False,
            "registerNode": True,
            # A shared machine's disk: never evict this node's few pods for another's files.
            "evictionHard": {"memory.available": "100Mi"},
            "imageGCHighThresholdPercent": 100,
        }
        path = self.state_dir / "kubelet.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    # -- life -------------------------------------------------------------------------------

    def start(self, images: list[Path] | None = None) -> float:
        """Starts containerd, imports `images` (archives from `podman save`), starts the kubelet
        and waits for the Node to be Ready; returns the seconds it took."""
        started = time.monotonic()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # Whether another kubelet made its QoS cgroups already: then `stop` leaves them.
        state = {"kube_cgroups_before": bool(leftovers.kube_cgroups())}
        (self.state_dir / STATE_FILE).write_text(json.dumps(state))
        self._make_bridge()
        containerd = self._write_containerd_config()
        processes.spawn(
            "containerd",
            ["containerd", "--config", str(containerd)],
            self.log_dir,
            self.pid_dir,
            die_with_parent=self.die_with_parent,
        )
        self._wait(lambda: self.ctr("version", check=False).returncode == 0, "containerd", 60.0)
        for archive in images or []:
            self.ctr("images", "import", "--no-unpack", str(archive))
        kubelet = self._write_kubelet_config()
        processes.spawn(
            "kubelet",
            [
                str(kubelet_binary()),
                f"--config={kubelet}",
                f"--kubeconfig={self.plane.kubeconfig}",
                f"--root-dir={self.state_dir / 'kubelet'}",
                f"--hostname-override={self.name}",
                f"--node-ip={self.gateway}",
                "--v=1",
            ],
            self.log_dir,
            self.pid_dir,
            die_with_parent=self.die_with_parent,
        )
        self._wait(self._node_ready, f"node {self.name} Ready", READY_TIMEOUT)
        self.services.start()
        return time.monotonic() - started

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run(["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args], check)

    def _make_bridge(self) -> None:
        # Made here, with the gateway address, so the kubelet's --node-ip exists before the
        # first pod (the bridge plugin takes over a bridge that is there).
        if _run(["ip", "link", "show", BRIDGE], check=False).returncode != 0:
            _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "addr", "replace", f"{self.gateway}/{self.prefix}", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])

    def _node_ready(self) -> bool:
        with self.plane.api_client() as api:
            try:
                node = client.CoreV1Api(api).read_node(self.name, _request_timeout=10)
            except client.ApiException:
                return False
        return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])

    def _wait(self, condition, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._exited():
                break
            try:
                if condition():
                    return
            except Exception:  # noqa: BLE001 -- not up yet
                pass
            time.sleep(0.5)
        tails = "\n".join(
            f"--- {name}\n{processes.log_tail(self.log_dir / f'{name}.log', 30)}"
            for name in ("containerd", "kubelet")
            if (self.log_dir / f"{name}.log").exists()
        )
        raise StartupError(f"{what} not there after {timeout:.0f} s\n{tails}")

    def _exited(self) -> bool:
        return any(not processes.alive(rec) for rec in processes.recorded(self.pid_dir))

    def stop(self, drain: bool = True) -> None:
        """Deletes the node's pods (the kubelet tears their sandboxes down, CNI releasing the
        addresses), then stops the kubelet, kills with containerd whatever still runs, stops
        the rest and removes what they left (leftovers.py). Without the apiserver
        (`drain=False`) the pods' containers are killed with containerd."""
        try:
            if drain:
                self._drain()
        finally:
            recorded = processes.recorded(self.pid_dir)
            for rec in recorded:
                if rec.name == "kubelet":  # first: it would start the pods again
                    processes.stop(rec, defaults.STOP_TIMEOUT)
            if any(r.name == "containerd" and processes.alive(r) for r in recorded):
                pods = leftovers.sandboxes(self.ctr)
                leftovers.kill_containers(self.ctr)
                leftovers.forget_networks(NETWORK, pods)
            for rec in processes.recorded(self.pid_dir):
                processes.stop(rec, defaults.STOP_TIMEOUT)
            self.services.stop(api_up=drain)
            leftovers.kill_shims(self.socket)
            _run(["ip", "link", "del", BRIDGE], check=False)
            leftovers.remove_log_links(self.state_dir)
            state = self.state_dir / STATE_FILE
            if state.is_file():
                if not json.loads(state.read_text())["kube_cgroups_before"]:
                    leftovers.remove_cgroups()
                state.unlink()
            for mount in leftovers.mounts_under(self.state_dir, self.run_dir):
                _run(["umount", "-l", mount], check=False)
            shutil.rmtree(self.run_dir, ignore_errors=True)
            if drain:
                with self.plane.api_client() as api:
                    try:
                        client.CoreV1Api(api).delete_node(self.name, _request_timeout=10)
                    except client.ApiException:
                        pass

    def _drain(self) -> None:
        with self.plane.api_client() as api:
            core = client.CoreV1Api(api)
            # Cordoned first, so that a controller's replacement pod is not bound here again.
            try:
                core.patch_node(self.name, {"spec": {"unschedulable": True}}, _request_timeout=10)
            except client.ApiException:
                pass
            selector = f"spec.nodeName={self.name}"
            for pod in core.list_pod_for_all_namespaces(
                field_selector=selector, _request_timeout=10
            ).items:
                core.delete_namespaced_pod(
                    pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0,
                    _request_timeout=10,
                )  # fmt: skip
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline and self.ctr("tasks", "ls", "-q", check=False).stdout:
            time.sleep(0.5)


# What `make image` builds, imported by `ballast sandbox up --real-node` when podman has it.
LOCAL_IMAGES = (
    PAUSE_IMAGE,
    "localhost/ballast:0.1.0",
    "localhost/ballast-redis:bookworm",
    "localhost/ballast-prometheus:bookworm",
    "localhost/ballast-node-exporter:bookworm",
)


def save_images(images: Iterable[str], folder: Path) -> list[Path]:
    """`podman save` of each image podman holds, as archives for `RealNode.start`."""
    folder.mkdir(parents=True, exist_ok=True)
    archives = []
    for image in images:
        if _run(["podman", "image", "exists", image], check=False).returncode != 0:
            continue
        archive = folder / (image.rsplit("/", 1)[-1].replace(":", "_") + ".tar")
        _run(["podman", "save", "--format", "oci-archive", "-o", str(archive), image])
        archives.append(archive)
    return archives


def up(plane: ControlPlane, state_dir: Path, say: build.Printer = print) -> RealNode:
    """`ballast sandbox up --real-node`: the kubelet, kube-proxy and CoreDNS (built when
    missing) and containerd, with `make image`'s images imported."""
    ensure_binaries(say)
    folder = state_dir / "realnode"
    archives = save_images(LOCAL_IMAGES, folder / "images")
    if not archives or archives[0].name != "ballast-pause_1.tar":
        raise SandboxError(f"podman has no {PAUSE_IMAGE}: build it with `make image`")
    node = RealNode(plane, folder)
    try:
        seconds = node.start(archives)
    except BaseException:
        node.stop()  # a half-started node leaves nothing running, no rule, no bridge
        raise
    for archive in archives:
        archive.unlink()
    say(f"real node {node.name} Ready in {seconds:.1f} s ({len(archives)} images imported)")
    return node


def down(plane: ControlPlane, state_dir: Path) -> bool:
    """Stops the real node `up` started in this state folder; False when there was none."""
    folder = state_dir / "realnode"
    node = RealNode(plane, folder)
    if not processes.recorded(node.pid_dir):
        return False
    node.stop(drain=bool(plane.running()))
    return True


if __name__ == "__main__":  # `make kubelet-build`
    ensure_binaries()
