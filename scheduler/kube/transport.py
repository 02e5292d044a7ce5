"""Keep-alive HTTP/1.1 connections to the API server for small JSON requests.

urllib3 over http.client spends about three quarters of a request's CPU in Python around the
socket (building the header dict, parsing the answer's headers with the email package, reading
a chunked body a line at a time): 0.35 ms for a GET and 0.5-0.8 ms for a status PATCH against
0.09 and 0.15 ms here (bench/api_write_cost.py at 3bf7504). The scheduler makes two such calls
per pod it schedules (the binding and its event) and about fourteen per preemption, so that
difference is a third of its CPU per pod. This module sends the request in one write and reads
the answer with a handful of buffered reads. It covers what the API server speaks (HTTP/1.1,
Content-Length or chunked bodies, keep-alive) and nothing else: a configuration it does not
cover (a proxy, custom socket options, an assert_hostname name) gets None from `for_client`,
and kubeapi keeps using the client's urllib3 pool for it.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client

_MAX_LINE = 65536
_MAX_IDLE = 64  # connections kept per API server; more threads than that is not our case
_RETRYABLE = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})  # RFC 9110 idempotent


class BadAnswer(OSError):
    """The server's bytes are not an HTTP/1.x answer (callers treat it as a transport error)."""


class _Conn:
    __slots__ = ("sock", "rfile")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.rfile = sock.makefile("rb")

    def close(self) -> None:
        try:
            self.rfile.close()
            self.sock.close()
        except OSError:
            pass

    def dropped(self) -> bool:
        """True when the server closed (or wrote to) this idle connection: an idle keep-alive
        connection has nothing to read, so anything readable is a FIN, a TLS close or garbage."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)


class Transport:
    """Connections to one API server, shared by the threads of one ApiClient."""

    def __init__(self, api: client.ApiClient) -> None:
        cfg = api.configuration
        url = urlsplit(cfg.host)
        self._tls = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if self._tls else 80)
        self._prefix = url.path.rstrip("/")
        self._context = _tls_context(cfg) if self._tls else None
        self._server_name = cfg.tls_server_name or self._host
        self._cfg = cfg
        agent = api.default_headers.get("User-Agent", "ballast")
        self._head = f"Host: {url.netloc}\r\nUser-Agent: {agent}\r\nAccept: application/json\r\n"
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self.connections = 0  # opened so far: tests see keep-alive at work

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        content_type: str,
        timeout: tuple[float, float],
    ) -> tuple[int, bytes]:
        """One request and its answer (status, body). Transport errors raise OSError."""
        head = self._request_head(method, path, body, content_type)
        data = head if body is None else head + body
        while True:
            conn, reused = self._take(timeout)
            try:
                conn.sock.settimeout(timeout[1])
                conn.sock.sendall(data)
                status, answer, keep = _read_answer(conn.rfile, method)
            except (OSError, ValueError) as exc:
                conn.close()
                # A reused connection the server closed as we wrote: the request was not read.
                # Only idempotent methods are sent again, as Go's own client does.
                if reused and method in _RETRYABLE and isinstance(exc, ConnectionError | BadAnswer):
                    continue
                if isinstance(exc, ValueError):
                    raise BadAnswer(str(exc)) from exc
                raise
            if keep:
                self._give(conn)
            else:
                conn.close()
            return status, answer

    def _request_head(self, method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        lines = [f"{method} {self._prefix}{path} HTTP/1.1\r\n", self._head]
        auth = bearer(self._cfg)
        if auth:
            lines.append(f"{auth[0]}: {auth[1]}\r\n")
        if body is not None:
            lines.append(f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n")
        lines.append("\r\n")
        return "".join(lines).encode("latin-1")

    def _take(self, timeout: tuple[float, float]) -> tuple[_Conn, bool]:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(timeout[0]), False
            if not conn.dropped():
                return conn, True
            conn.close()

    def _give(self, conn: _Conn) -> None:
        with self._lock:
            if len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def _connect(self, connect_timeout: float) -> _Conn:
        sock = socket.create_connection((self._host, self._port), timeout=connect_timeout)
        with self._lock:
            self.connections += 1
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock = self._context.wrap_socket(sock, server_hostname=self._server_name)
        except BaseException:
            sock.close()
            raise
        return _Conn(sock)


def bearer(cfg: Any) -> tuple[str, str] | None:
    """The Authorization header of a kubernetes client configuration, or None. Asked on every
    call: the configuration's refresh hook may rotate the token."""
    token = cfg.auth_settings().get("BearerToken")
    if token and token.get("value"):
        return token["key"], token["value"]
    return None


def _tls_context(cfg: Any) -> ssl.SSLContext:
    """The same trust and client identity as the kubernetes client's urllib3 pool."""
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert, cadata=cfg.ca_cert_data)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif cfg.assert_hostname is False:
        context.check_hostname = False
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, cfg.key_file)
    return context


def _read_answer(rfile: Any, method: str) -> tuple[int, bytes, bool]:
    """Status, body and whether the connection may be used again."""
    while True:
        line = rfile.readline(_MAX_LINE)
        if not line:
            raise BadAnswer("connection closed before an answer")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise BadAnswer(f"not an HTTP/1.x status line: {line[:80]!r}")
        status = int(parts[1])
        length, chunked, close = _read_headers(rfile)
        if not 100 <= status < 200:
            break  # 1xx: an interim answer, the real one follows
    keep = not close and parts[0] != b"HTTP/1.0"
    if method == "HEAD" or status in (204, 304):
        return status, b"", keep
    if chunked:
        return status, _read_chunked(rfile), keep
    if length is None:  # the body ends when the server closes the connection
        return status, rfile.read(), False
    body = rfile.read(length)
    if len(body) != length:
        raise BadAnswer(f"body cut short: {len(body)} of {length} bytes")
    return status, body, keep


def _read_headers(rfile: Any) -> tuple[int | None, bool, bool]:
    length: int | None = None
    chunked = close = False
    while True:
        line = rfile.readline(_MAX_LINE)
        if line in (b"\r\n", b"\n"):
            return length, chunked, close
        if not line:
            raise BadAnswer("connection closed in the headers")
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            close = b"close" in value.lower()


def _read_chunked(rfile: Any) -> bytes:
    parts = []
    while True:
        size_line = rfile.readline(_MAX_LINE)
        if not size_line:
            raise BadAnswer("connection closed in a chunked body")
        size = int(size_line.split(b";", 1)[0], 16)
        if size == 0:
            while rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        chunk = rfile.read(size)
        if len(chunk) != size or rfile.read(2) != b"\r\n":
            raise BadAnswer("chunk cut short")
        parts.append(chunk)


_transports: weakref.WeakKeyDictionary[client.ApiClient, Transport | None] = (
    weakref.WeakKeyDictionary()
)
_transports_lock = threading.Lock()


def for_client(api: client.ApiClient) -> Transport | None:
    """The transport of this ApiClient, made on first use; None when its configuration needs
    what only urllib3 does here (a proxy, socket options, an assert_hostname name)."""
    try:
        return _transports[api]
    except KeyError:
        pass
    with _transports_lock:
        if api not in _transports:
            cfg = api.configuration
            plain = (
                not cfg.proxy
                and cfg.socket_options is None
                and not isinstance(cfg.assert_hostname, str)
                and urlsplit(cfg.host).scheme in ("http", "https")
            )
            _transports[api] = Transport(api) if plain else None
        return _transports[api]
