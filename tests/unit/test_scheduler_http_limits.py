"""The scheduler's HTTP endpoints on loopback: body size limits, methods, the extender token."""

from __future__ import annotations

import socket

import pytest
import requests

from scheduler.serve import httpserve
from scheduler.serve.extender import ExtenderServer, authorized
from scheduler.serve.status import StatusServer, Telemetry

TOKEN = "ext-secret-0123"


class Verbs:
    """Stands in for the Extender: the HTTP layer is under test, not the plugins."""

    def filter(self, args):  # noqa: ANN001, ANN201
        return {"NodeNames": [], "FailedNodes": {}, "Error": "", "got": sorted(args)}

    prioritize = bind = filter


@pytest.fixture
def status():
    server = StatusServer("127.0.0.1", 0, Telemetry(), lambda: (True, "ok"))
    server.start()
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


@pytest.fixture
def extender():
    server = ExtenderServer("127.0.0.1", 0, Verbs(), token=TOKEN, max_body=4096)
    server.start()
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


def test_status_server_limits(status):
    assert requests.get(f"{status}/metrics", timeout=5).status_code == 200
    resp = requests.get(f"{status}/healthz", data=b"x" * (httpserve.STATUS_MAX_BODY + 1), timeout=5)
    assert resp.status_code == 413
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        resp = requests.request(method, f"{status}/metrics", data=b"{}", timeout=5)
        assert resp.status_code == 405 and resp.headers["Allow"] == "GET"


def test_extender_token_as_path_segment_or_bearer(extender):
    body = {"Pod": {}}
    assert requests.post(f"{extender}/filter", json=body, timeout=5).status_code == 401
    assert requests.post(f"{extender}/wrong/filter", json=body, timeout=5).status_code == 401
    ok = requests.post(f"{extender}/ballast/{TOKEN}/filter", json=body, timeout=5)
    assert ok.status_code == 200 and ok.json()["got"] == ["Pod"]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert requests.post(f"{extender}/prioritize", json=body, headers=headers, timeout=5).ok
    headers = {"Authorization": f"Bearer {TOKEN}x"}
    assert (
        requests.post(f"{extender}/bind", json=body, headers=headers, timeout=5).status_code == 401
    )


def test_extender_body_limit(extender):
    url = f"{extender}/{TOKEN}/filter"
    assert requests.post(url, data=b"{" + b" " * 4000 + b"}", timeout=5).status_code == 200
    resp = requests.post(url, data=b"x" * 5000, timeout=5)
    assert resp.status_code == 413 and "at most 4096" in resp.json()["Error"]
    chunked = requests.post(url, data=(b"{}" for _ in range(2)), timeout=5)
    assert chunked.status_code == 411
    assert requests.get(url, timeout=5).status_code == 405


def test_oversized_body_is_refused_without_being_read(extender):
    """A client declaring 1 GiB gets 413 at once; the server never waits for the bytes."""
    host, port = extender.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        head = f"POST /{TOKEN}/filter HTTP/1.1\r\nHost: x\r\nContent-Length: {1 << 30}\r\n\r\n"
        conn.sendall(head.encode())
        assert conn.recv(200).startswith(b"HTTP/1.0 413")


def test_authorized_without_a_token_lets_everything_through():
    assert authorized("", "/filter", "")
    assert not authorized("t", "/filter", "Basic t")
    assert authorized("t", "/x/t/bind/", "")
