"""Listen addresses: `:PORT` serves IPv4 and IPv6 on one socket, `[::1]:PORT` IPv6 only; the
scheduler's and the rebalancer's servers (one BackgroundServer) answer on both loopbacks."""

from __future__ import annotations

import socket

import pytest
import requests

from scheduler.serve.status import StatusServer, Telemetry
from shared import listen


@pytest.mark.parametrize(
    "text,expected",
    [(":2020", ("", 2020)), ("[::1]:2020", ("::1", 2020)), ("::1:2020", ("::1", 2020)),
     ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::]:10259", ("::", 10259))],
)  # fmt: skip
def test_split(text, expected):
    assert listen.split(text) == expected


@pytest.mark.parametrize("bad", ["2020", "host:port", ":70000"])
def test_split_refuses(bad):
    with pytest.raises(ValueError):
        listen.split(bad)


def serve(host: str) -> StatusServer:
    server = StatusServer(host, 0, Telemetry(), lambda: (True, "ok"))
    server.start()
    return server


def healthz(address: str, port: int) -> int:
    return requests.get(f"http://{address}:{port}/healthz", timeout=5).status_code


def test_every_address_answers_on_ipv4_and_ipv6_loopback():
    assert listen.every_address() == "::"  # this machine has IPv6 (the CI's does too)
    server = serve("")
    try:
        assert healthz("127.0.0.1", server.port) == 200
        assert healthz("[::1]", server.port) == 200
    finally:
        server.stop()


def test_an_ipv6_address_is_served_on_it_alone():
    server = serve("::1")
    try:
        assert healthz("[::1]", server.port) == 200
        with pytest.raises(requests.ConnectionError):
            healthz("127.0.0.1", server.port)
    finally:
        server.stop()


def test_an_ipv4_address_is_served_on_it_alone():
    server = serve("127.0.0.1")
    try:
        assert server.httpd.socket.family == socket.AF_INET
        assert healthz("127.0.0.1", server.port) == 200
    finally:
        server.stop()
