"""The Prometheus provider's settings for distributed stores: path prefix, tenant headers, basic
auth, token and password files, client certificates; each mistake one clear message at start."""

from __future__ import annotations

import os

import pytest
import requests

from watcher.config import load
from watcher.errors import ConfigError, ProviderError
from watcher.providers.auth import Credentials

URL = {"BALLAST_PROMETHEUS_URL": "https://vmselect:8481/select/0/prometheus"}


def test_headers_from_the_file_and_from_the_environment(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("prometheus_headers: {X-Scope-OrgID: team-a, THANOS-TENANT: 7}\n")
    assert load(str(path), env=URL).prometheus_headers == {
        "X-Scope-OrgID": "team-a",
        "THANOS-TENANT": "7",
    }
    env = {**URL, "BALLAST_PROMETHEUS_HEADERS": "X-Scope-OrgID: team-b"}
    assert load(env=env).prometheus_headers == {"X-Scope-OrgID": "team-b"}
    with pytest.raises(ConfigError, match="prometheus_headers"):
        load(env={**URL, "BALLAST_PROMETHEUS_HEADERS": "just words"})
    with pytest.raises(ConfigError, match="prometheus_headers"):
        load(env={**URL, "BALLAST_PROMETHEUS_HEADERS": "{a: [unclosed"})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"prometheus_url": "vmselect:8481"}, r"must be an http\(s\) URL"),
        ({"prometheus_url": "http://p:9090/api/v1/query"}, "base URL"),
        ({"prometheus_url": "http://p:9090/select/0/prometheus/api/v1"}, "base URL"),
        ({"prometheus_url": "http://p:9090", "prometheus_ca_file": "{ca}"}, "not https"),
        ({"prometheus_cert_file": "{ca}"}, "go together"),
        ({"prometheus_key_file": "{ca}"}, "go together"),
        ({"prometheus_token": "t", "prometheus_username": "u", "prometheus_password": "p"},
         "not both"),
        ({"prometheus_password": "p"}, "needs prometheus_username"),
        ({"prometheus_username": "u"}, "needs prometheus_password"),
        ({"prometheus_username": "u", "prometheus_password_file": "{missing}"},
         "prometheus_password_file: .* is not a readable file"),
        ({"prometheus_ca_file": "{missing}"}, "prometheus_ca_file: .* is not a readable file"),
        ({"prometheus_headers": {"X Tenant": "a"}}, "not a header name"),
        ({"prometheus_headers": {"X-Tenant": "a\r\nX-Evil: 1"}}, "line break"),
        ({"prometheus_token": "t", "prometheus_headers": {"authorization": "Basic x"}},
         "Authorization"),
    ],
)  # fmt: skip
def test_provider_mistakes_are_clear(tmp_path, settings, message):
    (tmp_path / "ca.pem").write_text("x")
    files = {"ca": str(tmp_path / "ca.pem"), "missing": str(tmp_path / "none")}
    overrides = {k: v.format(**files) if isinstance(v, str) else v for k, v in settings.items()}
    with pytest.raises(ConfigError, match=message):
        load(env=URL, overrides=overrides)


def test_the_metrics_server_provider_ignores_prometheus_settings():
    env = {"BALLAST_PROVIDER": "metrics-server", "BALLAST_PROMETHEUS_URL": "x/api/v1"}
    assert load(env=env).provider == "metrics-server"


def authorization(credentials: Credentials) -> str:
    request = requests.Request("GET", "http://p/").prepare()
    return credentials(request).headers["Authorization"]


def test_basic_auth_and_a_rotated_password_file(tmp_path):
    secret = tmp_path / "password"
    secret.write_text("first\n")
    overrides = {"prometheus_username": "watcher", "prometheus_password_file": str(secret)}
    credentials = Credentials(load(env=URL, overrides=overrides))
    assert authorization(credentials) == "Basic d2F0Y2hlcjpmaXJzdA=="  # watcher:first
    secret.write_text("second-one\n")
    os.utime(secret, ns=(1, 1))  # a new mtime even within the same clock tick
    assert authorization(credentials) == "Basic d2F0Y2hlcjpzZWNvbmQtb25l"  # watcher:second-one
    secret.unlink()
    with pytest.raises(ProviderError, match="prometheus_password_file") as caught:
        authorization(credentials)
    assert caught.value.reason == "credentials"


def test_token_file_is_read_again_when_it_changes_and_empty_is_refused(tmp_path):
    token = tmp_path / "token"
    token.write_text("one")
    credentials = Credentials(load(env=URL, overrides={"prometheus_token_file": str(token)}))
    assert authorization(credentials) == "Bearer one"
    token.write_text("two")
    os.utime(token, ns=(2, 2))
    assert authorization(credentials) == "Bearer two"
    token.write_text("")
    with pytest.raises(ProviderError, match="empty"):
        authorization(credentials)


def test_no_credentials_no_header():
    credentials = Credentials(load(env=URL))
    assert not credentials.active
    request = requests.Request("GET", "http://p/").prepare()
    assert "Authorization" not in credentials(request).headers
