"""Map the node names a metrics source reports to Kubernetes node names.

Prometheus labels often carry `10.0.0.5:9100` or `node-1:9100`; the port is stripped and, when a
Kubernetes client is at hand, an IP address is mapped to the Node whose addresses contain it.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
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


class KubeNodes:
    """The cluster's node names and address -> name map, refreshed at most every `refresh` s.

    A failed refresh keeps the previous view; before the first success nothing is known, and
    then names pass unchecked rather than every sample being rejected.
    """

    def __init__(self, api_client: Any, refresh: float, timeout: float) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.refresh = refresh
        self.timeout = timeout
        self.names: frozenset[str] | None = None
        self.addresses: dict[str, str] = {}
        self._fetched = 0.0
        self._lock = threading.Lock()

    def update(self) -> None:
        with self._lock:
            if self.names is not None and time.monotonic() - self._fetched < self.refresh:
                return
            try:
                nodes = self.core.list_node(_request_timeout=self.timeout).items
            except Exception as exc:  # keep the previous view; the poll goes on
                log.warning("listing nodes for name mapping failed: %s", exc)
                self._fetched = time.monotonic()
                return
            self.names = frozenset(n.metadata.name for n in nodes)
            self.addresses = {
                a.address: n.metadata.name
                for n in nodes
                for a in (n.status.addresses or [])
                if n.status is not None
            }
            self._fetched = time.monotonic()


class NodeNamer:
    def __init__(self, kube: KubeNodes | None = None) -> None:
        self.kube = kube

    def refresh(self) -> None:
        if self.kube is not None:
            self.kube.update()

    def name(self, raw: str) -> str | None:
        """The Kubernetes node name for a raw label value, or None for an unknown node."""
        host = strip_port(raw)
        kube = self.kube
        if kube is None or kube.names is None:
            return host
        if host in kube.names:
            return host
        return kube.addresses.get(host)
