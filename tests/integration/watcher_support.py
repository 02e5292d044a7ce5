"""A tiny HTTP server answering Prometheus's query API with whatever a test sets.

It serves bad input on purpose (NaN, errors, garbage, hangs); it is not a stand-in for Prometheus,
which the other watcher tests use for real.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def answer(result_type: str, result: object) -> str:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": result}})


def vector(*samples: tuple[dict, str]) -> tuple[int, str]:
    result = [{"metric": labels, "value": [time.time(), value]} for labels, value in samples]
    return 200, answer("vector", result)


def inst(name: str) -> dict:
    return {"instance": name, "job": "node"}


class BadSource:
    """Answers /api/v1/query with the (status, body) set per query; can also hang."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, str]] = {}
        self.delay = 0.0
        source = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                url = urlparse(self.path)
                query = parse_qs(url.query).get("query", [""])[0]
                if source.delay:
                    time.sleep(source.delay)
                status, body = source.answers.get(query, (404, "no such query"))
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the watcher gave up waiting

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
