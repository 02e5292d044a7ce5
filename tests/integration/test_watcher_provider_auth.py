"""The Prometheus provider's bearer token and TLS settings, against an HTTPS query endpoint."""

from __future__ import annotations

import pytest

from tests.fixtures.ports import wait_for
from tests.integration.watcher_support import BadSource, inst, self_signed, vector

SERIES = {"cpu_q": vector((inst("tls-a"), "12")), "mem_q": vector((inst("tls-a"), "34"))}
QUERIES = {"cpu_query": "cpu_q", "memory_query": "mem_q", "warm_start": False}


@pytest.fixture
def https_source(tmp_path):
    ca_file, context = self_signed(tmp_path)
    source = BadSource(tls=context)
    source.answers = dict(SERIES)
    yield source, ca_file
    source.close()


def test_ca_bundle_and_bearer_token(https_source, make_watcher):
    source, ca_file = https_source
    watcher = make_watcher(
        source.url, prometheus_ca_file=str(ca_file), prometheus_token="t0ken", **QUERIES
    )
    nodes = watcher.wait_nodes(["tls-a"], metrics=("memory",))
    assert nodes["tls-a"]["metrics"]["memory"]["latest"] == 34.0
    assert source.authorizations and set(source.authorizations) == {"Bearer t0ken"}


def test_untrusted_certificate_fails_the_poll_unless_verification_is_off(
    https_source, make_watcher
):
    source, _ = https_source
    strict = make_watcher(source.url, **QUERIES)
    wait_for(
        lambda: strict.status()["counters"]["pollErrors"].get("unreachable", 0) >= 2,
        timeout=10,
        what="TLS verification failures",
    )
    assert "certificate" in strict.status()["provider"]["error"].lower()
    assert strict.get("/api/v1/nodes").json()["nodes"] == {}

    # load-watcher's INSECURE_SKIP_VERIFY, as its Deployment would set it.
    lax = make_watcher(source.url, env={"INSECURE_SKIP_VERIFY": "true"}, **QUERIES)
    lax.wait_nodes(["tls-a"], metrics=("memory",))
