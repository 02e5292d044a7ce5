"""The watcher on Redis as operators run it: through Sentinel across a failover, and over TLS
(client certificates) as an ACL user limited to the watcher's keys."""

from __future__ import annotations

import threading
import uuid

import pytest
import requests

from sandbox.cluster.certs import ensure_pki
from tests.fixtures.ports import wait_for
from tests.fixtures.redis import RedisServer
from watcher.errors import StoreError
from watcher.redis_store import RedisStore, redact

NODES = {"ha-a": (30.0, 40.0), "ha-b": (55.0, 20.0)}
PASSWORD = "s3cret:p@ss"  # characters a URL must escape


@pytest.fixture(scope="module", autouse=True)
def loaded(exporter, prometheus):
    for node, (cpu, memory) in NODES.items():
        exporter.set(node, cpu=cpu, memory=memory)
    prometheus.wait_for_series('node_memory_MemTotal_bytes{instance=~"ha-.*"}', len(NODES))


class Reader:
    """Reads /api/v1/nodes without pause on a thread, counting answers by status."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.codes: dict[int, int] = {}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                resp = requests.get(f"{self.url}/api/v1/nodes", timeout=10)
            except requests.RequestException as exc:
                self.errors.append(str(exc))
                continue
            code = resp.status_code
            if code != 200 and len(self.errors) < 5:
                self.errors.append(f"{code}: {resp.text[:300]}")
            self.codes[code] = self.codes.get(code, 0) + 1

    def __enter__(self) -> Reader:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=15)


def test_sentinel_failover_keeps_the_window_and_the_api(prometheus, make_sentinel, make_watcher):
    ha = make_sentinel()
    watcher = make_watcher(prometheus.url, ha.url, workers=2, lock_ttl=3.0)
    watcher.wait_nodes(list(NODES))
    old_master = ha.master_port()
    assert old_master == ha.master.port
    frames_before = {n: watcher.json("/api/v1/nodes")["nodes"][n] for n in NODES}
    # Every worker refreshes its copy each second, requests or not: after a few polls each
    # has one to serve while Redis is away (a worker without any would rightly answer 503).
    wait_for(lambda: watcher.status()["counters"]["polls"] >= 3, timeout=30, what="3 polls")
    polls_before = watcher.status()["counters"]["polls"]

    with Reader(watcher.url) as reader:
        ha.master.kill()
        wait_for(lambda: ha.master_port() == ha.replica.port, timeout=30, what="the promotion")
        # Polls are written again: to the new master, found through the Sentinel.
        wait_for(
            lambda: watcher.status()["counters"]["polls"] > polls_before + 2,
            timeout=60,
            what="polls stored after the failover",
        )
    assert reader.errors == [] and set(reader.codes) == {200}, (reader.codes, reader.errors)
    promoted = ha.replica.client()
    assert promoted.info("replication")["role"] == "master"
    assert promoted.dbsize() > 0
    # The window was kept: every node has at least as many samples as before the failover.
    after = watcher.json("/api/v1/nodes")["nodes"]
    for node, before in frames_before.items():
        for metric, stats in before["metrics"].items():
            assert after[node]["metrics"][metric]["count"] >= stats["count"], (node, metric)


@pytest.fixture
def tls_redis(tmp_path):
    """A redis-server that speaks TLS only and asks for client certificates, with one ACL
    user allowed the keys under `acl:*` and the default user switched off."""
    pki = ensure_pki(tmp_path / "pki", "ballast-watcher", "127.0.0.1")
    tls = {
        "ssl_ca_certs": str(pki.ca_cert),
        "ssl_certfile": str(pki.admin_cert),
        "ssl_keyfile": str(pki.admin_key),
    }
    server = RedisServer(
        tmp_path / "redis-tls",
        args=(
            *("--tls-cert-file", str(pki.serving_cert), "--tls-key-file", str(pki.serving_key)),
            *("--tls-ca-cert-file", str(pki.ca_cert), "--tls-auth-clients", "yes"),
            *("--user", "default", "off"),
            # As docs/deploy.md suggests: the watcher's keys, no administrative commands.
            *("--user", "watcher", "on", f">{PASSWORD}", "~acl:*", "+@all", "-@dangerous"),
        ),
        user=("watcher", PASSWORD),
        tls=tls,
    )
    server.start()
    yield server
    server.stop()


def test_tls_and_an_acl_user(prometheus, tls_redis, make_watcher):
    prefix = f"acl:{uuid.uuid4().hex[:6]}:"
    watcher = make_watcher(prometheus.url, tls_redis.url, workers=2, key_prefix=prefix)
    watcher.wait_nodes(list(NODES))
    assert watcher.status()["store"]["kind"] == "redis"
    assert tls_redis.client().exists(f"{prefix}snapshot")

    url = tls_redis.url
    # The user's password is never shown.
    assert "s3cret" not in redact(url) and "***" in redact(url)

    def like(user: tuple[str, str] | None, tls: dict[str, str]) -> str:
        return RedisServer(tls_redis.workdir, tls_redis.port, user=user, tls=tls).url

    no_client_cert = {"ssl_ca_certs": tls_redis.tls["ssl_ca_certs"]}
    # Refused: a wrong password, no user, no client certificate; keys outside the pattern.
    refused = [
        like(("watcher", "wrong"), tls_redis.tls),
        like(None, tls_redis.tls),
        like(("watcher", PASSWORD), no_client_cert),
    ]
    for bad in refused:
        store = RedisStore(bad, prefix, 300.0)
        with pytest.raises(StoreError):
            store.ping()
        store.close()
    outside = RedisStore(url, "elsewhere:", 300.0)
    with pytest.raises(StoreError, match="permission|NOPERM"):
        outside.lead("someone", 3.0)
    outside.close()
