"""What the real node (realnode.py) leaves on the machine when its pods are not torn down one by
one through the kubelet, found and removed so that `stop` restores the machine.

A pod the kubelet stops has its network torn down by CNI (the veth pair, the address, the
result cache in /var/lib/cni) and its network namespace removed by containerd. When the kubelet
is gone first (a drain that timed out, a controller that made a new pod meanwhile, or `down`
without the apiserver), the containers keep running under their shims and all of that stays.
Everything here is found through this node's own containerd socket, network name or state
folder, so another node's or podman's things are never touched. The kubelet's QoS cgroups
(`kubepods`) go only if they were not there before the node started.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

CNI_CACHE = Path("/var/lib/cni/results")
CONTAINER_LOG_LINKS = Path("/var/log/containers")
CGROUP_ROOT = Path("/sys/fs/cgroup")
KUBE_CGROUP = "kubepods"
KILL_TIMEOUT = 20.0

Ctr = Callable[..., subprocess.CompletedProcess[str]]


def kube_cgroups() -> list[Path]:
    """The kubelet's `kubepods` folder in each cgroup v1 hierarchy (or the v2 root)."""
    return sorted(CGROUP_ROOT.glob(f"*/{KUBE_CGROUP}")) + sorted(CGROUP_ROOT.glob(KUBE_CGROUP))


def sandboxes(ctr: Ctr) -> dict[str, str]:
    """This node's pod sandboxes: container id -> network namespace path."""
    found = {}
    for cid in ctr("containers", "ls", "-q", check=False).stdout.split():
        info = ctr("containers", "info", cid, check=False)
        try:
            doc = json.loads(info.stdout)
        except ValueError:
            continue
        if (doc.get("Labels") or {}).get("io.cri-containerd.kind") != "sandbox":
            continue
        spaces = (doc.get("Spec") or {}).get("linux", {}).get("namespaces", [])
        found[cid] = next((s.get("path", "") for s in spaces if s.get("type") == "network"), "")
    return found


def kill_containers(ctr: Ctr) -> None:
    """SIGKILL every task of this node's containerd and waits until they are gone."""
    for cid in ctr("tasks", "ls", "-q", check=False).stdout.split():
        ctr("tasks", "kill", "--signal", "SIGKILL", cid, check=False)
    deadline = time.monotonic() + KILL_TIMEOUT
    while time.monotonic() < deadline:
        listed = ctr("tasks", "ls", check=False).stdout.splitlines()[1:]
        if not [line for line in listed if "RUNNING" in line]:
            break
        time.sleep(0.3)
    for cid in ctr("tasks", "ls", "-q", check=False).stdout.split():
        ctr("tasks", "delete", "--force", cid, check=False)


def forget_networks(network: str, pods: dict[str, str]) -> None:
    """Removes what CNI would have on each sandbox's teardown: its network namespace (the veth
    pair goes with it) and its cached results under `network`'s name."""
    for cid, netns in pods.items():
        if netns.startswith(("/var/run/netns/", "/run/netns/")):
            name = Path(netns).name
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        for cached in (f"{network}-{cid}-eth0", f"cni-loopback-{cid}-lo"):
            (CNI_CACHE / cached).unlink(missing_ok=True)


def remove_log_links(state_dir: Path) -> None:
    """The kubelet links each container's log from /var/log/containers; ours point into
    `state_dir` (its podLogsDir)."""
    for link in CONTAINER_LOG_LINKS.glob("*.log"):
        try:
            if os.readlink(link).startswith(f"{state_dir}/"):
                link.unlink(missing_ok=True)
        except OSError:
            pass


def remove_cgroups() -> None:
    """Removes the empty `kubepods` trees, deepest first (a cgroup with tasks stays)."""
    for top in kube_cgroups():
        for folder in sorted(
            (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
        ):
            try:
                folder.rmdir()
            except OSError:
                pass
        try:
            top.rmdir()
        except OSError:
            pass


def kill_shims(socket: Path) -> None:
    """The runc shims outlive containerd by design; those of this node name its socket."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"containerd-shim-runc-v2")
            and str(socket).encode() in b" ".join(argv)
        ):
            try:
                os.kill(int(proc.name), 9)
            except OSError:
                pass


def mounts_under(*roots: Path) -> list[str]:
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        target = line.split()[1]
        if any(target.startswith(str(root)) for root in roots):
            found.append(target)
    return sorted(found, key=len, reverse=True)  # deepest first
