"""Every panel of Grafana's dashboard (charts/ballast/files/dashboard.json) answers with data
from a real Prometheus scraping a real watcher, scheduler and rebalancer, wired to the sandbox:
a pod placed, a pod that fits nowhere, rounds of a dry-run rebalancer. Each metric a query
names is one a component exports (a typo would otherwise hide behind `or vector(0)`)."""

from __future__ import annotations

import json
import math
import re

import requests
from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from sandbox.peers.helm import chart
from scheduler.config.profiles import build_profiles
from scheduler.rebalancer import settings
from scheduler.rebalancer.runtime import Options, Rebalancer
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import running

T = 10
DASHBOARD = chart.CHART / "files" / "dashboard.json"
# Grafana's own variable: a window every event of the test falls in.
RATE_INTERVAL = "5m"
PROMQL_WORDS = {"sum", "by", "rate", "max", "min", "or", "on", "vector", "histogram_quantile",
                "increase", "le", "and"}  # fmt: skip


def panels() -> list[dict]:
    doc = json.loads(DASHBOARD.read_text())
    return [p for p in doc["panels"] if p["type"] != "row"]


def queries() -> dict[str, str]:
    return {f'{p["title"]} ({t["refId"]})': t["expr"].replace("$__rate_interval", RATE_INTERVAL)
            for p in panels() for t in p["targets"]}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    bare = re.sub(r'\{[^}]*\}|"[^"]*"|\[[^\]]*\]', "", expr)
    names = set(re.findall(r"[a-z_][a-z0-9_]*", bare)) - PROMQL_WORDS
    return {re.sub(r"_(bucket|count|sum)$", "", n) for n in names if n.startswith("ballast_")}


def pod(name: str, cpu: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": "ballast", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}  # fmt: skip


def test_every_panel_answers_from_prometheus_scraping_ballast(
    kube_api, kube_nodes, namespace, make_exporter, make_prometheus, make_watcher
):
    exporter = make_exporter()
    nodes = kube_nodes([NodeSpec(f"{namespace}-a", cpu="4"), NodeSpec(f"{namespace}-b", cpu="4")])
    for name in nodes:
        exporter.set(name, cpu=30.0, memory=30.0)
    source = make_prometheus([exporter.target])
    watcher = make_watcher(source.url)
    watcher.wait_nodes(nodes, metrics=("cpu",))
    doc = {"watcherAddress": watcher.url, "profiles": [{"schedulerName": "ballast"}]}
    with running(kube_api, doc, metrics_listen="127.0.0.1:0") as scheduler:
        cfg = settings.parse({**doc, "leaderElection": {"leaderElect": False},
                              "rebalancer": {"interval": "500ms", "dryRun": True}})  # fmt: skip
        rebalancer = Rebalancer(cfg, kube_api, build_profiles(cfg.scheduler),
                                Options(listen="127.0.0.1:0", watcher_interval=0.5))  # fmt: skip
        rebalancer.start()
        try:
            targets = {
                "watcher": f"127.0.0.1:{watcher.port}",
                "scheduler": f"127.0.0.1:{scheduler.server.port}",
                "rebalancer": f"127.0.0.1:{rebalancer.server.port}",
            }
            scraper = make_prometheus(list(targets.values()))
            # Events after the first scrapes, so that rates and quantiles see them happen.
            scraper.wait_for_series("up == 1", len(targets))
            core = client.CoreV1Api(kube_api)
            core.create_namespaced_pod(namespace, pod("placed", "100m"), _request_timeout=T)
            core.create_namespaced_pod(namespace, pod("too-big", "64"), _request_timeout=T)
            wanted = queries()

            def empty() -> dict[str, str]:
                missing = {}
                for title, expr in wanted.items():
                    result = scraper.query(expr)
                    values = [float(r["value"][1]) for r in result]
                    if not values or any(math.isnan(v) for v in values):
                        missing[title] = expr
                return missing

            left: dict[str, str] = {}

            def all_answer() -> bool:
                left.clear()
                left.update(empty())
                return not left

            try:
                wait_for(all_answer, timeout=90, interval=2, what="every panel to answer")
            except AssertionError as exc:
                raise AssertionError(f"panels without data: {left}") from exc
            # The names are real: each appears in what the components export.
            exported = "\n".join(
                requests.get(f"http://{t}/metrics", timeout=T).text for t in targets.values()
            )
            for title, expr in wanted.items():
                for name in metric_names(expr):
                    assert f"# TYPE {name} " in exported, (title, name)
        finally:
            rebalancer.stop()
