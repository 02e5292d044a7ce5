"""`ballast explain` told the truth: records of a real scheduler runtime on the sandbox, checked
against what the API server saw (bindings, FailedScheduling events, evictions).

One runtime serves the three cases (placed, unschedulable, preempting) and the CLI.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import requests
from kubernetes import client

from bench.placement import decisions
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    T,
    create_pods,
    events_for,
    placement,
    pod_body,
    running,
    wait_bound,
)


def explain(url: str, namespace: str, pod: str) -> dict:
    resp = requests.get(f"{url}/api/v1/decisions/{namespace}/{pod}", timeout=T)
    assert resp.status_code == 200, resp.text
    return resp.json()


def latest(url: str, namespace: str, pod: str, outcome: str) -> dict:
    """The pod's newest attempt with `outcome`, once there is one."""

    def ready() -> dict | None:
        resp = requests.get(f"{url}/api/v1/decisions/{namespace}/{pod}", timeout=T)
        if resp.status_code != 200:
            return None
        found = [a for a in resp.json()["attempts"] if a["outcome"] == outcome]
        return found[0] if found else None

    return wait_for(ready, timeout=20, what=f"{namespace}/{pod} recorded as {outcome}")


def counts(message: str) -> dict[str, int]:
    """{reason: nodes} from kube-scheduler's text, up to the preemption part."""
    head = message.split(" preemption: ", 1)[0]
    body = re.fullmatch(r"0/\d+ nodes are available: (.*)\.", head)
    assert body, message
    return {reason: int(n) for n, reason in re.findall(r"(\d+) ([^,]+)(?:, |$)", body.group(1))}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ballast.cli", "explain", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def priority_class(api: client.ApiClient, name: str, value: int) -> None:
    body = {"metadata": {"name": name}, "value": value}
    client.SchedulingV1Api(api).create_priority_class(body, _request_timeout=T)


