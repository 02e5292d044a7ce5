"""/api/v1/decisions on the scheduler's status server: routes, token, standby, OpenAPI."""

from __future__ import annotations

import pytest
import requests

from scheduler.backend import decisions
from scheduler.backend.decisions import DecisionStore
from scheduler.serve.decisions import DecisionsAPI
from scheduler.serve.status import StatusServer, Telemetry

T = 5
COUNTS = {"p": 0, "n": [3, 3, 0, 0, 0, 3], "f": [3, {"Insufficient cpu": 3}, {}, None], "c": 150}
PLACED = {**COUNTS, "s": [[], ["n1", None, 1, None, None], []]}


@pytest.fixture
def served():
    store = DecisionStore()
    store.add("ns/web-1", "u1", 10.0, "ballast", decisions.BINDING, "n1", PLACED)
    store.add("ns/big", "u2", 11.0, "ballast", decisions.UNSCHEDULABLE, "", {**COUNTS, "m": "0/3"})
    store.add("other/x y", "u3", 12.0, "lab", decisions.BINDING, "n2", PLACED)
    leader = {"leading": True, "holder": "me"}
    api = DecisionsAPI(store, lambda: (leader["leading"], leader["holder"]), token="s3cret")
    server = StatusServer("127.0.0.1", 0, Telemetry(), lambda: (True, "ok"), api)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", leader
    finally:
        server.stop()


AUTH = {"Authorization": "Bearer s3cret"}


def test_one_pod_and_unknown_pods(served):
    url, _ = served
    doc = requests.get(f"{url}/api/v1/decisions/ns/web-1", headers=AUTH, timeout=T).json()
    assert doc["pod"] == "web-1" and doc["attempts"][0]["node"] == "n1"
    assert doc["attempts"][0]["scores"]["winner"]["node"] == "n1"
    assert doc["attempts"][0]["filters"]["byReason"] == {"Insufficient cpu": 3}
    quoted = requests.get(f"{url}/api/v1/decisions/other/x%20y", headers=AUTH, timeout=T)
    assert quoted.status_code == 200 and quoted.json()["attempts"][0]["profile"] == "lab"
    missing = requests.get(f"{url}/api/v1/decisions/ns/nope", headers=AUTH, timeout=T)
    assert missing.status_code == 404 and "ns/nope" in missing.json()["error"]
    bad = requests.get(f"{url}/api/v1/decisions/ns", headers=AUTH, timeout=T)
    assert bad.status_code == 404


def test_list_filters_and_bounds(served):
    url, _ = served

    def names(**params):
        resp = requests.get(f"{url}/api/v1/decisions", params=params, headers=AUTH, timeout=T)
        assert resp.status_code == 200, resp.text
        return [item["pod"] for item in resp.json()["items"]]

    assert names() == ["x y", "big", "web-1"]
    assert names(outcome="unschedulable") == ["big"]
    assert names(node="n1") == ["web-1"]
    assert names(profile="lab") == ["x y"]
    assert names(namespace="ns", limit=1) == ["big"]
    for params in ({"limit": 0}, {"limit": 501}, {"limit": "x"}, {"outcome": "won"}):
        resp = requests.get(f"{url}/api/v1/decisions", params=params, headers=AUTH, timeout=T)
        assert resp.status_code == 400, params


def test_token_guards_the_decisions_only(served):
    url, _ = served
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
        resp = requests.get(f"{url}/api/v1/decisions", headers=headers, timeout=T)
        assert resp.status_code == 401 and "Bearer" in resp.headers["WWW-Authenticate"]
    assert requests.get(f"{url}/metrics", timeout=T).status_code == 200
    spec = requests.get(f"{url}/openapi.json", timeout=T).json()
    assert "/api/v1/decisions/{namespace}/{pod}" in spec["paths"]
    assert spec["security"] == [{"bearer": []}]


def test_a_standby_names_the_leader(served):
    url, leader = served
    leader.update(leading=False, holder="replica-a_1234")
    resp = requests.get(f"{url}/api/v1/decisions/ns/web-1", headers=AUTH, timeout=T)
    assert resp.status_code == 503
    assert resp.json()["leader"] == "replica-a_1234"
    assert resp.headers["X-Ballast-Leader"] == "replica-a_1234"


def test_recording_off_says_so():
    api = DecisionsAPI(None, lambda: (True, "me"))
    code, doc, _ = api.answer("/api/v1/decisions", "")
    assert code == 503 and "--decisions 0" in doc["error"]


def test_a_token_file_is_read_again_when_the_secret_rotates(tmp_path):
    from scheduler.backend.metrics_client import BearerToken

    path = tmp_path / "token"
    path.write_text("first\n")
    api = DecisionsAPI(DecisionStore(), lambda: (True, "me"), BearerToken(path=str(path)).value)
    assert api.answer("/api/v1/decisions", "")[0] == 401
    assert api.answer("/api/v1/decisions", "Bearer first")[0] == 200
    path.write_text("rotated-token\n")
    assert api.answer("/api/v1/decisions", "Bearer first")[0] == 401
    assert api.answer("/api/v1/decisions", "Bearer rotated-token")[0] == 200
