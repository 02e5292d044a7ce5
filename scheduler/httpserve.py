"""A small HTTP server on its own daemon thread, for the scheduler's status and extender endpoints.

Both serve a handful of requests a second next to the scheduling loop; the standard library's
threaded server is enough and keeps a slow client from holding up the others.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)


class Handler(BaseHTTPRequestHandler):
    """Base for request handlers: replies with a body of known length, logs at debug level."""

    log_prefix = "http"

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


class BackgroundServer:
    """Binds at construction (so `port` is known, even for port 0); serves after `start()`."""

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