def test_explanations_match_what_happened(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    nodes = kube_nodes(3, cpu="2", labels=label)
    low, high = f"{namespace}-low", f"{namespace}-high"
    priority_class(kube_api, low, 1)
    priority_class(kube_api, high, 1000)
    # Uneven nodes, so the scores differ, and no node with a free CPU: a pod that wants one
    # must evict a filler (the web pods' 300m would not make room).
    busy = [(f"fill-{i}", node, f"{1500 - 100 * i}m") for i, node in enumerate(nodes)]
    bodies = []
    for name, node, cpu in busy:
        body = pod_body(name, cpu=cpu, node_selector=label)
        body["spec"]["nodeName"] = node
        body["spec"]["priorityClassName"] = low
        bodies.append(body)
    create_pods(kube_api, namespace, bodies)
    try:
        with running(kube_api, metrics_listen="127.0.0.1:0") as runtime:
            url = f"http://127.0.0.1:{runtime.server.port}"
            placed_case(kube_api, namespace, label, url)
            unschedulable_case(kube_api, namespace, label, url)
            preemption_case(kube_api, namespace, label, url, nodes, high)
            cli_case(namespace, url)
    finally:
        for name in (low, high):
            client.SchedulingV1Api(kube_api).delete_priority_class(name, _request_timeout=T)


def placed_case(api, namespace, label, url):
    create_pods(api, namespace, [pod_body(f"web-{i}", node_selector=label) for i in range(3)])
    bound = wait_bound(api, namespace, 6)  # the three fillers and the three
    for i in range(3):
        pod = f"web-{i}"
        attempt = latest(url, namespace, pod, "bound")
        # the winner is the node the API server has the pod on
        assert attempt["node"] == bound[pod]
        scores = attempt["scores"]
        assert scores["winner"]["node"] == bound[pod]
        weights = {p["name"]: p["weight"] for p in scores["plugins"] if not p["skipped"]}
        assert weights, scores
        for row in scores["top"]:
            # totals recompute from the parts
            for name, part in row["plugins"].items():
                assert part["weighted"] == weights[name] * part["normalized"]
            assert row["total"] == sum(part["weighted"] for part in row["plugins"].values())
            assert row["load"]["cpu"]["state"] == "missing"  # no watcher in this test
        totals = [row["total"] for row in scores["top"]]
        assert totals == sorted(totals, reverse=True)
        assert scores["winner"]["total"] == totals[0]
        nodes = attempt["nodes"]
        assert nodes["feasible"] == 3 and nodes["scored"] == 3
        # every other node of the shared sandbox fails the selector
        assert attempt["filters"]["rejectedNodes"] == nodes["considered"] - 3
    # The placement benchmark reads the same records to say why a node ran hot.
    port = int(url.rsplit(":", 1)[1])
    digests = {d.pod: d for d in decisions.fetch(port, namespace, [f"web-{i}" for i in range(4)])}
    assert sorted(digests) == ["web-0", "web-1", "web-2"]  # web-3 has no record
    for pod, d in digests.items():
        row = next(r for r in latest(url, namespace, pod, "bound")["scores"]["top"]
                   if r["node"] == bound[pod])  # fmt: skip
        assert d.node == bound[pod] and d.state == "missing"
        recent = 100 * row["load"]["recentCountedCpuM"] / row["load"]["capacityCpuM"]
        assert d.seen_cpu == pytest.approx(row["load"]["cpu"]["usage"] + recent, abs=0.01)


def unschedulable_case(api, namespace, label, url):
    create_pods(api, namespace, [pod_body("huge", cpu="64", node_selector=label)])
    attempt = latest(url, namespace, "huge", "unschedulable")
    event = wait_for(
        lambda: events_for(api, namespace, "huge", "FailedScheduling"), timeout=15, what="event"
    )
    message = event[-1]["note"]
    # the filter counts are the event's
    assert attempt["filters"]["byReason"] == counts(message), (attempt["filters"], message)
    assert attempt["message"] == message
    assert attempt["filters"]["byPlugin"]["NodeResourcesFit"] == {"Insufficient cpu": 3}
    listed = requests.get(
        f"{url}/api/v1/decisions", params={"outcome": "unschedulable"}, timeout=T
    ).json()
    assert any(i["pod"] == "huge" and i["namespace"] == namespace for i in listed["items"])
    client.CoreV1Api(api).delete_namespaced_pod("huge", namespace, _request_timeout=T)


def preemption_case(api, namespace, label, url, nodes, high):
    # At most 700m free anywhere, 1000m with every web pod gone: only a filler's eviction helps.
    body = pod_body("urgent", cpu="1100m", node_selector=label)
    body["spec"]["priorityClassName"] = high
    create_pods(api, namespace, [body])
    attempt = latest(url, namespace, "urgent", "preempting")
    victims = {v["name"] for v in attempt["preemption"]["victims"]}
    assert len(victims) == 1 and victims <= {"fill-0", "fill-1", "fill-2"}, attempt
    nominated = attempt["preemption"]["nominatedNode"]
    assert nominated in nodes
    # the victims named are the pods that were evicted, with the Preempted event
    for victim in victims:
        wait_for(
            lambda v=victim: events_for(api, namespace, v, "Preempted"), timeout=15, what="event"
        )
    placed = wait_for(
        lambda: placement(api, namespace).get("urgent") or None, timeout=30, what="urgent bound"
    )
    assert placed == nominated
    assert victims.isdisjoint(placement(api, namespace))
    assert latest(url, namespace, "urgent", "bound")["node"] == nominated


def cli_case(namespace, url):
    shown = cli("web-0", "-n", namespace, "--scheduler", url)
    assert shown.returncode == 0, shown.stderr
    assert "winner" in shown.stdout and "TargetLoadPacking" in shown.stdout
    assert "filtered out" in shown.stdout
    doc = json.loads(cli(f"{namespace}/huge", "--scheduler", url, "-o", "json").stdout)
    assert doc["attempts"][0]["outcome"] == "unschedulable"
    listed = cli("--scheduler", url, "--outcome", "preempting")
    assert f"{namespace}/urgent" not in listed.stdout  # its latest attempt bound it
    missing = cli("nobody", "-n", namespace, "--scheduler", url)
    assert missing.returncode == 1 and "no decision recorded" in missing.stderr
