"""Reaching a store behind a path prefix, TLS with a client certificate and basic auth (a real
Prometheus guarding itself with --web.config.file), with credentials that rotate; tenant headers
on the wire."""

from __future__ import annotations

import pytest

from tests.fixtures.ports import wait_for
from tests.integration.store_support import Guarded
from tests.integration.watcher_support import BadSource, inst, self_signed, vector

NODE = "guarded-a"


@pytest.fixture
def guarded(make_exporter, tmp_path):
    exporter = make_exporter()
    exporter.set(NODE, cpu=40.0, memory=30.0)
    for name in ("server", "client", "stranger"):
        (tmp_path / name).mkdir()
    server_ca, _ = self_signed(tmp_path / "server")
    client_cert, _ = self_signed(tmp_path / "client")
    self_signed(tmp_path / "stranger")  # a certificate the store does not trust
    store = Guarded(
        tmp_path / "prom",
        [exporter.target],
        prefix="/select/0/prometheus",
        tls=(server_ca, tmp_path / "server" / "tls.key"),
        client_ca=client_cert,
        users={"watcher": "first"},
    )
    store.start()
    yield store, tmp_path
    store.stop()


def failures(watcher, reason: str) -> int:
    return watcher.status()["counters"]["pollErrors"].get(reason, 0)


def test_path_prefix_tls_client_certificate_and_rotating_basic_auth(guarded, make_watcher):
    store, tmp = guarded
    password = tmp / "password"
    password.write_text("first\n")
    access = {
        "prometheus_ca_file": str(tmp / "server" / "tls.crt"),
        "prometheus_cert_file": str(tmp / "client" / "tls.crt"),
        "prometheus_key_file": str(tmp / "client" / "tls.key"),
        "prometheus_username": "watcher",
        "prometheus_password_file": str(password),
    }
    watcher = make_watcher(store.url, **access)
    nodes = watcher.wait_nodes([NODE], timeout=60)
    assert abs(nodes[NODE]["metrics"]["memory"]["latest"] - 30.0) < 0.5

    # The store's password changes: polls fail with a clear reason, data is kept and ages.
    store.set_users({"watcher": "second"})
    wait_for(lambda: failures(watcher, "http_401") >= 1, timeout=20, what="a refused poll")
    assert "check the credentials" in watcher.status()["provider"]["error"]
    assert watcher.json(f"/api/v1/nodes/{NODE}")["metrics"]["memory"]["latest"] == pytest.approx(
        30.0, abs=0.5
    )
    # The mounted Secret is updated in place: the next poll reads it and succeeds.
    password.write_text("second\n")
    wait_for(lambda: watcher.status()["provider"]["ok"], timeout=20, what="polls with the new one")

    # Without the client certificate, or with one the store does not trust, the TLS handshake
    # fails; without the store's CA, so does verification of the store.
    for wrong in (
        {"prometheus_cert_file": "", "prometheus_key_file": ""},
        {
            "prometheus_cert_file": str(tmp / "stranger" / "tls.crt"),
            "prometheus_key_file": str(tmp / "stranger" / "tls.key"),
        },
        {"prometheus_ca_file": ""},
    ):
        refused = make_watcher(store.url, **{**access, **wrong})
        wait_for(lambda w=refused: failures(w, "unreachable") >= 1, timeout=20, what=str(wrong))
        assert refused.get("/api/v1/nodes").json()["nodes"] == {}
        refused.stop()


def test_tenant_headers_go_with_every_query(make_watcher):
    source = BadSource()
    source.answers = {
        "cpu_q": vector((inst("tenant-a"), "12")),
        "mem_q": vector((inst("tenant-a"), "34")),
    }
    try:
        watcher = make_watcher(
            source.url,
            cpu_query="cpu_q",
            memory_query="mem_q",
            warm_start=False,
            pod_usage=False,
            prometheus_headers={"X-Scope-OrgID": "team-a", "THANOS-TENANT": "team-a"},
        )
        watcher.wait_nodes(["tenant-a"], metrics=("memory",))
        sent = [h for h in source.headers if h]
        assert sent and all(
            h.get("X-Scope-OrgID") == "team-a" and h.get("THANOS-TENANT") == "team-a" for h in sent
        )
    finally:
        source.close()
