"""The watcher's way to the rebalancer's /status and /decisions (watcher/decisions_proxy.py,
/api/v1/rebalancer/...), against the rebalancer's own status server on loopback, and against
small servers that answer badly, slowly or not at all."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scheduler.rebalancer.status import Decision, DecisionLog, StatusServer, Telemetry
from tests.fixtures.ports import free_port
from watcher import decisions_proxy
from watcher.api import create_app
from watcher.config import Config
from watcher.store import MemoryStore

ROUND = {
    "time": 100.0,
    "leading": True,
    "hot": {"n1": 3, "n2": 1},
    "confirmed": ["n1"],
    "unknown": {},
    "resting": {},
    "high": {"cpu": 80.0},
    "low": {"cpu": 50.0},
    "evicted": [],
    "wouldEvict": ["ns/web-1"],
}


def state(leading: bool = True) -> dict:
    return {
        "identity": "rebalancer-0_ab12",
        "leading": leading,
        "dryRun": True,
        "enabled": True,
        "profile": "ballast",
        "consecutive": 3,
        "lastRound": ROUND,
    }


@pytest.fixture
def rebalancer():
    log = DecisionLog()
    log.add(Decision(99.0, "skip", "n1", "ns/db-0", "no-target", "no node below 50 %"))
    log.add(Decision(100.0, "would-evict", "n1", "ns/web-1", "dry-run", "cpu 91 % -> 62 %", "n3"))
    roles = {"leading": iter(())}

    def status() -> dict:
        return state(next(roles["leading"], True))

    server = StatusServer("127.0.0.1", 0, Telemetry(), log, status, lambda: (True, "ok"))
    server.start()
    try:
        yield Config(rebalancer_url=f"http://127.0.0.1:{server.port}/"), roles
    finally:
        server.stop()


def fetch(config: Config, path: str, query: bytes = b"", **kw) -> tuple[int, dict]:
    status, body = decisions_proxy.fetch(decisions_proxy.rebalancer(config), path, query, **kw)
    return status, json.loads(body)


def test_status_and_decisions_pass_through(rebalancer):
    config, _ = rebalancer
    status, doc = fetch(config, "/status")
    assert status == 200 and doc["lastRound"]["hot"] == {"n1": 3, "n2": 1}
    assert doc["dryRun"] is True and doc["identity"] == "rebalancer-0_ab12"
    status, doc = fetch(config, "/decisions", b"limit=1")
    assert status == 200 and len(doc["decisions"]) == 1
    d = doc["decisions"][0]
    assert (d["action"], d["node"], d["pod"], d["reason"], d["target"]) == (
        "would-evict", "n1", "ns/web-1", "dry-run", "n3"
    )  # fmt: skip
    status, doc = fetch(config, "/decisions", b"limit=x")  # the rebalancer's own 400
    assert status == 400 and "limit" in doc["error"]


def test_a_standby_is_asked_again(rebalancer):
    config, roles = rebalancer
    roles["leading"] = iter([False, False])
    status, doc = fetch(config, "/status")
    assert status == 200 and doc["leading"] is True
    roles["leading"] = iter([False] * decisions_proxy.TRIES)  # only standbys: the last answer
    status, doc = fetch(config, "/status")
    assert status == 200 and doc["leading"] is False
    roles["leading"] = iter([False])  # /decisions says who answered too
    status, doc = fetch(config, "/decisions")
    assert status == 200 and doc["leading"] is True and len(doc["decisions"]) == 2


def test_unset_is_not_configured():
    status, doc = fetch(Config(), "/status")
    assert status == 404 and doc["configured"] is False and "rebalancer_url" in doc["error"]


def test_unreachable_is_a_502():
    config = Config(rebalancer_url=f"http://127.0.0.1:{free_port()}")
    status, doc = fetch(config, "/status")
    assert status == 502 and "cannot reach the rebalancer" in doc["error"]


class Bad(BaseHTTPRequestHandler):
    """Answers by path: /status plain text, /decisions a 500 in JSON, /slow headers then a
    trickle, /silent nothing at all."""

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/silent":
            time.sleep(5)
            return
        body, status = b"<html>not a rebalancer</html>", 200
        if self.path == "/decisions":
            body, status = b'{"error": "boom"}', 500
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) * (20 if self.path == "/slow" else 1)))
        self.end_headers()
        for _ in range(20 if self.path == "/slow" else 1):
            self.wfile.write(body)
            self.wfile.flush()
            if self.path == "/slow":
                time.sleep(0.2)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def bad():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Bad)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield Config(rebalancer_url=f"http://127.0.0.1:{httpd.server_address[1]}")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_bad_answers_are_502(bad):
    status, doc = fetch(bad, "/status")
    assert status == 502 and "without JSON" in doc["error"] and "not a rebalancer" in doc["error"]
    status, doc = fetch(bad, "/decisions")
    assert status == 502 and "answered 500" in doc["error"]


@pytest.mark.parametrize("path", ["/silent", "/slow"])
def test_slow_answers_are_504_within_the_timeout(bad, path):
    started = time.monotonic()
    status, doc = fetch(bad, path, timeout=1.0)
    took = time.monotonic() - started
    assert status == 504 and "did not answer within 1s" in doc["error"]
    assert took < 1.5, took  # a trickle of bytes does not stretch it


def test_a_listener_that_never_accepts_is_a_504():
    with socket.socket() as sock:  # listens, never accepts: connects, then nothing
        sock.bind(("127.0.0.1", 0))
        sock.listen(0)
        config = Config(rebalancer_url=f"http://127.0.0.1:{sock.getsockname()[1]}")
        started = time.monotonic()
        status, _ = fetch(config, "/status", timeout=0.5)
        assert status == 504 and time.monotonic() - started < 1.0


def test_the_watcher_routes(rebalancer):
    config, _ = rebalancer
    client = create_app(config, MemoryStore(60.0), "w0").test_client()
    resp = client.get("/api/v1/rebalancer/status")
    assert resp.status_code == 200 and resp.json["lastRound"]["confirmed"] == ["n1"]
    resp = client.get("/api/v1/rebalancer/decisions?limit=5")
    assert [d["pod"] for d in resp.json["decisions"]] == ["ns/db-0", "ns/web-1"]
    off = create_app(Config(), MemoryStore(60.0), "w0").test_client()
    resp = off.get("/api/v1/rebalancer/decisions")
    assert resp.status_code == 404 and resp.json["configured"] is False
    down = Config(rebalancer_url=f"http://127.0.0.1:{free_port()}")
    resp = create_app(down, MemoryStore(60.0), "w0").test_client().get("/api/v1/rebalancer/status")
    assert resp.status_code == 502 and resp.is_json


def test_the_setting_is_checked_and_read_from_the_environment():
    from watcher import config as configuration
    from watcher.errors import ConfigError

    env = {"BALLAST_PROMETHEUS_URL": "http://prometheus:9090"}
    url = "http://ballast-rebalancer:10260"
    assert configuration.load(env={**env, "BALLAST_REBALANCER_URL": url}).rebalancer_url == url
    assert configuration.load(env=env, overrides={"rebalancer_url": url}).rebalancer_url == url
    with pytest.raises(ConfigError, match="rebalancer_url must be an http"):
        configuration.load(env={**env, "BALLAST_REBALANCER_URL": "ballast-rebalancer:10260"})


def test_a_token_guards_status_and_decisions_and_the_watcher_sends_it(tmp_path):
    from scheduler.backend.metrics_client import BearerToken

    token = tmp_path / "token"
    token.write_text("first\n")
    server = StatusServer("127.0.0.1", 0, Telemetry(), DecisionLog(), state,
                          lambda: (True, "ok"), BearerToken(path=str(token)).value)  # fmt: skip
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}"
        for path in ("/status", "/decisions"):
            status, doc = fetch(Config(rebalancer_url=url), path)
            assert status == 401 and "token" in doc["error"], path
        for path in ("/metrics", "/healthz"):  # scraped and probed without one
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
                conn.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
                assert conn.recv(64).startswith(b"HTTP/1.0 200"), path
        with_token = Config(rebalancer_url=url, rebalancer_token_file=str(token))
        assert fetch(with_token, "/status")[0] == 200
        # The Secret rotates (the file is replaced): the next request needs the new one.
        token.write_text("second-and-longer\n")
        assert fetch(Config(rebalancer_url=url, rebalancer_token_file=str(tmp_path / "x")),
                     "/status")[0] == 502  # fmt: skip
        stale = tmp_path / "stale"
        stale.write_text("first\n")
        assert (
            fetch(Config(rebalancer_url=url, rebalancer_token_file=str(stale)), "/status")[0] == 401
        )
        assert fetch(with_token, "/decisions")[0] == 200
    finally:
        server.stop()
