"""The watcher client: parsing both APIs, ageing, ETag, and bad answers changing only counters.

The watcher side is a tiny local HTTP server that answers what each test sets, so a malformed
or failing answer can be produced on purpose.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scheduler.backend.metrics_client import (
    LOAD_WATCHER,
    MalformedAnswer,
    MetricsClient,
    current_loads,
    duration_seconds,
    keep_sample_times,
    parse_ballast,
    parse_envelope,
)


def ballast_doc(cpu_avg: float = 40.0, age: float = 2.0) -> dict:
    metric = {
        "type": "CPU",
        "unit": "percent",
        "avg": cpu_avg,
        "std": 3.0,
        "latest": 44.0,
        "p95": 46.0,
        "state": "fresh",
        "age": age,
        "horizon": 30.0,
        "expiry": 300.0,
    }
    return {
        "timestamp": time.time(),
        "window": {"duration": "5m", "seconds": 300},
        "nodes": {"n1": {"state": "fresh", "age": age, "metrics": {"cpu": metric}}},
    }


def envelope(end: int) -> dict:
    metrics = [
        {"name": "cpu", "type": "CPU", "operator": "AVG", "rollup": "15m", "value": 12.5},
        {"name": "cpu", "type": "CPU", "operator": "STD", "rollup": "15m", "value": 3.0},
        {"name": "mem", "type": "Memory", "operator": "Latest", "rollup": "15m", "value": 41.0},
    ]
    return {
        "timestamp": end,
        "window": {"duration": "15m", "start": end - 900, "end": end},
        "source": "Prometheus",
        "data": {"NodeMetricsMap": {"n1": {"metrics": metrics, "tags": {}, "metadata": {}}}},
    }


def test_parse_ballast_converts_ages_to_local_sample_times():
    fetched = parse_ballast(ballast_doc(age=2.0), fetched_at=1000.0)
    m = fetched["n1"]["cpu"]
    assert (m.avg, m.std, m.latest, m.p95) == (40.0, 3.0, 44.0, 46.0)
    assert m.last_sample == 998.0
    loads = current_loads(fetched, "ballast", now=1010.0)
    stats = loads["n1"].metrics["cpu"]
    assert stats.age == 12.0 and stats.state == "fresh" and stats.expiry == 300.0


def test_a_sample_read_again_keeps_its_first_local_time():
    # The watcher's answer ages its sample when built and the fetch adds latency: the same
    # sample (its watcher time `last` unchanged) reads 0.4 s younger the second time.
    first = ballast_doc(age=2.0)
    first["nodes"]["n1"]["metrics"]["cpu"]["last"] = 5000.0
    before = parse_ballast(first, fetched_at=1000.0)
    again = parse_ballast(first, fetched_at=1000.4)
    assert again["n1"]["cpu"].last_sample == 998.4  # as parsed: a newer time, the same sample
    kept = keep_sample_times(again, before)
    assert kept["n1"]["cpu"].last_sample == 998.0
    newer = ballast_doc(age=2.0)
    newer["nodes"]["n1"]["metrics"]["cpu"]["last"] = 5003.0
    moved = keep_sample_times(parse_ballast(newer, fetched_at=1003.0), before)
    assert moved["n1"]["cpu"].last_sample == 1001.0  # a new sample: its own time
    unnamed = keep_sample_times(parse_ballast(ballast_doc(age=1.0), fetched_at=1000.4), before)
    assert unnamed["n1"]["cpu"].last_sample == 999.4  # no `last`: as the age says


def test_states_follow_age_past_horizon_and_expiry():
    fetched = parse_ballast(ballast_doc(age=0.0), fetched_at=1000.0)
    states = [
        current_loads(fetched, "ballast", now)["n1"].metrics["cpu"].state
        for now in (1029.0, 1031.0, 1299.0, 1301.0)
    ]
    assert states == ["fresh", "stale", "stale", "expired"]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.update(nodes=[]), "nodes"),
        (lambda d: d["nodes"]["n1"]["metrics"]["cpu"].update(avg="40"), "avg"),
        (lambda d: d["nodes"]["n1"]["metrics"]["cpu"].update(age=-1), "age"),
        (lambda d: d["nodes"]["n1"]["metrics"]["cpu"].update(state="warm"), "state"),
        (lambda d: d["nodes"]["n1"]["metrics"]["cpu"].update(std=float("nan")), "std"),
    ],
)
def test_malformed_ballast_answers_name_the_field(mutate, field):
    doc = ballast_doc()
    mutate(doc)
    with pytest.raises(MalformedAnswer, match=field):
        parse_ballast(doc, fetched_at=1000.0)


def test_parse_upstream_envelope():
    fetched = parse_envelope(envelope(1000), fetched_at=1005.0, now_wall=1005.0, horizon=120)
    cpu, mem = fetched["n1"]["cpu"], fetched["n1"]["memory"]
    assert (cpu.avg, cpu.std, cpu.latest) == (12.5, 3.0, None)
    assert mem.latest == 41.0
    assert cpu.last_sample == 1000.0 and cpu.expiry == 900.0
    assert current_loads(fetched, LOAD_WATCHER, 1200.0)["n1"].metrics["cpu"].state == "stale"


def test_go_durations():
    assert duration_seconds("15m", 1) == 900
    assert duration_seconds("1h30m", 1) == 5400
    assert duration_seconds("bogus", 7) == 7


class FakeWatcher:
    """Serves whatever `answers[path]` holds: (status, body bytes, headers)."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                owner.requests.append((self.path, dict(self.headers)))
                status, body, headers = owner.answers.get(self.path, (404, b"", {}))
                if headers.get("ETag") and self.headers.get("If-None-Match") == headers["ETag"]:
                    status, body = 304, b""
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def watcher():
    w = FakeWatcher()
    yield w
    w.close()


