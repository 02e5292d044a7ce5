"""Listen addresses (`HOST:PORT`) of every Ballast HTTP server, IPv4 and IPv6 alike.

`:PORT` (no host) means every address of both families: one IPv6 socket that also takes IPv4
(IPV6_V6ONLY off), so probes and scrapes reach the pod on an IPv4-only, IPv6-only or dual-stack
cluster; on a host without IPv6 it falls back to 0.0.0.0. An IPv6 host may be bracketed
(`[::1]:2020`) or not (`::1:2020`: the port is after the last colon).
"""

from __future__ import annotations

import socket

EVERY_V6, EVERY_V4 = "::", "0.0.0.0"


def split(listen: str) -> tuple[str, int]:
    """(host, port); host "" for every address. Raises ValueError on a bad port."""
    host, sep, port = listen.rpartition(":")
    if not sep:
        raise ValueError(f"expected HOST:PORT or :PORT, not {listen!r}")
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"port {number} out of range")
    return host.removeprefix("[").removesuffix("]"), number


def every_address() -> str:
    """`::` where this host has IPv6 (dual-stack sockets then take IPv4 too), else 0.0.0.0."""
    if not socket.has_ipv6:
        return EVERY_V4
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind((EVERY_V6, 0))
    except OSError:
        return EVERY_V4
    return EVERY_V6


def resolve(host: str) -> str:
    """The host to bind: every address for ""."""
    return host or every_address()


def family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def dual_stack(sock: socket.socket) -> None:
    """An IPv6 socket on `::` takes IPv4 connections too (the Linux default, made explicit)."""
    if sock.family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
