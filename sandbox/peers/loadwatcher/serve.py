"""What paypal/load-watcher needs beside it: the recording rules it reads, and for a replayed
trace a proxy that scales the windows of its queries.

load-watcher asks Prometheus for `avg_over_time(<rule>[15m])` (and 10m, 5m) with its windows
hard-coded. A trace replayed at `speed` times real time would have it average 15 minutes of
wall time, `speed` x 15 minutes of trace; `RangeProxy` sits between it and Prometheus and turns
each `[15m]` into `[15m / speed]`, so load-watcher looks back as far in trace time as it does
deployed. Its fetch pace (a minute) is its own and stays real-time.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

# kube-prometheus's node rules under the names load-watcher queries (v0.2.4's promCpuMetric and
# promMemMetric), as ratios; Ballast's `load-watcher` query preset reads the same two series.
LOAD_WATCHER_RULES = {
    "instance:node_cpu:ratio": (
        '1 - avg by (instance) (irate(node_cpu_seconds_total{mode="idle"}[1m]))'
    ),
    "instance:node_memory_utilisation:ratio": (
        "1 - sum by (instance) (node_memory_MemAvailable_bytes)"
        " / sum by (instance) (node_memory_MemTotal_bytes)"
    ),
}
TIMEOUT = 30.0  # seconds per forwarded request; load-watcher's own is 10
_RANGE = re.compile(r"\[(\d+(?:\.\d+)?)(ms|s|m|h|d)\]")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def rules_document() -> dict[str, Any]:
    """A Prometheus rule file recording LOAD_WATCHER_RULES."""
    rules = [{"record": name, "expr": expr} for name, expr in LOAD_WATCHER_RULES.items()]
    return {"groups": [{"name": "load-watcher", "rules": rules}]}


def scale_ranges(query: str, speed: float) -> str:
    """Every `[<duration>]` range of a PromQL query divided by `speed` (never under 1 ms)."""
    if speed <= 0:
        raise ValueError(f"speed must be > 0, got {speed}")

    def scaled(match: re.Match[str]) -> str:
        seconds = float(match.group(1)) * _UNIT[match.group(2)] / speed
        return f"[{max(round(seconds * 1000), 1)}ms]"

    return _RANGE.sub(scaled, query)


class RangeProxy:
    """Prometheus's HTTP API at `url`, every query's ranges scaled by `speed` on the way."""

    def __init__(self, upstream: str, speed: float) -> None:
        self.upstream = upstream.rstrip("/")
        self.speed = speed
        self.forwarded = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path, _, query = self.path.partition("?")
                self._answer("GET", path, _scaled(query, proxy.speed), None)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                path, _, query = self.path.partition("?")
                form = _scaled(body, proxy.speed).encode()
                self._answer("POST", path, _scaled(query, proxy.speed), form)

            def do_HEAD(self) -> None:  # noqa: N802
                self._answer("HEAD", self.path, "", None)

            def _answer(self, method: str, path: str, query: str, body: bytes | None) -> None:
                url = f"{proxy.upstream}{path}" + (f"?{query}" if query else "")
                headers = {"Content-Type": self.headers.get("Content-Type", "")} if body else {}
                try:
                    resp = requests.request(method, url, data=body, headers=headers,
                                            timeout=TIMEOUT)  # fmt: skip
                except requests.RequestException as exc:
                    self.send_error(502, f"prometheus: {exc}")
                    return
                proxy.forwarded += 1
                self.send_response(resp.status_code)
                self.send_header("Content-Type", resp.headers.get("Content-Type", "text/plain"))
                self.send_header("Content-Length", str(len(resp.content)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(resp.content)

            def log_message(self, *args: Any) -> None:
                pass  # one line per query of a 1-minute cycle is noise

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> RangeProxy:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="range-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _scaled(encoded: str, speed: float) -> str:
    """A urlencoded form or query string with its `query` field's ranges scaled."""
    if not encoded:
        return encoded
    fields = urllib.parse.parse_qsl(encoded, keep_blank_values=True)
    out = [(k, scale_ranges(v, speed) if k == "query" else v) for k, v in fields]
    return urllib.parse.urlencode(out)
