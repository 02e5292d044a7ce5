"""Raw JSON requests to the API server through the kubernetes client's connection pool.

The generated client (v37) validates every body into pydantic models and back; for the two
calls made once per pod (the binding and its event) that costs more CPU than scheduling the pod.
These helpers reuse the client's configuration (host, TLS, client certificate or bearer token,
connection pool) and send plain dicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kubernetes import client

_AUTH = ["BearerToken"]
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


def request(
    api: client.ApiClient,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    timeout: tuple[float, float] = (5.0, 15.0),
) -> Answer:
    """One request; transport errors raise (urllib3/OSError), HTTP errors come back as Answer."""
    method, url, headers, data, _ = api.param_serialize(
        method, path, header_params=dict(_HEADERS), body=body, auth_settings=_AUTH
    )
    resp = api.call_api(method, url, header_params=headers, body=data, _request_timeout=timeout)
    return Answer(resp.status, resp.read() or b"")
