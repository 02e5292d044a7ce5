"""Bad answers from the metrics source never crash a poll and never read as 0 %.

The source here is a small HTTP server of the test's own that answers Prometheus's query API
with exactly the bad values under test: it is bad input, not a stand-in for Prometheus.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fixtures.ports import wait_for
from tests.integration.watcher_support import BadSource, answer, inst, vector

GOOD_CPU = vector(
    (inst("good-1:9100"), "42"),
    (inst("good-2"), "7.5"),
    (inst("nan-node"), "NaN"),
    (inst("inf-node"), "+Inf"),
    (inst("neg-node"), "-3"),
    (inst("over-node"), "150"),
    (inst("dup-node"), "10"),
    (inst("dup-node:9100"), "20"),
    ({"job": "node"}, "5"),
    (inst("text-node"), "abc"),
)
GOOD_MEMORY = vector((inst("good-1"), "55"), (inst("good-2"), "60"))


@pytest.fixture
def source() -> Iterator[BadSource]:
    src = BadSource()
    src.answers = {"cpu_q": GOOD_CPU, "mem_q": GOOD_MEMORY, "net_q": vector()}
    yield src
    src.close()


SETTINGS = {
    "cpu_query": "cpu_q",
    "memory_query": "mem_q",
    "extra_metrics": [
        {"key": "net_rx", "name": "net", "type": "Bandwidth", "unit": "bytes/s", "query": "net_q"}
    ],
    "provider_timeout": 1.0,
    "warm_start": False,
}


def counters(watcher) -> dict:
    return watcher.status()["counters"]


def test_bad_samples_are_rejected_one_by_one(source, make_watcher):
    source.answers["net_q"] = vector((inst("good-1"), "125000000"))  # not a %: > 100 is fine
    watcher = make_watcher(source.url, **SETTINGS)
    watcher.wait_nodes(["good-1", "good-2"], metrics=("memory",))
    nodes = watcher.json("/api/v1/nodes")["nodes"]
    assert set(nodes) == {"good-1", "good-2"}  # port stripped; every bad one left out
    assert nodes["good-1"]["metrics"]["cpu"]["latest"] == 42.0
    assert nodes["good-1"]["metrics"]["net_rx"]["latest"] == 125000000.0
    assert nodes["good-1"]["metrics"]["net_rx"]["unit"] == "bytes/s"
    rejected = counters(watcher)["rejected"]
    polls = counters(watcher)["polls"]
    assert polls >= 1
    for reason in ("nan", "inf", "negative", "over_100", "no_node_label", "not_a_number"):
        assert rejected[reason] >= 1, reason
    assert rejected["duplicate"] >= 2
    metrics = watcher.get("/metrics").text
    assert 'ballast_watcher_rejected_samples_total{reason="over_100"}' in metrics
    # The extra metric appears in the envelope with its configured type.
    envelope = watcher.json("/watcher?host=good-1")["data"]["NodeMetricsMap"]["good-1"]
    assert {"CPU", "Memory", "Bandwidth"} == {m["type"] for m in envelope["metrics"]}
    # Bad samples make no poll fail.
    assert watcher.status()["provider"]["ok"] is True


@pytest.mark.parametrize(
    "answer,reason",
    [
        ((500, "<html>internal error</html>"), "http_500"),
        ((200, "not json at all"), "bad_json"),
        ((200, json.dumps(["a", "list"])), "bad_json"),
        ((400, json.dumps({"status": "error", "error": "parse error"})), "query_error"),
        ((200, answer("matrix", [])), "bad_result"),
        ((200, json.dumps({"status": "success", "data": {"result": "nope"}})), "bad_json"),
        ("hang", "timeout"),
    ],
)
def test_a_failing_query_keeps_the_others_and_the_old_values(source, make_watcher, answer, reason):
    watcher = make_watcher(source.url, **SETTINGS)
    watcher.wait_nodes(["good-1"])
    if answer == "hang":
        source.delay = 1.5  # every query is slower than provider_timeout
    else:
        source.answers["cpu_q"] = answer
    wait_for(
        lambda: counters(watcher)["pollErrors"].get(reason, 0) >= 1,
        timeout=15,
        what=f"a poll error counted as {reason}",
    )
    status = watcher.status()
    assert status["provider"]["ok"] is False and status["provider"]["error"]
    assert watcher.get("/watcher/health").status_code == 503
    node = watcher.json("/api/v1/nodes/good-1")
    assert node["metrics"]["cpu"]["latest"] == 42.0  # the old value, never 0
    if answer != "hang":
        # The memory query still answers and keeps its metric fresh.
        before = node["metrics"]["memory"]["last"]
        wait_for(
            lambda: watcher.json("/api/v1/nodes/good-1")["metrics"]["memory"]["last"] > before,
            timeout=10,
            what="memory to keep updating",
        )
    assert watcher.get("/watcher").status_code == 200
    assert f'ballast_watcher_poll_errors_total{{reason="{reason}"}}' in watcher.get("/metrics").text
    source.delay = 0.0


def test_no_successful_poll_yet_is_500_not_zeroes(source, make_watcher):
    source.answers = {}  # every query 404s
    watcher = make_watcher(source.url, **SETTINGS)
    wait_for(lambda: counters(watcher)["polls"] >= 1, timeout=10, what="a poll")
    resp = watcher.get("/watcher")
    assert resp.status_code == 500
    assert "no metrics yet" in resp.json()["error"]
    assert watcher.get("/watcher/health").status_code == 503
    assert watcher.get("/readyz").status_code == 503
