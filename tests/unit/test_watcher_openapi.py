"""The watcher's /openapi.json names every route its app serves (but the dashboard's page)."""

from __future__ import annotations

import re

from watcher.api import create_app
from watcher.config import Config
from watcher.store import MemoryStore


def test_every_route_is_documented():
    app = create_app(Config(), MemoryStore(60.0), "w0")
    served = {
        re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static" and "GET" in rule.methods
    }
    documented = set(app.test_client().get("/openapi.json").json["paths"])
    undocumented = {p for p in served - documented if p != "/" and not p.startswith("/dashboard")}
    assert not undocumented, undocumented
    assert {"/api/v1/rebalancer/status", "/api/v1/rebalancer/decisions"} <= documented
