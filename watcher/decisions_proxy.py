"""The scheduler's and the rebalancer's JSON (decisions, status), fetched for the dashboard.

The watcher never imports the scheduler: it asks a component's HTTP API at its address setting
(`scheduler_url`, `rebalancer_url`) and passes the answer on. The page then needs no CORS and no
route to the component, only the watcher it already reads; the scheduler's token
(`scheduler_token_file`) stays on the server.

Every exchange ends within `timeout` (3 s): the connection, the headers and each read of the
body get only what is left of it, so a silent or slow component costs a worker that long at
most and answers 504. One that cannot be reached, or answers what is not JSON, answers 502.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import requests
import urllib3.exceptions
from urllib3.util import Timeout

from watcher.config import Config

TIMEOUT = 3.0  # below the dashboard's 4 s, so the page reads the watcher's 504 and not its own
# A Service in front of several replicas spreads connections among them, and only the leader
# acts: a standby's answer is asked again, on a new connection, this many times in all (two
# scheduler replicas: the leader missed 1 time in 16).
TRIES = 4
MAX_ANSWER = 4 << 20  # the components bound their answers far below this
CHUNK = 64 << 10


@dataclass(frozen=True)
class Target:
    """A component the watcher asks: its name in errors, the setting that gives its address,
    its token file, and how to tell a standby's answer (asked again)."""

    name: str
    setting: str
    url: str
    token_file: str = ""
    standby: Callable[[int, bytes], bool] = lambda status, body: False


def scheduler(config: Config) -> Target:
    # A standby scheduler answers 503 naming the leader.
    return Target(
        "scheduler",
        "scheduler_url",
        config.scheduler_url,
        config.scheduler_token_file,
        lambda status, body: status == 503 and b'"leader"' in body,
    )


def rebalancer(config: Config) -> Target:
    # A standby rebalancer answers 200 with "leading": false, and holds no decisions.
    return Target(
        "rebalancer",
        "rebalancer_url",
        config.rebalancer_url,
        config.rebalancer_token_file,
        _not_leading,
    )


def forward(config: Config, pod: tuple[str, str] | None, query: bytes) -> tuple[int, bytes]:
    """(status, JSON body) of the scheduler's `/api/v1/decisions[/NS/POD]?query`."""
    path = "/api/v1/decisions"
    if pod is not None:
        path += "/" + "/".join(quote(part, safe="") for part in pod)
    return fetch(scheduler(config), path, query)


def fetch(target: Target, path: str, query: bytes, timeout: float = TIMEOUT) -> tuple[int, bytes]:
    """(status, JSON body) of `target`'s `path?query`: its own answer when it is JSON, else the
    watcher's `{"error"}` (404 unconfigured, 502 unreachable or not JSON, 504 too slow)."""
    if not target.url:
        return 404, _error(f"no {target.setting} configured on this watcher", configured=False)
    url = target.url.rstrip("/") + path
    if query:
        url += "?" + query.decode("latin-1")
    headers = {}
    if target.token_file:
        try:
            headers["Authorization"] = "Bearer " + Path(target.token_file).read_text().strip()
        except OSError as exc:
            return 502, _error(f"{target.setting.replace('_url', '_token_file')}: {exc}")
    deadline = time.monotonic() + timeout
    for _ in range(TRIES):
        try:
            status, body = _get(url, headers, deadline)
        except (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError):
            return 504, _error(
                f"the {target.name} at {target.url} did not answer within {timeout:g}s"
            )
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            return 502, _error(f"cannot reach the {target.name} at {target.url}: {exc}")
        if len(body) > MAX_ANSWER:
            return 502, _error(f"the {target.name}'s answer is too large")
        if not target.standby(status, body):
            break
    try:
        json.loads(body)
    except ValueError:  # not this API (a plain-text 404), or a broken answer
        text = body.decode("utf-8", "replace").strip()[:200]
        return 502, _error(f"the {target.name} answered {status} without JSON: {text}")
    if status >= 500 and status != 503:  # 503: a standby, or nothing recorded
        text = body.decode("utf-8", "replace")[:200]
        return 502, _error(f"the {target.name} answered {status}: {text}")
    return status, body


def _get(url: str, headers: dict[str, str], deadline: float) -> tuple[int, bytes]:
    """GET within `deadline` (time.monotonic()); TimeoutError past it."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    # total: the connection and the wait for the headers share what is left
    with requests.get(url, headers=headers, timeout=Timeout(total=left), stream=True) as answer:
        body = b""
        while len(body) <= MAX_ANSWER:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            connection = answer.raw.connection
            if connection is not None and connection.sock is not None:
                connection.sock.settimeout(left)  # each read of the body: what is left
            chunk = answer.raw.read1(CHUNK, decode_content=True)  # what one read brings
            if not chunk:
                break
            body += chunk
        return answer.status_code, body


def _not_leading(status: int, body: bytes) -> bool:
    if status != 200:
        return False
    try:
        return json.loads(body).get("leading") is False
    except (ValueError, AttributeError):
        return False


def _error(text: str, **more: object) -> bytes:
    return json.dumps({"error": text, **more}).encode()
