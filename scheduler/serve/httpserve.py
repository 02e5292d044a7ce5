"""A small HTTP server on its own daemon thread, for the scheduler's status and extender endpoints.

Both serve a handful of requests a second next to the scheduling loop; the standard library's
threaded server is enough and keeps a slow client from holding up the others.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from shared import listen
from shared.lifecycle import Lifecycle

log = logging.getLogger(__name__)


# The status endpoints read no body; a client may send this much all the same.
STATUS_MAX_BODY = 1024
# A client that sends nothing for this long loses its connection (and the thread serving it).
IDLE_TIMEOUT = 15.0


def authorized(token: str, header: str) -> bool:
    """`header` (an Authorization header) carries `token` as a bearer token."""
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":  # schemes are case-insensitive (RFC 9110 11.1)
        return False
    return hmac.compare_digest(given.encode(), token.encode())


class Handler(BaseHTTPRequestHandler):
    """Base for request handlers: replies with a body of known length, logs at debug level."""

    log_prefix = "http"
    timeout = IDLE_TIMEOUT
    allowed: tuple[str, ...] = ("GET",)

    def read_body(self, limit: int) -> bytes | None:
        """The request body, or None once the request has been answered (411, 413 or 400).

        The length must be declared and at most `limit`: a body is never read in full before
        its size is known, so an oversized request costs its headers only."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.send_json(411, {"Error": "a Content-Length is required (no chunked bodies)"})
            return None
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.send_json(400, {"Error": "malformed Content-Length"})
            return None
        if length > limit:
            self.close_connection = True  # the unread body must not be parsed as a request
            self.send_json(413, {"Error": f"request body of {length} bytes; at most {limit}"})
            return None
        return self.rfile.read(length)

    def refuse_method(self) -> None:
        self.close_connection = True
        body = json.dumps({"Error": f"{self.command} not allowed"}).encode()
        self.send_response(405)
        self.send_header("Allow", ", ".join(self.allowed))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # Methods a handler does not serve get 405 with Allow (RFC 9110), not http.server's 501.
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.refuse_method()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def send_body(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, code: int, doc: Any) -> None:
        self.send_body(code, json.dumps(doc).encode(), "application/json")

    def log_message(self, fmt: str, *args: Any) -> None:
        # http.server writes every request to stderr otherwise
        log.debug(self.log_prefix + ": " + fmt, *args)


class _Server(ThreadingHTTPServer):
    """IPv4 or IPv6 by the host it binds; `::` takes IPv4 connections too (shared/listen.py)."""

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = listen.family(host)
        super().__init__((host, port), handler)

    def server_bind(self) -> None:
        listen.dual_stack(self.socket)
        super().server_bind()


class BackgroundServer:
    """Binds at construction (so `port` is known, even for port 0); serves after `start()`.
    `host` "" is every address, IPv4 and IPv6."""

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = _Server(listen.resolve(host), port, handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._life = Lifecycle(f"http-server-{self.port}")

    def start(self) -> None:
        self._life.start(self._thread.start)

    def stop(self) -> None:
        # shutdown() waits for serve_forever to notice: only once that is running.
        self._life.stop(self.httpd.shutdown, timeout=5.0)
        self.httpd.server_close()
