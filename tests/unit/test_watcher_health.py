"""The watcher's probes as pure functions: ready while something valid can be served, alive
unless the poller's seat is held with no tick for too long."""

from __future__ import annotations

import re

from watcher import health
from watcher.views import View

EXPIRY = 60.0
INTERVAL = 5.0


def view(last_sample: float, ok: bool = True, success: float | None = 0.0) -> View:
    row = [30.0, 1.0, 29.0, 31.0, 31.0, 30.0, 10, last_sample - 30, last_sample, 10.0]
    return View({
        "version": "v1", "built": last_sample, "source": "Prometheus", "window": 300.0,
        "expiry": EXPIRY, "metrics": {"cpu": {"name": "cpu", "type": "CPU", "unit": "%"}},
        "lastPoll": {"time": last_sample, "ok": ok, "error": None if ok else "cpu: refused"},
        "lastSuccess": success if success is None else last_sample, "leader": "w", "counters": {},
        "nodes": {"n1": {"cpu": row}},
    })  # fmt: skip


def test_ready_with_current_data():
    assert health.readiness(view(100.0), None, 101.0, INTERVAL) == (True, [])


def test_a_failed_poll_or_a_store_blip_is_named_but_keeps_the_replica_ready():
    ready, reasons = health.readiness(view(100.0, ok=False), "redis: refused", 120.0, INTERVAL)
    assert ready
    assert reasons[0] == "store: redis: refused"
    assert any(r.startswith("provider: cpu: refused") for r in reasons)
    assert any("marked stale" in r for r in reasons)


def test_unready_once_every_node_is_past_its_expiry():
    assert health.readiness(view(100.0), None, 100.0 + EXPIRY - 1, INTERVAL)[0]
    ready, reasons = health.readiness(view(100.0, ok=False), None, 100.0 + EXPIRY + 1, INTERVAL)
    assert not ready and "past its expiry" in reasons[-1]


def test_unready_without_a_snapshot_or_a_successful_poll():
    assert health.readiness(None, None, 0.0, INTERVAL) == (False, ["no snapshot yet"])
    ready, reasons = health.readiness(view(100.0, ok=False, success=None), None, 100.0, INTERVAL)
    assert not ready and reasons[-1] == "no successful poll yet"


def test_stale_mark_only_on_old_data_or_a_failed_poll():
    assert health.stale_mark(view(100.0), 100.0 + 2 * INTERVAL, INTERVAL) is None
    assert health.stale_mark(view(100.0), 100.0 + 2 * INTERVAL + 1, INTERVAL) == "data 11.0s old"
    mark = health.stale_mark(view(100.0, ok=False), 101.0, INTERVAL)
    assert mark == "data 1.0s old; last poll failed: cpu: refused"


def test_stale_mark_is_a_valid_header_whatever_the_store_answered():
    broken = view(100.0, ok=False)
    broken.last_poll["error"] = "cpu: HTTP 200, not JSON: '\x00\x01\t\n\x7f\ufffd\xe9 tail'"
    mark = health.stale_mark(broken, 101.0, INTERVAL)
    # gunicorn's rule for a header value (RFC 9110 field-value), as it checks every answer
    assert re.fullmatch(r"[ \t\x21-\x7e\x80-\xff]*", mark), mark
    assert mark.endswith("not JSON: '??????? tail'")


def test_liveness_judges_only_a_held_seat():
    limit = health.wedge_limit(INTERVAL, 2.0)
    assert limit == health.WEDGED_POLLS * INTERVAL + health.SLOW_TICK * 2.0
    assert health.liveness(None, None, 1e9, limit) == (True, None)  # no holder: nothing to judge
    assert health.liveness(100.0, 150.0, 150.0 + limit, limit) == (True, None)
    alive, why = health.liveness(100.0, 150.0, 150.0 + limit + 1, limit)
    assert not alive and "wedged" in why


def test_a_seat_held_with_no_poll_started_is_not_alive():
    limit = 10.0
    # A tick older than the seat is the previous holder's: this one never ticked.
    assert health.liveness(100.0, 90.0, 100.0 + limit, limit) == (True, None)
    alive, why = health.liveness(100.0, 90.0, 100.0 + limit + 1, limit)
    assert not alive and "no poll started" in why
    assert not health.liveness(100.0, None, 100.0 + limit + 1, limit)[0]
