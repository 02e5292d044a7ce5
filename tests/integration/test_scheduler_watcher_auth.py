"""The scheduler's metrics client against a real watcher with bearer-token auth on."""

from __future__ import annotations

import pytest

from scheduler.backend.metrics_client import BearerToken, MetricsClient
from tests.fixtures.ports import wait_for
from tests.fixtures.watcher import WatcherProcess

NODES = {"auth-1": (30.0, 40.0), "auth-2": (60.0, 20.0)}
TOKEN = "rotate-me-1"


@pytest.fixture(scope="module")
def guarded(exporter, prometheus, tmp_path_factory):
    for node, (cpu, memory) in NODES.items():
        exporter.set(node, cpu=cpu, memory=memory)
    proc = WatcherProcess(
        tmp_path_factory.mktemp("watcher-auth"),
        prometheus.url,
        api_token=TOKEN,
        api_open_paths=["/watcher"],
    ).start()
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}

        def ready() -> bool:
            doc = proc.get("/api/v1/nodes", headers=auth).json().get("nodes") or {}
            return all(doc.get(n, {}).get("metrics", {}).get("cpu") for n in NODES)

        wait_for(ready, timeout=30, what="both nodes in the watcher")
        yield proc
    finally:
        proc.stop()


def client(url: str, token: BearerToken | None = None) -> MetricsClient:
    return MetricsClient(url, timeout=3.0, token=token)


def test_token_reads_the_guarded_api(guarded):
    c = client(guarded.url, BearerToken(TOKEN))
    assert c.refresh(), c.last_error
    assert c.mode == "ballast"
    assert set(NODES) <= set(c.loads())
    assert c.loads()["auth-2"].metrics["cpu"].avg == pytest.approx(60.0, abs=5)
    assert c.unauthorized == 0


def test_without_the_token_the_client_falls_back_and_counts_it(guarded):
    c = client(guarded.url)
    assert not c.refresh()
    assert c.unauthorized == 1 and c.failures == 1
    assert "watcherToken" in (c.last_error or "")
    assert c.loads() == {}  # no data: every node takes the allocation fallback
    wrong = client(guarded.url, BearerToken("nope"))
    assert not wrong.refresh()
    assert wrong.unauthorized == 1


def test_a_rotated_token_file_is_picked_up(guarded, tmp_path):
    path = tmp_path / "token"
    path.write_text("old-token\n")
    token = BearerToken(path=str(path))
    c = client(guarded.url, token)
    assert not c.refresh() and c.unauthorized == 1
    path.write_text(TOKEN + "\n")
    assert c.refresh(), c.last_error
    assert set(NODES) <= set(c.loads())


def test_open_paths_serve_trimaran_without_a_token(guarded):
    # Trimaran reads /watcher and cannot send a token; the rest stays guarded.
    assert guarded.get("/watcher").status_code == 200
    assert guarded.get("/api/v1/status").status_code == 401
    assert guarded.get("/api/v1/nodes").status_code == 401
