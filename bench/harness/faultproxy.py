"""A loopback HTTP proxy that misbehaves on demand, for the chaos suite.

In front of Prometheus it answers slowly (a random 1-10 s delay before forwarding) or with
garbage (bodies that are not what Prometheus sends) while a fault lasts. In front of the two
watcher replicas it plays the Kubernetes Service: each request goes to the next backend that
accepts a connection, and every answer's status is counted, so 5xx answers from the watcher are
figures from the wire, not from the watcher's own logs.
"""

from __future__ import annotations

import http.client
import itertools
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

PASS, DELAY, GARBAGE = "pass", "delay", "garbage"
UPSTREAM_TIMEOUT = 30.0  # seconds; longer than any delay this proxy adds itself
# What a broken or impostor Prometheus might send: not JSON, the wrong JSON, a cut-off body,
# an error document, values that are not numbers.
GARBAGE_BODIES = (
    (200, "text/html", b"<html><body>502 Bad Gateway</body></html>"),
    (200, "application/json", b'{"status": "success", "data": {"resultType": "vector", "res'),
    (200, "application/json", b'{"status": "success", "data": {"resultType": "matrix"}}'),
    (
        200,
        "application/json",
        b'{"status": "success", "data": {"resultType": "vector", '
        b'"result": [{"metric": {"instance": 7}, "value": ["x", "NaN"]}]}}',
    ),  # fmt: skip
    (200, "application/json", b"[1, 2, 3]"),
    (503, "application/json", b'{"status": "error", "errorType": "unavailable"}'),
    (200, "application/octet-stream", bytes(range(256))),
)
HOP_HEADERS = frozenset(
    ("connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host")
)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up (a killed watcher or its timeout): nothing to report


class FaultProxy:
    """Forwards GET/POST to `upstreams` (round robin over those that accept a connection)."""

    def __init__(self, upstreams: list[str], seed: int = 0) -> None:
        self.upstreams = [urlsplit(u) for u in upstreams]
        self.mode = PASS
        self.delay_range = (1.0, 10.0)
        self.statuses: Counter[int] = Counter()  # answers passed on, by status
        self.refused = 0  # requests no backend accepted (answered 502 by the proxy)
        self.broken = 0  # requests a backend accepted but never answered (502 by the proxy)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._turn = itertools.count()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def set_mode(self, mode: str) -> None:
        if mode not in (PASS, DELAY, GARBAGE):
            raise ValueError(f"unknown proxy mode {mode!r}")
        self.mode = mode

    def count_5xx(self) -> int:
        with self._lock:
            return sum(n for status, n in self.statuses.items() if status >= 500)

    def _count(self, status: int) -> None:
        with self._lock:
            self.statuses[status] += 1

    def _pick(self) -> float | tuple[int, str, bytes] | None:
        """What the current mode does to one request: a delay, a garbage answer, or nothing."""
        with self._lock:
            if self.mode == DELAY:
                return self._rng.uniform(*self.delay_range)
            if self.mode == GARBAGE:
                return self._rng.choice(GARBAGE_BODIES)
        return None

    def forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request to the next backend that takes it; (502, ...) when none does."""
        start = next(self._turn)
        for i in range(len(self.upstreams)):
            up = self.upstreams[(start + i) % len(self.upstreams)]
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=UPSTREAM_TIMEOUT)
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                kept = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_HEADERS]
                self._count(resp.status)
                return resp.status, kept, data
            except ConnectionRefusedError:
                continue  # a dead replica: a Service would not route here either
            except (OSError, http.client.HTTPException):
                # Accepted, then failed (killed mid-answer, or too slow): what a client behind
                # a Service sees too, so it is answered, not retried elsewhere.
                with self._lock:
                    self.broken += 1
                return 502, [("Content-Type", "text/plain")], b"upstream failed mid-request"
            finally:
                conn.close()
        with self._lock:
            self.refused += 1
        return 502, [("Content-Type", "text/plain")], b"no upstream accepts connections"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = proxy._pick()
                if isinstance(fault, float):
                    time.sleep(fault)
                if isinstance(fault, tuple):
                    status, ctype, data = fault
                    headers = [("Content-Type", ctype)]
                else:
                    wanted = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
                    status, headers, data = proxy.forward(self.command, self.path, wanted, body)
                try:
                    self.send_response(status)
                    for key, value in headers:
                        if key.lower() != "content-length":
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up waiting (its own timeout): nothing to answer

            do_GET = do_POST = _serve  # noqa: N815 (http.server's naming)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
