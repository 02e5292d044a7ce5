"""The watcher's way to the scheduler's decisions (watcher/decisions_proxy.py), against a real
scheduler status server on loopback."""

from __future__ import annotations

import itertools
import json

import pytest

from scheduler.backend import decisions
from scheduler.backend.decisions import DecisionStore
from scheduler.serve.decisions import DecisionsAPI
from scheduler.serve.status import StatusServer, Telemetry
from tests.fixtures.ports import free_port
from watcher import decisions_proxy
from watcher.config import Config

DETAIL = {"p": 0, "n": [1, 1, 1, 0, 0, 1], "f": [0, {}, {}, None], "c": 100}


@pytest.fixture
def scheduler(tmp_path):
    store = DecisionStore()
    store.add("ns/web", "u1", 1.0, "ballast", decisions.BINDING, "n1", DETAIL)
    roles = {"answers": itertools.repeat(True)}
    api = DecisionsAPI(store, lambda: (next(roles["answers"]), "leader-pod_1"), token="t0k")
    server = StatusServer("127.0.0.1", 0, Telemetry(), lambda: (True, "ok"), api)
    server.start()
    token = tmp_path / "token"
    token.write_text("t0k\n")
    config = Config(
        scheduler_url=f"http://127.0.0.1:{server.port}", scheduler_token_file=str(token)
    )
    try:
        yield config, roles
    finally:
        server.stop()


def test_answers_pass_through_with_the_token(scheduler):
    config, _ = scheduler
    status, body = decisions_proxy.forward(config, ("ns", "web"), b"")
    assert status == 200 and json.loads(body)["attempts"][0]["node"] == "n1"
    status, body = decisions_proxy.forward(config, None, b"outcome=binding&limit=5")
    assert status == 200 and [i["pod"] for i in json.loads(body)["items"]] == ["web"]
    status, body = decisions_proxy.forward(config, ("ns", "gone"), b"")
    assert status == 404 and "ns/gone" in json.loads(body)["error"]


def test_a_standby_is_asked_again_then_named(scheduler):
    config, roles = scheduler
    roles["answers"] = iter([False, False, True])
    assert decisions_proxy.forward(config, ("ns", "web"), b"")[0] == 200
    roles["answers"] = itertools.repeat(False)
    status, body = decisions_proxy.forward(config, ("ns", "web"), b"")
    assert status == 503 and json.loads(body)["leader"] == "leader-pod_1"


def test_without_a_scheduler(tmp_path):
    assert decisions_proxy.forward(Config(), None, b"")[0] == 404
    down = Config(scheduler_url=f"http://127.0.0.1:{free_port()}")
    status, body = decisions_proxy.forward(down, None, b"")
    assert status == 502 and "cannot reach the scheduler" in json.loads(body)["error"]
    wrong = Config(scheduler_url=down.scheduler_url, scheduler_token_file=str(tmp_path / "none"))
    assert decisions_proxy.forward(wrong, None, b"")[0] == 502
