"""Raw JSON requests to the API server with the kubernetes client's configuration.

The generated client (v37) validates every body into pydantic models and back, and even its
untyped path (`param_serialize` + `call_api`) walks the body and rebuilds headers on every call;
for the calls made once per pod (the binding and its event) that costs about as much CPU as
scheduling the pod. These helpers reuse the client's configuration (host, TLS, client
certificate, bearer token with its refresh hook, User-Agent) and send bytes over
scheduler/kube/transport.py's keep-alive connections, or through the client's urllib3 pool
when the configuration needs it (a proxy).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client

from scheduler.kube import transport

_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


@dataclass
class Answer:
    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def message(self) -> str:
        """The Status message of an error answer, or its first bytes."""
        try:
            return str(json.loads(self.body).get("message") or self.status)
        except (ValueError, AttributeError):
            return f"HTTP {self.status}: {self.body[:200]!r}"


def _headers(api: client.ApiClient) -> dict[str, str]:
    headers = {**api.default_headers, **_HEADERS}
    auth = transport.bearer(api.configuration)
    if auth:
        headers[auth[0]] = auth[1]
    return headers


def request(
    api: client.ApiClient,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    timeout: tuple[float, float] = (5.0, 15.0),
    content_type: str = "",
) -> Answer:
    """One request; transport errors raise (urllib3/OSError), HTTP errors come back as Answer.
    `content_type` names a patch flavour ("application/merge-patch+json", ...)."""
    data = None if body is None else json.dumps(body).encode()
    lean = transport.for_client(api)
    if lean is not None:
        status, answer = lean.request(
            method, path, data, content_type or _HEADERS["Content-Type"], timeout
        )
        return Answer(status, answer)
    headers = _headers(api)
    if content_type:
        headers["Content-Type"] = content_type
    resp = api.rest_client.pool_manager.request(
        method,
        api.configuration.host + path,
        body=data,
        headers=headers,
        timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
    )
    return Answer(resp.status, resp.data or b"")
