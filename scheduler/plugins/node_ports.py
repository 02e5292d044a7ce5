"""NodePorts: a node cannot take a pod whose host port (protocol, IP, port) it already serves.

The ports in use are kept per node by NodeInfo (placed pods, assumed ones included), so a
filter call is a few dictionary lookups. Conflicts follow upstream's HostPortInfo: hostIP
"0.0.0.0" (or empty) binds every address, so it conflicts with the same protocol and port on
any IP, and a specific IP conflicts with itself and with "0.0.0.0".
"""

from __future__ import annotations

from scheduler.framework import CycleState, HostPort, NodeInfo, PodInfo, Snapshot, Status

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


def conflicts(wanted: tuple[HostPort, ...], used: dict[HostPort, int]) -> bool:
    """Whether any of `wanted` collides with the ports in `used`."""
    if not used:
        return False
    for protocol, ip, port in wanted:
        if ip == ANY_IP:
            if any(p == port and proto == protocol for proto, _, p in used):
                return True
        elif (protocol, ip, port) in used or (protocol, ANY_IP, port) in used:
            return True
    return False


class Plugin:
    name = NAME
    pre_filter_reads_pods = False  # the pod and cluster objects only: trials reuse it

    def __init__(self, args: None = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> bool:
        return bool(pod.host_ports)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo, snap: Snapshot) -> Status:
        if conflicts(pod.host_ports, node.used_ports):
            return Status.reject(REASON)
        return Status.success()