def test_malformed_answer_changes_only_a_counter(watcher):
    watcher.answers["/api/v1/nodes"] = (200, json.dumps(ballast_doc(40.0)).encode(), {})
    client = MetricsClient(watcher.url)
    assert client.refresh()
    good = client.loads()["n1"].metrics["cpu"].avg
    for body in (b"{not json", json.dumps({"nodes": "x"}).encode()):
        watcher.answers["/api/v1/nodes"] = (200, body, {})
        assert not client.refresh()
        assert client.loads()["n1"].metrics["cpu"].avg == good
    assert client.malformed == 2
    assert client.last_success is not None


def test_etag_skips_unchanged_answers(watcher):
    watcher.answers["/api/v1/nodes"] = (200, json.dumps(ballast_doc()).encode(), {"ETag": '"v1"'})
    client = MetricsClient(watcher.url)
    assert client.refresh() and client.refresh()
    assert watcher.requests[1][1].get("If-None-Match") == '"v1"'
    assert "n1" in client.loads()


def test_on_new_is_told_of_a_newer_sample_not_of_a_new_body(watcher):
    # The watcher's body changes every half second (ages, a new ETag) between its polls: only
    # a sample newer than any before is news (the rebalancer's roundOnNewSamples waits on it).
    told: list[float] = []
    client = MetricsClient(watcher.url)
    client.on_new = lambda: told.append(time.time())

    def answer(last: float, age: float, etag: str) -> None:
        doc = ballast_doc(age=age)
        doc["nodes"]["n1"]["metrics"]["cpu"]["last"] = last
        watcher.answers["/api/v1/nodes"] = (200, json.dumps(doc).encode(), {"ETag": etag})

    answer(5000.0, 1.0, '"a"')
    assert client.refresh() and len(told) == 1  # the first sample
    answer(5000.0, 1.5, '"b"')  # the same sample, older by half a second: a new body
    assert client.refresh() and len(told) == 1
    assert client.refresh() and len(told) == 1  # 304
    answer(5003.0, 0.2, '"c"')  # the watcher polled
    assert client.refresh() and len(told) == 2
    watcher.answers["/api/v1/nodes"] = (200, b"{not json", {})
    assert not client.refresh() and len(told) == 2  # a bad answer is no news


def test_falls_back_to_the_upstream_envelope(watcher):
    watcher.answers["/watcher"] = (200, json.dumps(envelope(int(time.time()))).encode(), {})
    client = MetricsClient(watcher.url)
    assert client.refresh()
    assert client.mode == LOAD_WATCHER
    assert client.loads()["n1"].metrics["cpu"].avg == 12.5
    assert client.loads()["n1"].source == LOAD_WATCHER


def test_unreachable_watcher_keeps_last_good_data_ageing(watcher):
    watcher.answers["/api/v1/nodes"] = (200, json.dumps(ballast_doc(age=0)).encode(), {})
    client = MetricsClient(watcher.url, timeout=0.5)
    assert client.refresh()
    watcher.close()
    assert not client.refresh()
    assert client.failures == 1 and client.malformed == 0
    assert client.loads()["n1"].metrics["cpu"].avg == 40.0
