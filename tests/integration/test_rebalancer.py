"""The rebalancer on the sandbox: real controllers, Prometheus, watcher, Ballast's scheduler.

Two 2-CPU kwok nodes per test, "hot" and "cold", their CPU set on the synthetic exporter. A
Deployment's pods are placed by Ballast on "hot" while "cold" is cordoned; then "cold" is opened
and the rebalancer (in-process, short rounds, 2 fresh observations to confirm) judges.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from scheduler.config.profiles import build_profiles
from scheduler.rebalancer import evictions, settings
from scheduler.rebalancer.runtime import Options, Rebalancer
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import placement, running

T = 10
# A flat series stays fresh for at most 3 s, so a node the exporter stops serving goes stale.
WATCHER = {"horizon_max": 3.0, "window": 30.0}


def deployment(name: str, replicas: int, cpu: str = "300m") -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": "32Mi"}},
    }
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "schedulerName": "ballast",
            "terminationGracePeriodSeconds": 0,
            "containers": [container],
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template,
        },
    }


def cordon(api: client.ApiClient, node: str, on: bool) -> None:
    client.CoreV1Api(api).patch_node(node, {"spec": {"unschedulable": on}}, _request_timeout=T)


@pytest.fixture
def scene(kube_api, kube_nodes, namespace, exporter, prometheus, make_watcher):
    """(names, watcher url) with the scheduler running; `place(replicas, cpu)` puts a
    Deployment's pods on the hot node and returns them."""
    names = {"hot": f"{namespace}-hot", "cold": f"{namespace}-cold"}
    exporter.set(names["hot"], cpu=92.0, memory=30.0)
    exporter.set(names["cold"], cpu=15.0, memory=30.0)
    kube_nodes(
        [
            NodeSpec(names["hot"], cpu="2", memory="8Gi"),
            NodeSpec(names["cold"], cpu="2", memory="8Gi"),
        ]
    )
    cordon(kube_api, names["cold"], True)
    watcher = make_watcher(prometheus.url, **WATCHER)
    watcher.wait_nodes(list(names.values()), metrics=("cpu",))
    with running(kube_api, {"watcherAddress": watcher.url}):

        def place(replicas: int, cpu: str = "300m", name: str = "web") -> list[str]:
            apps = client.AppsV1Api(kube_api)
            apps.create_namespaced_deployment(
                namespace, deployment(name, replicas, cpu), _request_timeout=T
            )
            pods = wait_for(
                lambda: _on(kube_api, namespace, names["hot"], replicas),
                timeout=60,
                what=f"{replicas} pods on the hot node",
            )
            cordon(kube_api, names["cold"], False)
            return pods

        yield names, watcher, place
    for name in names.values():
        exporter.remove(name)


def _on(api: client.ApiClient, namespace: str, node: str, count: int) -> list[str] | None:
    pods = [p for p, n in placement(api, namespace).items() if n == node]
    return pods if len(pods) >= count else None


@contextmanager
def rebalancer(
    api: client.ApiClient, watcher_url: str, section: dict[str, Any], **doc: Any
) -> Iterator[Rebalancer]:
    body = {
        "watcherAddress": watcher_url,
        "leaderElection": doc.pop("leaderElection", {"leaderElect": False}),
        "profiles": doc.pop("profiles", [{"schedulerName": "ballast"}]),
        "rebalancer": {
            "interval": "300ms",
            "consecutive": 2,
            "resources": [{"name": "cpu", "high": 80, "low": 50}],
            "minReplicas": 1,  # these scenes move one replica of small Deployments
            **section,
        },
    }
    cfg = settings.parse(body)
    r = Rebalancer(
        cfg,
        api,
        build_profiles(cfg.scheduler),
        Options(
            watcher_interval=0.3,
            watcher_max_backoff=0.5,
            provider_lag=1.0,
            identity=doc.pop("identity", ""),
        ),
    )
    r.start()
    try:
        yield r
    finally:
        r.stop()


def counter(r: Rebalancer, metric: Any, *labels: str) -> float:
    return (metric.labels(*labels) if labels else metric)._value.get()


