"""How the Prometheus provider proves who it is: a bearer token or basic auth, from files that may
be replaced while the watcher runs (a mounted Secret, a projected ServiceAccount token).

A file is read again when its modification time or size changes, so a rotated token is used from
the next request on, and a missing or unreadable file fails that poll (`credentials`) instead of
sending a request without credentials.
"""

from __future__ import annotations

import os
import threading

import requests
from requests.auth import AuthBase, HTTPBasicAuth

from watcher.config import Config
from watcher.errors import ProviderError


class SecretFile:
    """A secret kept in a file, stripped of surrounding whitespace (a trailing newline)."""

    def __init__(self, path: str, what: str) -> None:
        self.path = path
        self.what = what
        self._seen: tuple[int, int] | None = None
        self._value = ""
        self._lock = threading.Lock()  # the queries of one poll run on several threads

    def value(self) -> str:
        try:
            info = os.stat(self.path)
            seen = (info.st_mtime_ns, info.st_size)
            with self._lock:
                if seen != self._seen:
                    with open(self.path, encoding="utf-8") as handle:
                        self._value = handle.read().strip()
                    self._seen = seen
                value = self._value
        except (OSError, UnicodeDecodeError) as exc:
            raise ProviderError("credentials", f"{self.what} {self.path}: {exc}") from exc
        if not value:
            raise ProviderError("credentials", f"{self.what} {self.path} is empty")
        return value


class Literal:
    def __init__(self, value: str) -> None:
        self._value = value

    def value(self) -> str:
        return self._value


class Credentials(AuthBase):
    """Sets the Authorization header of every request from the configured token or user."""

    def __init__(self, config: Config) -> None:
        self.token: SecretFile | Literal | None = None
        self.password: SecretFile | Literal | None = None
        self.username = config.prometheus_username
        if config.prometheus_token_file:
            self.token = SecretFile(config.prometheus_token_file, "prometheus_token_file")
        elif config.prometheus_token:
            self.token = Literal(config.prometheus_token)
        if config.prometheus_password_file:
            self.password = SecretFile(config.prometheus_password_file, "prometheus_password_file")
        elif self.username:
            self.password = Literal(config.prometheus_password)

    @property
    def active(self) -> bool:
        return self.token is not None or self.password is not None

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self.token is not None:
            request.headers["Authorization"] = f"Bearer {self.token.value()}"
        elif self.password is not None:
            return HTTPBasicAuth(self.username, self.password.value())(request)
        return request
