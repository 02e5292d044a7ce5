"""Ballast's `/watcher` answers what paypal/load-watcher answers, on one real Prometheus.

Both read a Prometheus that evaluates the recording rules load-watcher hard-codes (Ballast on
its `load-watcher` query preset, as docs/watcher.md tells a user replacing it). Node by node,
the two answers carry the same metrics, types and operators in the same order (from
Prometheus: every metric's AVG, then every metric's STD, no Latest), with values that agree.
"""

from __future__ import annotations

import requests

from sandbox.peers.loadwatcher.serve import RangeProxy
from shared import wire
from tests.fixtures.loadwatcher import LoadWatcher, RulesPrometheus
from tests.fixtures.ports import wait_for

LOADS = {"lwi-idle": (12.0, 20.0), "lwi-half": (50.0, 45.0), "lwi-busy": (85.0, 70.0)}
# load-watcher averages the rules over 15 minutes of which only the test's seconds exist, Ballast
# its own polls over 5: both near the set load; irate of the synthetic counters is exact.
TOLERANCE = 3.0


def _rows(doc: dict, node: str) -> list[tuple[str, str, str]]:
    metrics = doc["data"]["NodeMetricsMap"][node]["metrics"]
    return [(m["name"], m["type"], m["operator"]) for m in metrics]


def test_watcher_answers_what_load_watcher_answers(exporter, make_watcher, tmp_path):
    for node, (cpu, memory) in LOADS.items():
        exporter.set(node, cpu=cpu, memory=memory)
    nodes = list(LOADS)
    prom = RulesPrometheus(tmp_path / "prom", [exporter.target]).start()
    theirs = LoadWatcher(tmp_path / "load-watcher", prom.url)
    try:
        wait_for(lambda: set(nodes) <= prom.rule_nodes(), timeout=30, what="the recording rules")
        upstream = theirs.start().wait_nodes(nodes)
        ours = make_watcher(prom.url, query_preset="load-watcher")
        ours.wait_nodes(nodes)
        answer = ours.json("/watcher")
    finally:
        theirs.stop()
        prom.stop()

    assert answer["source"] == upstream["source"] == wire.PROMETHEUS
    expected = [
        (name, kind, op)
        for op in (wire.AVG, wire.STD)
        for name, kind in (
            ("instance:node_cpu:ratio", wire.CPU),
            ("instance:node_memory_utilisation:ratio", wire.MEMORY),
        )
    ]
    for node, (cpu, memory) in LOADS.items():
        assert _rows(upstream, node) == expected, upstream["data"]["NodeMetricsMap"][node]
        assert _rows(answer, node) == _rows(upstream, node), node
        values = {}
        for doc in (answer, upstream):
            for m in doc["data"]["NodeMetricsMap"][node]["metrics"]:
                values.setdefault((m["type"], m["operator"]), []).append(m["value"])
        assert all(abs(v - cpu) <= TOLERANCE for v in values[(wire.CPU, wire.AVG)]), values
        assert all(abs(v - memory) <= TOLERANCE for v in values[(wire.MEMORY, wire.AVG)]), values
        assert all(0 <= v <= TOLERANCE for op in ((wire.CPU, wire.STD), (wire.MEMORY, wire.STD))
                   for v in values[op]), values  # fmt: skip


def test_range_proxy_scales_load_watchers_windows(exporter, prometheus):
    """In a replayed trace load-watcher reads Prometheus through RangeProxy: its windows in
    trace time. As load-watcher asks (a form POST) and as a browser would (GET)."""
    exporter.set("lwr-node", cpu=10.0, memory=10.0)
    query = 'count_over_time(node_memory_MemTotal_bytes{instance="lwr-node"}[10s])'

    def count(resp: requests.Response) -> float:
        resp.raise_for_status()
        return float(resp.json()["data"]["result"][0]["value"][1])

    direct = wait_for(
        lambda: (c := count(requests.get(f"{prometheus.url}/api/v1/query",
                                         params={"query": query}, timeout=5))) >= 8 and c,
        timeout=30, what="10 s of scrapes",
    )  # fmt: skip
    proxy = RangeProxy(prometheus.url, speed=10.0).start()
    try:
        url = f"{proxy.url}/api/v1/query"
        posted = count(requests.post(url, data={"query": query}, timeout=5))
        got = count(requests.get(url, params={"query": query}, timeout=5))
    finally:
        proxy.stop()
    assert posted <= 2 and got <= 2 and direct >= 8, (posted, got, direct)  # 1 s of 1 s scrapes
    assert proxy.forwarded == 2
