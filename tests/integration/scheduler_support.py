"""Helpers for the scheduler's integration tests: pods, in-process runtimes, waits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client

from scheduler.config.loader import parse_config
from scheduler.config.profiles import build_profiles
from scheduler.runtime import Runtime, RuntimeOptions
from tests.fixtures.ports import wait_for

T = 10


def pod_body(
    name: str,
    scheduler: str = "ballast",
    cpu: str | None = "100m",
    memory: str | None = None,
    limit_cpu: str | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: dict[str, Any] = {"name": "app", "image": "example.invalid/app:1"}
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limit_cpu:
        resources["limits"] = {"cpu": limit_cpu}
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def create_pods(api: client.ApiClient, namespace: str, bodies: list[dict[str, Any]]) -> None:
    core = client.CoreV1Api(api)
    for body in bodies:
        core.create_namespaced_pod(namespace, body, _request_timeout=T)


def pods(api: client.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    resp = client.CoreV1Api(api).list_namespaced_pod(
        namespace, _preload_content=False, _request_timeout=T
    )
    return {p["metadata"]["name"]: p for p in json.loads(resp.data)["items"]}


def placement(api: client.ApiClient, namespace: str) -> dict[str, str]:
    """pod name -> node name ("" while pending)."""
    return {n: p["spec"].get("nodeName") or "" for n, p in pods(api, namespace).items()}


def wait_bound(api: client.ApiClient, namespace: str, count: int, timeout: float = 30) -> dict:
    def bound() -> dict[str, str] | None:
        placed = placement(api, namespace)
        done = {n: node for n, node in placed.items() if node}
        return done if len(done) >= count else None

    return wait_for(bound, timeout=timeout, what=f"{count} pods bound in {namespace}")


def events(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    resp = client.EventsV1Api(api).list_namespaced_event(
        namespace, _preload_content=False, _request_timeout=T
    )
    return json.loads(resp.data)["items"]


def events_for(api: client.ApiClient, namespace: str, pod: str, reason: str) -> list[dict]:
    return [
        e
        for e in events(api, namespace)
        if e.get("reason") == reason and (e.get("regarding") or {}).get("name") == pod
    ]


def config(doc: dict[str, Any] | None = None, leader: bool = False) -> Any:
    doc = dict(doc or {})
    doc.setdefault("leaderElection", {"leaderElect": leader})
    return parse_config(doc)


@contextmanager
def running(api: client.ApiClient, doc: dict[str, Any] | None = None, **options: Any) -> Iterator:
    """An in-process scheduler with short test timings, stopped on exit."""
    cfg = config(doc)
    opts = RuntimeOptions(
        watcher_interval=options.pop("watcher_interval", 0.2),
        watcher_timeout=options.pop("watcher_timeout", 1.0),
        watcher_max_backoff=options.pop("watcher_max_backoff", 0.5),
        initial_backoff=options.pop("initial_backoff", 0.1),
        max_backoff=options.pop("max_backoff", 0.5),
        unschedulable_flush=options.pop("unschedulable_flush", 30.0),
        **options,
    )
    runtime = Runtime(cfg, api, build_profiles(cfg), opts)
    runtime.start()
    try:
        yield runtime
    finally:
        runtime.stop()
