"""The watcher's HTTP API against a real Prometheus: wire format, /api/v1, HTTP behaviour."""

from __future__ import annotations

import gzip

import pytest
import requests

from shared import wire
from tests.fixtures.watcher import WatcherProcess

NODES = {f"api-{i:02d}": (10.0 + 4 * i, 20.0 + 3 * i) for i in range(20)}
ORIGIN = "http://dashboard.example"
NET_RX = {
    "key": "net_rx",
    "name": "node_network_receive_bytes",
    "type": "Bandwidth",
    "unit": "bytes/s",
    "query": "sum by ($label) (irate(node_network_receive_bytes_total[$range]))",
}


# The same answers from each PromQL store the session runs (tests/fixtures/): Prometheus, and
# VictoriaMetrics, whose MetricsQL differs at the edges (rate windows, lookback, latency), and a
# Thanos querier over a sidecar.
@pytest.fixture(scope="module", params=["prometheus", "victoriametrics", "thanos"])
def watcher(request, exporter, tmp_path_factory):
    store = request.getfixturevalue(request.param)
    for i, (node, (cpu, memory)) in enumerate(NODES.items()):
        exporter.set(node, cpu=cpu, memory=memory, net_rx=1000.0 * (i + 1))
    proc = WatcherProcess(
        tmp_path_factory.mktemp("watcher-api"),
        store.url,
        cors_origins=[ORIGIN],
        extra_metrics=[NET_RX],
    ).start()
    try:
        proc.wait_nodes(list(NODES), metrics=("cpu", "memory", "net_rx"))
        yield proc
    finally:
        proc.stop()


def test_envelope_is_load_watchers_field_by_field(watcher):
    resp = watcher.get("/watcher")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "application/json"
    doc = resp.json()
    assert set(doc) == {"timestamp", "window", "source", "data"}
    assert type(doc["timestamp"]) is int
    assert doc["source"] == "Prometheus"
    assert doc["window"] == {
        "duration": "5m",
        "start": doc["timestamp"] - 300,
        "end": doc["timestamp"],
    }
    assert set(doc["data"]) == {"NodeMetricsMap"}
    node_map = doc["data"]["NodeMetricsMap"]
    for node in NODES:
        entry = node_map[node]
        assert set(entry) == {"metrics", "tags", "metadata"}
        assert entry["tags"] == {} and entry["metadata"] == {"dataCenter": ""}
        pairs = []
        for m in entry["metrics"]:
            assert set(m) == {"name", "type", "operator", "rollup", "value"}
            assert m["rollup"] == "5m"
            assert isinstance(m["value"], float)
            if m["type"] != wire.BANDWIDTH:
                assert 0.0 <= m["value"] <= 100.0
            assert m["type"] in wire.METRIC_TYPES and m["operator"] in wire.OPERATORS
            pairs.append((m["type"], m["operator"]))
        # load-watcher's order from Prometheus: every metric's AVG, then every metric's STD.
        types = (wire.CPU, wire.MEMORY, wire.BANDWIDTH)
        assert pairs == [(t, op) for op in (wire.AVG, wire.STD) for t in types]
        names = {m["type"]: m["name"] for m in entry["metrics"]}
        assert names == {
            "CPU": "node_cpu_utilisation",
            "Memory": "node_memory_utilisation",
            "Bandwidth": "node_network_receive_bytes",
        }
    parsed = wire.parse_envelope(doc)  # the shared client-side parser accepts it
    assert set(NODES) <= set(parsed.nodes)


def test_host_query_and_unknown_host(watcher):
    doc = watcher.json("/watcher?host=api-03")
    assert list(doc["data"]["NodeMetricsMap"]) == ["api-03"]
    memory = [
        m["value"]
        for m in doc["data"]["NodeMetricsMap"]["api-03"]["metrics"]
        if m["type"] == "Memory" and m["operator"] == "AVG"
    ]
    assert abs(memory[0] - NODES["api-03"][1]) <= 2
    resp = watcher.get("/watcher?host=no-such-node")
    assert resp.status_code == 404
    assert resp.headers["Content-Type"].startswith("text/plain")
    assert watcher.get("/watcher/health").status_code == 200


def test_ballasts_latest_only_when_asked(watcher):
    doc = watcher.json("/watcher?host=api-03&operators=Latest,AVG")
    metrics = doc["data"]["NodeMetricsMap"]["api-03"]["metrics"]
    assert [(m["type"], m["operator"]) for m in metrics] == [
        (t, op) for op in (wire.LATEST, wire.AVG) for t in (wire.CPU, wire.MEMORY, wire.BANDWIDTH)
    ]
    latest = {m["type"]: m["value"] for m in metrics if m["operator"] == wire.LATEST}
    assert abs(latest["Memory"] - NODES["api-03"][1]) <= 2
    everyone = watcher.json("/watcher?operators=AVG,STD,Latest")["data"]["NodeMetricsMap"]
    assert all(len(everyone[n]["metrics"]) == 9 for n in NODES)
    for bad in ("latest", "AVG,AVG", "AVG,"):
        resp = watcher.get(f"/watcher?operators={bad}")
        assert resp.status_code == 400 and "operators" in resp.json()["error"], bad


