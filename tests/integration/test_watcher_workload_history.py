"""The workloads' history over the real chain: what a replica that polled before left in a real
Redis (written with the watcher's own encode and store, as the trace benchmark's warm start
writes it), taken over by a real watcher at start, fed by its pod poll from cAdvisor-like
series in a real Prometheus joined to workloads through a real kube-apiserver, served in
/api/v1/pods (with how many buckets the live replica's own maxima hold), parsed by the
scheduler's client, and kept across a takeover for a workload whose pods are all gone."""

from __future__ import annotations

import time

from kubernetes import client

from scheduler.backend.pods_client import parse_pods
from scheduler.framework.podusage import WorkloadPeak
from tests.fixtures.ports import wait_for
from tests.integration.test_watcher_pod_usage import deployment
from watcher.redis_store import RedisStore
from watcher.workloadhistory import WorkloadHistory

LIVE_M, SEEDED_M, GONE_M = 300.0, 700.0, 900.0
MEMORY = 64 * 1024**2
HOUR = 3600.0  # the watcher's peak bucket (its default)


def seed(url: str, prefix: str, namespace: str, now: float) -> None:
    """web used 700m two hours ago; gone, none of whose pods runs now, 900m half an hour ago."""
    history = WorkloadHistory(HOUR)
    web, gone = ((namespace, f"{app}-h-1") for app in ("web", "gone"))
    history.add(now - 2 * HOUR, {web: (SEEDED_M, MEMORY)}, {web: f"{namespace}/Deployment/web"})
    history.add(now - HOUR / 2, {gone: (GONE_M, MEMORY)}, {gone: f"{namespace}/Deployment/gone"})
    store = RedisStore(url, prefix, 300.0)
    try:
        store.save_workload_history(history.encode(), 24 * HOUR)
    finally:
        store.close()


def test_a_workloads_day_outlives_its_pods_and_the_poller(
    sandbox, kube_api, kube_nodes, namespace, exporter, prometheus, redis_server, make_watcher
):
    (node,) = kube_nodes(1)
    prefix = f"{namespace}:"
    seed(redis_server.url, prefix, namespace, time.time())
    client.AppsV1Api(kube_api).create_namespaced_deployment(namespace, deployment("web", node, 1))
    core = client.CoreV1Api(kube_api)
    (pod,) = wait_for(
        lambda: [p.metadata.name for p in core.list_namespaced_pod(namespace).items] or None,
        timeout=30,
        what="web's pod",
    )
    exporter.set_pod(namespace, pod, node, {"app": (LIVE_M, MEMORY)})
    settings = {"key_prefix": prefix, "warm_start": False, "kube_refresh": 2}
    try:
        first = make_watcher(
            prometheus.url, redis_server.url, kubeconfig=str(sandbox.kubeconfig), **settings
        )

        def history(watcher, live: bool) -> dict | None:
            resp = watcher.get(f"/api/v1/pods?namespace={namespace}")
            if resp.status_code != 200:
                return None
            doc = resp.json()
            section = doc["workloadHistory"]
            held = dict(zip(section["workloads"], section["held"], strict=True))
            # web's live replica fills the current bucket beside the seeded one
            return doc if held.get(f"{namespace}/Deployment/web") == (2 if live else 1) else None

        doc = wait_for(lambda: history(first, True), timeout=40, what="web's live bucket")
        section = doc["workloadHistory"]
        figures = {
            key: (section["cpu"]["max"][i], section["held"][i])
            for i, key in enumerate(section["workloads"])
        }
        assert figures == {
            f"{namespace}/Deployment/web": (SEEDED_M, 2),  # the day's most, though not now's
            f"{namespace}/Deployment/gone": (GONE_M, 1),  # no pod of it runs
        }
        assert doc["pods"] == [f"{namespace}/{pod}"]
        # what PeakFit reads for a new replica of gone
        parsed = parse_pods(doc)
        # (its last buckets' most too, `recentMax`: half an hour ago is within the last 3)
        assert parsed.history[f"{namespace}/Deployment/gone"] == WorkloadPeak(
            1, (GONE_M, MEMORY), (GONE_M, MEMORY), (GONE_M, MEMORY)
        )
        assert parsed.history_buckets == 24
        # the live replica has lived a bucket (two if an hour turned meanwhile), not the day its
        # workload's history spans: PeakFit judges it by that day's 700m too, not its own 300m
        assert 1 <= doc["held"][0] <= 2
        assert parsed.by_pod[(namespace, pod)].held == doc["held"][0]
        # persisted with an expiry, and taken over by the next poller
        assert redis_server.client().pttl(f"{prefix}pods:history") > 0
        first.kill()
        second = make_watcher(
            prometheus.url, redis_server.url, kubeconfig=str(sandbox.kubeconfig), **settings
        )
        doc = wait_for(lambda: history(second, False) or history(second, True), timeout=40,
                       what="the history after a takeover")  # fmt: skip
        keys = doc["workloadHistory"]["workloads"]
        assert f"{namespace}/Deployment/gone" in keys
    finally:
        exporter.remove_pod(namespace, pod)