def rebalanced_events(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    resp = client.EventsV1Api(api).list_namespaced_event(
        namespace, _preload_content=False, _request_timeout=T
    )
    items = json.loads(resp.data)["items"]
    return [e for e in items if e.get("reason") == evictions.POD_REASON]


def budget_at_limit(api: client.ApiClient, namespace: str, app: str, replicas: int) -> None:
    """A PodDisruptionBudget keeping all `replicas` of `app`, once its status counts them."""
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app},
        "spec": {"minAvailable": replicas, "selector": {"matchLabels": {"app": app}}},
    }
    policy = client.PolicyV1Api(api)
    policy.create_namespaced_pod_disruption_budget(namespace, pdb, _request_timeout=T)

    def counted() -> bool:
        status = policy.read_namespaced_pod_disruption_budget(app, namespace).status
        return status.current_healthy == replicas

    wait_for(counted, timeout=30, what="the PDB's status")


def rounds_as_leader(r: Rebalancer) -> float:
    return counter(r, r.telemetry.rounds, "leader")


def test_a_hot_node_is_relieved_through_the_controllers(kube_api, namespace, scene):
    names, watcher, place = scene
    before = set(place(2))
    with rebalancer(kube_api, watcher.url, {}) as r:
        wait_for(lambda: rebalanced_events(kube_api, namespace), timeout=30, what="an eviction")
        # The ReplicaSet recreates the pod and Ballast binds it on the cold node.
        moved = wait_for(
            lambda: [
                p for p in _on(kube_api, namespace, names["cold"], 1) or [] if p not in before
            ],
            timeout=30,
            what="the replacement bound on the cold node",
        )
        assert len(moved) == 1
        # Booked on its target until bound (replacements.py), then from its bind where it went:
        # the controller's replacement, bound by Ballast, is found as such. (Its bound record
        # ends once a planning round reads a sample the lag past the bind: none plans while the
        # hot node rests.)
        booked = r.memory.replacements
        wait_for(
            lambda: not booked.pending and names["cold"] in booked.bound.nodes(),
            timeout=10,
            what="the replacement seen bound on the cold node",
        )
        start = rounds_as_leader(r)
        wait_for(lambda: rounds_as_leader(r) >= start + 5, timeout=20)
    # Still hot in the exporter, but resting: one eviction only, the other pod stays.
    assert counter(r, r.telemetry.evictions, "cpu-hot") == 1
    assert len(_on(kube_api, namespace, names["hot"], 1) or []) == 1
    event = rebalanced_events(kube_api, namespace)[0]
    assert names["hot"] in event["note"] and names["cold"] in event["note"]
    assert "> high 80.0%" in event["note"]
    decisions = r.decisions.latest()
    assert [d["target"] for d in decisions if d["action"] == "evict"] == [names["cold"]]


def test_a_pdb_at_its_limit_blocks_the_eviction(kube_api, namespace, scene):
    names, watcher, place = scene
    pods = place(1)
    budget_at_limit(kube_api, namespace, "web", 1)
    with rebalancer(kube_api, watcher.url, {}) as r:
        wait_for(lambda: counter(r, r.telemetry.skipped, evictions.PDB) >= 2, timeout=30)
    assert counter(r, r.telemetry.evictions, "cpu-hot") == 0
    assert _on(kube_api, namespace, names["hot"], 1) == pods


def test_a_pod_that_fits_nowhere_cooler_is_never_evicted(kube_api, namespace, scene):
    names, watcher, place = scene
    pods = place(1, cpu="1")  # 1500m predicted: 15 % + 75 % on the cold node is over 80 %
    with rebalancer(kube_api, watcher.url, {}) as r:
        wait_for(lambda: counter(r, r.telemetry.skipped, "no-target") >= 3, timeout=30)
    assert counter(r, r.telemetry.evictions, "cpu-hot") == 0
    assert _on(kube_api, namespace, names["hot"], 1) == pods
    skip = next(d for d in r.decisions.latest() if d["reason"] == "no-target")
    assert "none stays under high" in skip["detail"]


def test_stale_metrics_evict_nothing(kube_api, namespace, scene, exporter):
    names, watcher, place = scene
    pods = place(1)
    exporter.remove(names["hot"])  # no new samples: the watcher's data ages

    def hot_not_fresh() -> bool:
        doc = watcher.json("/api/v1/nodes")["nodes"][names["hot"]]["metrics"]["cpu"]
        return doc["state"] != "fresh"

    wait_for(hot_not_fresh, timeout=30, what="the hot node's data to go stale")
    # consecutive 1: a fresh hot reading would evict at the first round.
    with rebalancer(kube_api, watcher.url, {"consecutive": 1}) as r:
        wait_for(lambda: rounds_as_leader(r) >= 10, timeout=20)
        assert r.last["unknown"].get(names["hot"]) in ("stale", "expired")
    assert counter(r, r.telemetry.evictions, "cpu-hot") == 0
    assert _on(kube_api, namespace, names["hot"], 1) == pods


