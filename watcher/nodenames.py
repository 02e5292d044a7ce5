"""Map the node names a metrics source reports to Kubernetes node names.

Prometheus labels often carry `10.0.0.5:9100` or `node-1:9100`; the port is stripped and, when a
Kubernetes client is at hand, an IP address is mapped to the Node whose addresses contain it.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


def strip_port(raw: str) -> str:
    """`host:port` -> `host`; `[v6]:port` -> `v6`; a bare IPv6 address stays whole."""
    raw = raw.strip()
    if raw.startswith("["):
        end = raw.find("]")
        return raw[1:end] if end > 0 else raw
    if raw.count(":") == 1:
        host, _, port = raw.partition(":")
        if port.isdigit():
            return host
    return raw


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Directory:
    """The cluster's node names and address -> name map; `names` None while unknown."""

    names: frozenset[str] | None = None
    addresses: dict[str, str] = field(default_factory=dict)


class KubeNodes:
    """A Directory from the Node objects, refreshed at most every `refresh` seconds.

    A failed refresh keeps the previous view; before the first success nothing is known, and
    then names pass unchecked rather than every sample being rejected.
    """

    def __init__(self, api_client: Any, refresh: float, timeout: float) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.refresh = refresh
        self.timeout = timeout
        self.directory = Directory()
        self._fetched: float | None = None
        self._lock = threading.Lock()

    def update(self) -> None:
        with self._lock:
            if self._fetched is not None and time.monotonic() - self._fetched < self.refresh:
                return
            self._fetched = time.monotonic()
            try:
                nodes = self.core.list_node(_request_timeout=self.timeout).items
            except Exception as exc:  # keep the previous view; the poll goes on
                log.warning("listing nodes for name mapping failed: %s", exc)
                return
            self.directory = Directory(
                names=frozenset(n.metadata.name for n in nodes),
                addresses={
                    a.address: n.metadata.name
                    for n in nodes
                    if n.status is not None
                    for a in (n.status.addresses or [])
                },
            )


class NodeNamer:
    def __init__(self, kube: KubeNodes | None = None, directory: Directory | None = None) -> None:
        self.kube = kube
        self.static = directory or Directory()

    def refresh(self) -> None:
        if self.kube is not None:
            self.kube.update()

    def name(self, raw: str) -> str | None:
        """The Kubernetes node name for a raw label value, or None for an unknown node."""
        host = strip_port(raw)
        directory = self.kube.directory if self.kube is not None else self.static
        if directory.names is None:
            return host
        if host in directory.names:
            return host
        return directory.addresses.get(host)