def test_api_v1_node_has_every_statistic_and_staleness(watcher):
    node = watcher.json("/api/v1/nodes/api-05")
    assert node["state"] == "fresh" and node["age"] >= 0
    cpu = node["metrics"]["cpu"]
    assert cpu["type"] == "CPU" and cpu["unit"] == "percent"
    for key in ("avg", "std", "min", "max", "p95", "latest", "count", "first", "last"):
        assert key in cpu
    assert cpu["min"] <= cpu["avg"] <= cpu["max"] and cpu["first"] <= cpu["last"]
    assert cpu["state"] == "fresh" and cpu["expiry"] == 300.0
    assert 2.0 <= cpu["horizon"] <= 300.0  # between two poll intervals and the expiry
    doc = watcher.json("/api/v1/nodes")
    assert doc["window"] == {"duration": "5m", "seconds": 300.0}
    assert doc["lastPoll"]["ok"] is True and doc["source"] == "Prometheus"


def test_extra_metric_reads_the_receive_rate(watcher):
    for i, node in enumerate(NODES):
        net = watcher.json(f"/api/v1/nodes/{node}")["metrics"]["net_rx"]
        assert net["type"] == "Bandwidth" and net["unit"] == "bytes/s"
        # 5 %: one irate() sample moves with the scrape's timing (see test_watcher_accuracy.py).
        assert abs(net["avg"] - 1000.0 * (i + 1)) <= 0.05 * 1000.0 * (i + 1)


def test_samples_of_one_node(watcher):
    doc = watcher.json("/api/v1/nodes/api-01/samples?metric=memory")
    samples = doc["samples"]
    assert len(samples) >= 2
    times = [t for t, _ in samples]
    assert times == sorted(times)
    assert all(abs(v - NODES["api-01"][1]) <= 2 for _, v in samples)


def test_etag_gives_304_for_an_unchanged_answer(watcher):
    seen_304 = False
    for _ in range(10):  # a poll may land between the two requests and change the answer
        first = watcher.get("/watcher")
        again = watcher.get("/watcher", headers={"If-None-Match": first.headers["ETag"]})
        if again.status_code == 304:
            assert again.content == b""
            seen_304 = True
            break
        assert again.status_code == 200
    assert seen_304
    other = watcher.get("/watcher", headers={"If-None-Match": '"not-the-etag"'})
    assert other.status_code == 200


def test_gzip_when_asked(watcher):
    raw = requests.get(
        f"{watcher.url}/watcher", headers={"Accept-Encoding": "gzip"}, stream=True, timeout=5
    )
    assert raw.headers["Content-Encoding"] == "gzip"
    doc = gzip.decompress(raw.raw.read())
    assert b"NodeMetricsMap" in doc
    plain = watcher.get("/watcher", headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers


def test_cors_for_configured_origins_only(watcher):
    allowed = watcher.get("/api/v1/nodes", headers={"Origin": ORIGIN})
    assert allowed.headers["Access-Control-Allow-Origin"] == ORIGIN
    other = watcher.get("/api/v1/nodes", headers={"Origin": "http://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers
    preflight = requests.options(
        f"{watcher.url}/api/v1/nodes",
        headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET"},
        timeout=5,
    )
    assert preflight.status_code == 204
    assert "GET" in preflight.headers["Access-Control-Allow-Methods"]


@pytest.mark.parametrize(
    "method,path,status",
    [
        ("GET", "/api/v1/nodes/no-such-node", 404),
        ("GET", "/api/v1/nodes/no-such-node/samples", 404),
        ("GET", "/api/v1/nodes/api-01/samples?metric=bogus", 400),
        ("GET", "/api/v1/nope", 404),
        ("POST", "/watcher", 405),
        ("DELETE", "/api/v1/nodes", 405),
        ("GET", "/api/v1/nodes/%00%ff" + "x" * 3000, 404),
    ],
)
def test_bad_requests_get_json_4xx(watcher, method, path, status):
    resp = requests.request(method, f"{watcher.url}{path}", timeout=5)
    assert resp.status_code == status
    assert resp.headers["Content-Type"] == "application/json"
    assert resp.json()["error"]


def test_health_ready_status_metrics_openapi(watcher):
    assert watcher.json("/healthz") == {"ok": True}
    assert watcher.json("/readyz") == {"ready": True, "reasons": []}
    status = watcher.status()
    assert status["store"] == {"kind": "memory", "ok": True, "error": None}
    assert status["poller"]["leading"] is True
    assert status["provider"] == {"ok": True, "error": None}
    assert status["nodes"]["fresh"] >= len(NODES)
    metrics = watcher.get("/metrics").text
    for name in (
        "ballast_watcher_polls_total",
        "ballast_watcher_poll_duration_seconds",
        'ballast_watcher_nodes{state="fresh"}',
        "ballast_watcher_request_duration_seconds_bucket",
        "ballast_watcher_leader 1.0",
    ):
        assert name in metrics, name
    spec = watcher.json("/openapi.json")
    assert spec["openapi"].startswith("3.")
    assert {"/watcher", "/api/v1/nodes", "/api/v1/nodes/{node}/samples"} <= set(spec["paths"])


def test_bearer_token_guards_the_api(prometheus, make_watcher):
    watcher = make_watcher(prometheus.url, api_token="s3cret")
    assert watcher.get("/watcher").status_code == 401
    assert watcher.get("/api/v1/status").json()["error"]
    wrong = watcher.get("/api/v1/status", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = watcher.get("/api/v1/status", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200
    assert watcher.get("/healthz").status_code == 200  # probes need no token
