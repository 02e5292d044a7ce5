"""api_open_paths: what stays readable without the token when api_token is set."""

import pytest

from watcher.api import _open
from watcher.config import load
from watcher.errors import ConfigError


def test_open_paths_cover_the_path_and_below_only():
    assert _open("/healthz", []) and _open("/", [])
    assert not _open("/watcher", [])
    assert _open("/watcher", ["/watcher"])
    assert _open("/watcher/node-1", ["/watcher"])
    assert not _open("/watcherx", ["/watcher"])
    assert not _open("/api/v1/nodes", ["/watcher"])


def test_open_paths_from_the_environment_and_checked():
    env = {"BALLAST_PROMETHEUS_URL": "http://p:9090", "BALLAST_API_OPEN_PATHS": "/watcher"}
    assert load(env=env).api_open_paths == ["/watcher"]
    with pytest.raises(ConfigError, match="api_open_paths: '/healthz' is not a /watcher or /api/"):
        load(env={**env, "BALLAST_API_OPEN_PATHS": "/healthz"})