def test_dry_run_evicts_nothing_and_reports(kube_api, namespace, scene):
    names, watcher, place = scene
    pods = place(1)
    with rebalancer(kube_api, watcher.url, {"dryRun": True}) as r:
        wait_for(lambda: counter(r, r.telemetry.would_evict) >= 1, timeout=30)
        start = rounds_as_leader(r)
        wait_for(lambda: rounds_as_leader(r) >= start + 5, timeout=20)
    # The node rests after the held move, as after an eviction: reported once, not each round.
    assert counter(r, r.telemetry.would_evict) == 1
    assert counter(r, r.telemetry.evictions, "cpu-hot") == 0
    assert _on(kube_api, namespace, names["hot"], 1) == pods
    would = [d for d in r.decisions.latest() if d["action"] == "would-evict"]
    assert would[0]["pod"] == f"{namespace}/{pods[0]}" and would[0]["target"] == names["cold"]
    assert would[0]["reason"] == "dry-run"
    assert rebalanced_events(kube_api, namespace) == []


def test_leader_failover_evicts_nothing_twice(kube_api, namespace, scene):
    names, watcher, place = scene
    place(3)
    election = {
        "leaderElect": True,
        "resourceNamespace": namespace,
        "leaseDuration": "3s",
        "renewDeadline": "2s",
        "retryPeriod": "500ms",
    }
    with ExitStack() as stack:
        first = stack.enter_context(
            rebalancer(kube_api, watcher.url, {}, leaderElection=election, identity="first")
        )
        wait_for(first.leading, timeout=15, what="first leading")
        second = stack.enter_context(
            rebalancer(kube_api, watcher.url, {}, leaderElection=election, identity="second")
        )
        wait_for(lambda: rebalanced_events(kube_api, namespace), timeout=30, what="an eviction")
        assert not second.leading()
        # `first` hands its Lease back; `second`, which observed all along, leads now, sees
        # the node still hot, and must leave it resting.
        first.stop()
        wait_for(second.leading, timeout=15, what="second leading")
        start = rounds_as_leader(second)
        wait_for(lambda: rounds_as_leader(second) >= start + 10, timeout=30)
        assert names["hot"] in second.memory.streaks.confirmed(2)  # hot enough, but resting
        assert second.memory.cooldowns.active(names["hot"], second.last["time"])
    assert counter(first, first.telemetry.evictions, "cpu-hot") == 1
    assert counter(second, second.telemetry.evictions, "cpu-hot") == 0
    assert len(rebalanced_events(kube_api, namespace)) == 1


@pytest.mark.parametrize("switch", ["file", "setting"])
def test_the_kill_switch_holds_every_eviction(kube_api, namespace, scene, tmp_path, switch):
    names, watcher, place = scene
    pods = place(1)
    stop_file = tmp_path / "stop-evicting"
    stop_file.touch()
    section = {"killSwitchFile": str(stop_file)} if switch == "file" else {"enabled": False}
    with rebalancer(kube_api, watcher.url, section) as r:
        # The rounds go on, plan the move and hold it back, as a dry run does.
        wait_for(lambda: counter(r, r.telemetry.would_evict) >= 2, timeout=30)
        assert r.status()["enabled"] is False
        held = [d for d in r.decisions.latest() if d["action"] == "would-evict"]
        assert held[0]["reason"] == "kill-switch" and held[0]["target"] == names["cold"]
        assert counter(r, r.telemetry.evictions, "cpu-hot") == 0
        assert _on(kube_api, namespace, names["hot"], 1) == pods
        assert rebalanced_events(kube_api, namespace) == []
        if switch == "file":
            # Removing the file lets the same running rebalancer act, with no restart.
            stop_file.unlink()
            wait_for(lambda: rebalanced_events(kube_api, namespace), timeout=30, what="an eviction")
            assert counter(r, r.telemetry.evictions, "cpu-hot") == 1
