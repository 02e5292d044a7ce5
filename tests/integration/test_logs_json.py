"""`--log-format json` on a real watcher (gunicorn master and workers on Redis) and scheduler:
every line a JSON object, the level given respected."""

from __future__ import annotations

import json

from tests.fixtures.ports import wait_for


def json_lines(text: str) -> list[dict]:
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "no log lines"
    return [json.loads(line) for line in lines]  # raises on any line that is not JSON


def test_the_watcher_logs_json_lines_from_master_and_workers(
    prometheus, redis_server, make_watcher
):
    env = {"BALLAST_LOG_FORMAT": "json", "BALLAST_LOG_LEVEL": "INFO"}
    watcher = make_watcher(
        prometheus.url, redis_server.url, env=env, workers=2, key_prefix="logs-json:"
    )
    wait_for(lambda: watcher.status()["provider"]["ok"], timeout=30, what="a poll")
    records = json_lines(watcher.log_path.read_text())
    messages = [r["message"] for r in records]
    assert sum("API worker" in m for m in messages) >= 2  # both workers' lines
    assert any("listening on" in m for m in messages)  # the master's
    assert {r["level"] for r in records} <= {"INFO", "WARNING", "ERROR"}
