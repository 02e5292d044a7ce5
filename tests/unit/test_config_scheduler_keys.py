"""Top-level scheduler keys: the watcher's bearer token and the pod backoff settings."""

import logging

import pytest
from kubernetes import client

from scheduler.backend.metrics_client import BearerToken
from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.framework.errors import ConfigError
from scheduler.runtime import Runtime, RuntimeOptions

WATCHER = "http://watcher:2020"


def refused(doc, message):
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert str(err.value) == message


def test_backoff_defaults_are_kube_schedulers():
    cfg = parse_config({})
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)


def test_backoff_settings_are_read_and_checked():
    cfg = parse_config({"podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 30})
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 30)
    refused({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds: must be 0.001..3600, got 0")
    refused({"podMaxBackoffSeconds": "soon"}, "podMaxBackoffSeconds: expected a number, got 'soon'")
    refused(
        {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
        "podMaxBackoffSeconds: must be >= podInitialBackoffSeconds (5), got 2",
    )
    refused({"podMaxBackoffSecond": 2}, "podMaxBackoffSecond: unknown field")


def runtime(doc, **options):
    cfg = parse_config({"leaderElection": {"leaderElect": False}, **doc})
    return Runtime(cfg, client.ApiClient(), build_profiles(cfg), RuntimeOptions(**options))


def test_backoff_settings_reach_the_queue():
    q = runtime({"podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 5}).queue
    assert [q.backoff_for(n) for n in (1, 2, 3, 4)] == [2, 4, 5, 5]
    # Explicit runtime options (tests, benchmarks) still win over the file.
    q = runtime({"podInitialBackoffSeconds": 2}, initial_backoff=0.1, max_backoff=0.3).queue
    assert [q.backoff_for(n) for n in (1, 2, 3)] == [0.1, 0.2, 0.3]


def test_the_pod_usage_fetch_settings_reach_its_client():
    pods = runtime({}).pods_client
    assert (pods.interval, pods.max_age) == (30.0, 600.0)  # six watcher intervals; ten minutes
    pods = runtime({}, watcher_interval=1.0).pods_client
    assert pods.interval == 6.0
    # A replay in trace time sets them apart from the node fetches (bench.harness.timescale).
    pods = runtime(
        {}, watcher_interval=1.0, pod_usage_interval=1.0, pod_usage_max_age=10
    ).pods_client
    assert (pods.interval, pods.max_age) == (1.0, 10)


def test_watcher_token_settings(tmp_path):
    cfg = parse_config({"watcherAddress": WATCHER, "watcherToken": " abc "})
    assert cfg.watcher_token == "abc"
    path = tmp_path / "token"
    path.write_text("xyz\n")
    cfg = parse_config({"watcherAddress": WATCHER, "watcherTokenFile": str(path)})
    assert cfg.watcher_token_file == str(path)


def test_watcher_token_errors_name_the_field(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    both = {"watcherAddress": WATCHER, "watcherToken": "a", "watcherTokenFile": "/x"}
    refused(both, "watcherToken, watcherTokenFile: set one of them, not both")
    lone = "watcherToken: set, but there is no watcherAddress to send it to"
    refused({"watcherToken": "a"}, lone)
    number = {"watcherAddress": WATCHER, "watcherToken": 5}
    refused(number, "watcherToken: expected a string, got 5")
    # Not read at load: a Secret's mount exists only in the pod (see BearerToken).
    cfg = parse_config({"watcherAddress": WATCHER, "watcherTokenFile": str(tmp_path / "none")})
    token = BearerToken(path=cfg.watcher_token_file)
    assert token.headers() == {} and token.headers() == {}
    warned = [r for r in caplog.records if "watcher token file" in r.getMessage()]
    assert len(warned) == 1  # said once, not on every fetch


def test_bearer_token_header_and_file_rotation(tmp_path):
    assert BearerToken().headers() == {}
    assert BearerToken("abc").headers() == {"Authorization": "Bearer abc"}
    path = tmp_path / "token"
    path.write_text("one\n")
    token = BearerToken(path=str(path))
    assert token.headers() == {"Authorization": "Bearer one"}
    assert token.headers() == {"Authorization": "Bearer one"}
    assert token.reads == 1  # unchanged file: not read again
    # A Secret's rotation swaps the file for a new one.
    new = tmp_path / "token.new"
    new.write_text("two\n")
    new.replace(path)
    assert token.headers() == {"Authorization": "Bearer two"}
    # Gone for a moment (between the swap's steps): the last token stays in use.
    path.unlink()
    assert token.headers() == {"Authorization": "Bearer two"}
    path.write_text("three")
    assert token.headers() == {"Authorization": "Bearer three"}
