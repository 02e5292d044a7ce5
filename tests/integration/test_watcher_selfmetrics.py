"""Per-replica self-metrics: two watcher replicas on one Redis each report only their own polls.

A Prometheus scraping both must count every poll once: the active poller's counters grow, the
standby's stay at 0, and after a takeover the new poller counts from its own 0. Cluster-wide
poll status stays in /api/v1/status, the same on both.
"""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.ports import wait_for

NODES = {"selfm-0": (20.0, 40.0), "selfm-1": (60.0, 30.0)}


def scrape(watcher) -> dict[str, float]:
    """The unlabelled samples of /metrics by name (counters with their _total suffix)."""
    out = {}
    for family in text_string_to_metric_families(watcher.get("/metrics").text):
        for sample in family.samples:
            if not sample.labels:
                out[sample.name] = sample.value
    return out


def test_each_replica_counts_its_own_polls(exporter, prometheus, make_redis, make_watcher):
    for node, (cpu, memory) in NODES.items():
        exporter.set(node, cpu=cpu, memory=memory)
    redis = make_redis()
    first = make_watcher(prometheus.url, redis.url, workers=2)
    wait_for(lambda: first.status()["poller"]["leading"], timeout=20, what="first replica leads")
    second = make_watcher(prometheus.url, redis.url)
    first.wait_nodes(list(NODES))
    second.wait_nodes(list(NODES))

    def polled(watcher, more_than: float) -> dict | None:
        m = scrape(watcher)
        return m if m["ballast_watcher_polls_total"] > more_than else None

    lead = wait_for(lambda: polled(first, 2), timeout=20, what="the leader's own polls")
    standby = scrape(second)
    assert lead["ballast_watcher_leader"] == 1.0 and standby["ballast_watcher_leader"] == 0.0
    assert lead["ballast_watcher_poll_duration_seconds"] > 0
    assert standby["ballast_watcher_polls_total"] == 0
    assert standby["ballast_watcher_poll_seconds_total"] == 0
    assert standby["ballast_watcher_poll_duration_seconds"] == 0
    # Both gunicorn workers of the first replica read the master's figures: scrape a few times.
    for _ in range(6):
        assert scrape(first)["ballast_watcher_polls_total"] >= lead["ballast_watcher_polls_total"]
    # The cluster-wide view is the same on both replicas.
    assert second.status()["poller"]["leader"] == first.status()["poller"]["self"]
    assert second.status()["counters"]["polls"] > 0

    killed = time.monotonic()
    first.kill()  # no lock release: the standby takes over once the TTL lapses
    took = wait_for(lambda: polled(second, 1), timeout=30, what="the standby's own polls")
    assert took["ballast_watcher_leader"] == 1.0
    # Its own polls since the takeover (1 s interval), not the old leader's total carried over.
    assert took["ballast_watcher_polls_total"] <= time.monotonic() - killed + 1
