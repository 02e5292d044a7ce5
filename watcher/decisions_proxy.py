"""The scheduler's decision records (`ballast explain`'s API), fetched for the dashboard.

The watcher never imports the scheduler: it asks the scheduler's HTTP API at `scheduler_url`
and passes the answer on. The page then needs no CORS and no route to the scheduler, only the
watcher it already reads; the scheduler's token (`scheduler_token_file`) stays on the server.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import requests

from watcher.config import Config

TIMEOUT = 3.0
# A Service in front of several scheduler replicas spreads connections among them, and only the
# leader has records: a standby's answer (503 naming the leader) is asked again, on a new
# connection, this many times in all (two replicas: the leader missed 1 time in 16).
TRIES = 4
MAX_ANSWER = 4 << 20  # the scheduler bounds its answers far below this


def forward(config: Config, pod: tuple[str, str] | None, query: bytes) -> tuple[int, bytes]:
    """(status, JSON body) of the scheduler's `/api/v1/decisions[/NS/POD]?query`."""
    if not config.scheduler_url:
        return 404, b'{"error": "no scheduler_url configured on this watcher"}'
    path = "/api/v1/decisions"
    if pod is not None:
        path += "/" + "/".join(quote(part, safe="") for part in pod)
    url = config.scheduler_url.rstrip("/") + path
    if query:
        url += "?" + query.decode("latin-1")
    headers = {}
    if config.scheduler_token_file:
        try:
            headers["Authorization"] = (
                "Bearer " + Path(config.scheduler_token_file).read_text().strip()
            )
        except OSError as exc:
            return 502, _error(f"scheduler_token_file: {exc}")
    for _ in range(TRIES):
        try:
            with requests.get(url, headers=headers, timeout=TIMEOUT, stream=True) as answer:
                body = answer.raw.read(MAX_ANSWER + 1, decode_content=True)
                status = answer.status_code
        except requests.RequestException as exc:
            return 502, _error(f"cannot reach the scheduler at {config.scheduler_url}: {exc}")
        if status != 503 or b'"leader"' not in body:
            break
    if len(body) > MAX_ANSWER:
        return 502, _error("the scheduler's answer is too large")
    if status != 200:
        try:
            json.loads(body)
        except ValueError:  # a scheduler without this API answers plain text
            text = body.decode("utf-8", "replace").strip()[:200]
            return status, _error(f"the scheduler answered {status}: {text}")
    return status, body


def _error(text: str) -> bytes:
    return json.dumps({"error": text}).encode()
