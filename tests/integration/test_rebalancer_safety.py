"""The rebalancer as a cluster would run it: refusals, other schedulers' pods, dry run against
live, and leadership lost in the middle of a round.

One watcher and one Ballast scheduler serve the module; each test has its own kwok nodes (their
CPU set on the synthetic exporter), namespace and Deployments. The rebalancer reaches the
kube-apiserver through `ApiProxy` (tests/fixtures/apiproxy.py), a plain-HTTP loopback proxy that
forwards everything (watches too) with the admin certificate, records every Eviction request as
it arrives and can fail, drop or hold requests: the tests read what was asked of the API server
there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from scheduler.config.profiles import build_profiles
from scheduler.kube import kubeapi
from scheduler.kube.events import micro_time
from scheduler.rebalancer import limits, settings
from scheduler.rebalancer.runtime import Options, Rebalancer
from tests.fixtures.apiproxy import ApiProxy, Fault, Request
from tests.fixtures.ports import free_port, wait_for
from tests.fixtures.watcher import WatcherProcess
from tests.integration.scheduler_support import placement, running
from tests.integration.test_rebalancer import budget_at_limit

T = 10
WATCHER = {"horizon_max": 3.0, "window": 30.0}
SECTION = {
    "interval": "300ms",
    "consecutive": 2,
    "resources": [{"name": "cpu", "high": 80, "low": 50}],
}
# Short, so a takeover is quick; an Eviction call may then take up to ~2.5 s (renew deadline
# less one retry period), more than the 1 s the proxy holds its answer.
ELECTION = {"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "500ms"}
LEASE_S = 4.0
SLOW_RENEWALS = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "4s"}
SLOW_EVICTION_S = 1.0


class Stage:
    def __init__(self, watcher: WatcherProcess, proxy: ApiProxy) -> None:
        self.watcher = watcher
        self.proxy = proxy
        self.api = proxy.api_client()


@pytest.fixture(scope="module")
def stage(sandbox, kube_api, prometheus, tmp_path_factory) -> Iterator[Stage]:
    watcher = WatcherProcess(tmp_path_factory.mktemp("watcher"), prometheus.url, **WATCHER)
    watcher.start()
    proxy = ApiProxy(sandbox).start()
    try:
        with running(kube_api, {"watcherAddress": watcher.url}):
            yield Stage(watcher, proxy)
    finally:
        proxy.stop()
        watcher.stop()


def deployment(
    name: str,
    replicas: int,
    cpu: str | None = "300m",
    node: str | None = None,
    scheduler: str = "ballast",
) -> dict[str, Any]:
    """`cpu` None: BestEffort. `node`: bound there by nodeName, as another scheduler (or an
    earlier placement) would have put it, so that no scheduler is needed."""
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu, "memory": "32Mi"}}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def create(api: client.ApiClient, namespace: str, *bodies: dict[str, Any]) -> None:
    apps = client.AppsV1Api(api)
    for body in bodies:
        apps.create_namespaced_deployment(namespace, body, _request_timeout=T)


def cordon(api: client.ApiClient, node: str, on: bool) -> None:
    client.CoreV1Api(api).patch_node(node, {"spec": {"unschedulable": on}}, _request_timeout=T)


def on_node(api: client.ApiClient, namespace: str, node: str, at_least: int = 0) -> list[str]:
    """The pods on `node`; [] while fewer than `at_least`."""
    pods = sorted(p for p, n in placement(api, namespace).items() if n == node)
    return pods if len(pods) >= at_least else []


@contextmanager
def rebalancer(
    api: client.ApiClient,
    watcher_url: str,
    section: dict[str, Any],
    election: dict[str, Any] | None = None,
    identity: str = "",
    provider_lag: float = 1.0,
) -> Iterator[Rebalancer]:
    body = {
        "watcherAddress": watcher_url,
        "leaderElection": election or {"leaderElect": False},
        "profiles": [{"schedulerName": "ballast"}],
        "rebalancer": {**SECTION, **section},
    }
    cfg = settings.parse(body)
    options = Options(
        watcher_interval=0.3, watcher_max_backoff=0.5, provider_lag=provider_lag, identity=identity
    )
    r = Rebalancer(cfg, api, build_profiles(cfg.scheduler), options)
    r.start()
    try:
        yield r
    finally:
        r.stop()


def count(metric: Any, *labels: str) -> float:
    return (metric.labels(*labels) if labels else metric)._value.get()


def rounds(r: Rebalancer, role: str = "leader") -> float:
    return count(r.telemetry.rounds, role)


def moves(r: Rebalancer) -> list[tuple[str, str, str]]:
    acted = [d for d in r.decisions.latest() if d["action"] in ("evict", "would-evict")]
    return [(d["node"], d["pod"], d["target"]) for d in acted]


def skips(r: Rebalancer, node: str) -> set[tuple[str, str]]:
    return {
        (d["pod"], d["reason"])
        for d in r.decisions.latest()
        if d["node"] == node and d["action"] == "skip"
    }


def test_refused_and_foreign_pods_leave_the_relief_to_the_next_one(
    stage, kube_api, kube_nodes, namespace, exporter, monkeypatch
):
    """The issue's case: the hot node's first candidates are a replica of another scheduler's
    workload and one of a workload whose PodDisruptionBudget is at its limit; a web replica
    beside them moves. The dry run asks the API server as the live run does (dryRun=All): with
    a cache that has not seen the budget at its limit, the budget's 429 answers the dry run too,
    and it reports the moves the live run then makes, evicting nothing."""
    hot, cold = f"{namespace}-hot", f"{namespace}-cold"
    exporter.set(hot, cpu=92.0, memory=30.0)
    exporter.set(cold, cpu=15.0, memory=30.0)
    try:
        kube_nodes([NodeSpec(hot, cpu="2", memory="8Gi"), NodeSpec(cold, cpu="2", memory="8Gi")])
        cordon(kube_api, cold, True)
        create(
            kube_api,
            namespace,
            deployment("other", 2, cpu=None, node=hot, scheduler="default-scheduler"),
            deployment("db", 2, cpu=None, node=hot),
            deployment("web", 2),
        )
        before = wait_for(
            lambda: on_node(kube_api, namespace, hot, 6),
            timeout=60,
            what="six pods on the hot node",
        )
        budget_at_limit(kube_api, namespace, "db", 2)
        cordon(kube_api, cold, False)
        stage.watcher.wait_nodes([hot, cold], metrics=("cpu",))
        # Neither run's cache sees the budget at its limit: the API server's 429 must not stop
        # the round, in the dry run as in the live one.
        monkeypatch.setattr(limits, "budget_at_limit", lambda workload, index: "")

        # The exporter's loads stay put after a move, where a real node's would fall: on fresh
        # samples the hot node would read hot again and its rest end early (tested in
        # tests/unit/test_rebalancer_rest.py), which a dry run, whose pods never leave, cannot
        # do. A provider lag longer than these rounds keeps such samples from counting.
        with rebalancer(
            stage.api, stage.watcher.url, {"dryRun": True, "interval": "2s"}, provider_lag=30.0
        ) as dry:
            wait_for(lambda: count(dry.telemetry.would_evict) >= 1, timeout=30, what="a held move")
            start = rounds(dry)
            wait_for(lambda: rounds(dry) >= start + 3, timeout=30)
            # The node rests after a held move as after an eviction: reported once.
            assert count(dry.telemetry.would_evict) == 1
        assert stage.proxy.asked(namespace) == []  # nothing asked for real
        (db_at, db), (web_at, web) = stage.proxy.asked(namespace, dry_run=True)
        assert db.startswith("db-") and web.startswith("web-")
        assert web_at - db_at < 1.5, web_at - db_at  # in the round of the refusal
        assert on_node(kube_api, namespace, hot) == before  # nothing evicted

        # Rounds 2 s apart: the web replica must go in the round of the refusal, not the next.
        with rebalancer(
            stage.api, stage.watcher.url, {"interval": "2s"}, provider_lag=30.0
        ) as live:
            wait_for(
                lambda: count(live.telemetry.evictions, "cpu-hot") >= 1,
                timeout=30,
                what="an eviction",
            )
            start = rounds(live)
            wait_for(lambda: rounds(live) >= start + 3, timeout=30)
        assert count(live.telemetry.evictions, "cpu-hot") == 1
        (db_at, db), (web_at, web) = stage.proxy.asked(namespace)  # db's budget asked once
        assert db.startswith("db-") and web.startswith("web-")
        assert web_at - db_at < 1.5, web_at - db_at
        assert count(live.telemetry.skipped, "pdb") >= 1
        assert moves(live) == moves(dry) and moves(live)[0][2] == cold
        assert skips(live, hot) == skips(dry, hot)
        foreign = {p for p in before if p.startswith("other-")}
        assert {(f"{namespace}/{p}", "other-scheduler") for p in foreign} <= skips(live, hot)
        # The web replica's replacement lands on the cold node; the others never moved.
        wait_for(
            lambda: [p for p in on_node(kube_api, namespace, cold) if p.startswith("web-")],
            timeout=30,
            what="the web replacement on the cold node",
        )
        left = on_node(kube_api, namespace, hot)
        assert [p for p in before if not p.startswith("web-")] == [
            p for p in left if not p.startswith("web-")
        ]
    finally:
        exporter.remove(hot)
        exporter.remove(cold)


def three_hot_nodes(
    kube_api: client.ApiClient, kube_nodes: Any, namespace: str, exporter: Any, cpu: float
) -> tuple[list[str], str]:
    """Three nodes at `cpu` %, each with its own 2-replica Deployment bound on it, and a big
    cold node: a round plans three moves."""
    hot = [f"{namespace}-h{i}" for i in range(3)]
    cold = f"{namespace}-cold"
    for name in hot:
        exporter.set(name, cpu=cpu, memory=30.0)
    exporter.set(cold, cpu=10.0, memory=30.0)
    kube_nodes([*(NodeSpec(n, cpu="2", memory="8Gi") for n in hot), NodeSpec(cold, cpu="16")])
    create(kube_api, namespace, *(deployment(f"a{i}", 2, node=n) for i, n in enumerate(hot)))
    wait_for(
        lambda: sum(len(on_node(kube_api, namespace, n)) for n in hot) == 6,
        timeout=60,
        what="two pods on each hot node",
    )
    return hot, cold


def take_lease(api: client.ApiClient, namespace: str, name: str, holder: str) -> None:
    """Another identity writes itself into the Lease, freshly renewed."""
    patch = {"spec": {"holderIdentity": holder, "renewTime": micro_time()}}
    client.CoordinationV1Api(api).patch_namespaced_lease(name, namespace, patch, _request_timeout=T)


def test_no_eviction_after_the_lease_is_taken_mid_round(
    stage, kube_api, kube_nodes, namespace, exporter
):
    hot, _ = three_hot_nodes(kube_api, kube_nodes, namespace, exporter, 92.0)
    stage.watcher.wait_nodes(hot, metrics=("cpu",))
    taken: list[float] = []
    lease = "ballast-rebalancer"

    def intrude() -> None:
        if not taken:  # the first Eviction is on its way: another replica takes the Lease
            take_lease(kube_api, namespace, lease, "intruder")
            taken.append(time.time())

    stage.proxy.on_eviction = intrude
    # The elector's own loop renews every 4 s; the evictions of one round follow each other
    # within milliseconds, so only the renewal before each one can see the Lease taken.
    election = {"leaderElect": True, "resourceNamespace": namespace, **SLOW_RENEWALS}
    try:
        with rebalancer(
            stage.api, stage.watcher.url, {"maxPerNamespace": 5}, election, "first"
        ) as r:
            wait_for(r.lost_lease.is_set, timeout=40, what="the loss noticed")
            start = rounds(r, "standby")
            wait_for(lambda: rounds(r, "standby") >= start + 3, timeout=30)
    finally:
        stage.proxy.reset()
        for name in hot:
            exporter.remove(name)
        exporter.remove(f"{namespace}-cold")
    asked = stage.proxy.asked(namespace)
    # One Eviction was in flight when the Lease went; none was sent after.
    assert len(asked) == 1 and asked[0][0] <= taken[0]
    assert count(r.telemetry.evictions, "cpu-hot") <= 1


class Replica:
    """`ballast rebalancer` as its Deployment runs it, through the proxy."""

    def __init__(self, config: Path, kubeconfig: Path, identity: str, log: Path) -> None:
        self.port = free_port()
        self.identity = identity
        self._log = log.open("wb")
        argv = [sys.executable, "-m", "ballast.cli", "rebalancer", f"--config={config}"]
        argv += [f"--kubeconfig={kubeconfig}", f"--listen=127.0.0.1:{self.port}"]
        argv += [f"--identity={identity}", "--watcher-interval=0.3"]
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)

    def healthy(self) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).ok
        except requests.RequestException:
            return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._log.close()


def holder(api: client.ApiClient, namespace: str, name: str) -> str:
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease(
            name, namespace, _request_timeout=T
        )
    except client.ApiException:
        return ""
    return lease.spec.holder_identity or ""


def test_a_standby_takes_over_a_leader_killed_mid_round(
    stage, kube_api, kube_nodes, namespace, exporter, tmp_path
):
    # Not hot yet: both replicas are up and settled before the first round with work.
    hot, cold = three_hot_nodes(kube_api, kube_nodes, namespace, exporter, 60.0)
    lease = "ballast-rebalancer"
    doc = {
        "watcherAddress": stage.watcher.url,
        "leaderElection": {"leaderElect": True, "resourceNamespace": namespace, **ELECTION},
        "profiles": [{"schedulerName": "ballast"}],
        "rebalancer": {**SECTION, "maxPerNamespace": 5, "leaseName": lease},
    }
    config = tmp_path / "rebalancer.yaml"
    config.write_text(yaml.safe_dump(doc))
    kubeconfig = stage.proxy.kubeconfig(tmp_path / "kubeconfig")
    killed: list[float] = []
    replicas: list[Replica] = []
    try:
        first = Replica(config, kubeconfig, "first", tmp_path / "first.log")
        replicas.append(first)
        wait_for(
            lambda: holder(kube_api, namespace, lease) == "first", timeout=60, what="first leads"
        )
        second = Replica(config, kubeconfig, "second", tmp_path / "second.log")
        replicas.append(second)
        wait_for(second.healthy, timeout=60, what="the standby up")

        def kill_the_leader() -> None:
            if not killed:  # its first Eviction is on its way: the rest of its round never comes
                first.kill()
                killed.append(time.monotonic())

        stage.proxy.delay = SLOW_EVICTION_S
        stage.proxy.on_eviction = kill_the_leader
        for name in hot:
            exporter.set(name, cpu=92.0, memory=30.0)
        wait_for(lambda: killed, timeout=40, what="the leader's first eviction")
        wait_for(
            lambda: holder(kube_api, namespace, lease) == "second",
            timeout=LEASE_S + 20,
            what="the standby leading",
        )
        took = time.monotonic() - killed[0]
        # The standby moves what the killed leader's round left, one pod per hot node.
        wait_for(
            lambda: {pod[:2] for _, pod in stage.proxy.asked(namespace)} >= {"a0", "a1", "a2"},
            timeout=40,
            what="an eviction from every hot node",
        )
        # Its Lease taken by another identity, the new leader exits as the scheduler does.
        take_lease(kube_api, namespace, lease, "intruder")
        exited = wait_for(lambda: second.proc.poll() is not None, timeout=30, what="an exit")
        assert exited and second.proc.returncode == 1
    finally:
        stage.proxy.delay = 0.0
        stage.proxy.on_eviction = None
        for replica in replicas:
            replica.kill()
        for name in [*hot, cold]:
            exporter.remove(name)
    # Within the lease duration, give or take one retry period and the load of the machine.
    assert took <= LEASE_S + 2.0, took
    pods = [pod for _, pod in stage.proxy.asked(namespace)]
    assert len(pods) == len(set(pods)), pods  # no pod asked twice
    # Nor a second pod off the node the killed leader took one from: its rest was on record
    # (an Event) before its Eviction call.
    workloads = [pod.split("-")[0] for pod in pods]
    assert workloads.count(workloads[0]) == 1, pods


# --- failures that set a pod aside and never block the node ----------------------------------
def hot_and_cold(
    kube_api: client.ApiClient, kube_nodes: Any, namespace: str, exporter: Any
) -> tuple[str, str]:
    hot, cold = f"{namespace}-hot", f"{namespace}-cold"
    exporter.set(hot, cpu=92.0, memory=30.0)
    exporter.set(cold, cpu=10.0, memory=30.0)
    kube_nodes([NodeSpec(hot, cpu="2", memory="8Gi"), NodeSpec(cold, cpu="16", memory="32Gi")])
    return hot, cold


def guard_evictions(kube_api: client.ApiClient, namespace: str, prefix: str) -> None:
    """A ValidatingAdmissionPolicy that refuses (403) every Eviction of the pods of `namespace`
    whose name starts with `prefix`, as an admission webhook guarding a workload would; waits
    until it answers."""
    name = f"{namespace}-guard"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods/eviction"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": f"!object.metadata.name.startsWith('{prefix}')",
                    "message": f"{prefix} pods are guarded",
                    "reason": "Forbidden",
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    admission = client.AdmissionregistrationV1Api(kube_api)
    admission.create_validating_admission_policy(policy, _request_timeout=T)
    admission.create_validating_admission_policy_binding(binding, _request_timeout=T)
    # One of the guarded pods, asked with dryRun=All: 201 (nothing evicted) until the policy
    # is in force, 403 from then on.
    pod = next(p for p in placement(kube_api, namespace) if p.startswith(prefix))
    probe = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": namespace},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/eviction?dryRun=All"

    def refusing() -> bool:
        return kubeapi.request(kube_api, "POST", path, probe, (5.0, 10.0)).status == 403

    wait_for(refusing, timeout=30, what="the admission policy in force")


def unguard(kube_api: client.ApiClient, namespace: str) -> None:
    admission = client.AdmissionregistrationV1Api(kube_api)
    name = f"{namespace}-guard"
    admission.delete_validating_admission_policy_binding(name, _request_timeout=T)
    admission.delete_validating_admission_policy(name, _request_timeout=T)


def test_a_500_a_lost_connection_and_a_webhook_403_leave_the_node_to_its_next_move(
    stage, kube_api, kube_nodes, namespace, exporter
):
    """The hot node's first candidates: two flaky replicas (the proxy answers one's Eviction
    with a 500 and drops the other's connection unanswered) and two guarded ones (a
    ValidatingAdmissionPolicy refuses their Evictions with 403); a web replica after them.
    Within the round of the failures the web replica goes; every failed pod is set aside for
    the node's rest (asked once), the guarded workload as a whole (one replica asked), and with
    a burst of two tokens the three refused requests leave the rate to the eviction."""
    hot, cold = hot_and_cold(kube_api, kube_nodes, namespace, exporter)
    flaky: list[str] = []

    def fail_flaky(request: Request) -> Fault | None:
        if not request.eviction or not request.pod[1].startswith("flaky-"):
            return None
        if request.pod[1] not in flaky:
            flaky.append(request.pod[1])
        return Fault(status=500) if request.pod[1] == flaky[0] else Fault(drop=True)

    try:
        create(
            kube_api,
            namespace,
            deployment("flaky", 2, cpu=None, node=hot),  # BestEffort: the first candidates
            deployment("guarded", 2, cpu=None, node=hot),
            deployment("web", 2, node=hot),
        )
        before = wait_for(
            lambda: on_node(kube_api, namespace, hot, 6), timeout=60, what="six pods, hot"
        )
        guard_evictions(kube_api, namespace, "guarded-")
        stage.watcher.wait_nodes([hot, cold], metrics=("cpu",))
        stage.proxy.fault = fail_flaky
        section = {"interval": "2s", "maxPerRound": 2, "evictionsPerMinute": 1}
        # The exporter's loads stay put after the move; a provider lag longer than these rounds
        # keeps the node's fresh samples from ending its rest early (see the test above).
        with rebalancer(stage.api, stage.watcher.url, section, provider_lag=30.0) as r:
            wait_for(
                lambda: count(r.telemetry.evictions, "cpu-hot") >= 1,
                timeout=30,
                what="an eviction",
            )
            start = rounds(r)
            wait_for(lambda: rounds(r) >= start + 3, timeout=30)
    finally:
        stage.proxy.reset()
        exporter.remove(hot)
        exporter.remove(cold)
        unguard(kube_api, namespace)
    asked = stage.proxy.asked(namespace)
    pods = [pod for _, pod in asked]
    assert sorted(p.split("-")[0] for p in pods) == ["flaky", "flaky", "guarded", "web"], pods
    assert len(set(pods)) == 4  # none asked twice: set aside for the node's rest
    assert asked[-1][1].startswith("web-") and asked[-1][0] - asked[0][0] < 1.5, asked
    assert count(r.telemetry.evictions, "cpu-hot") == 1
    assert count(r.telemetry.skipped, "failed") == 1  # the 500
    assert count(r.telemetry.skipped, "no-answer") == 1  # the dropped connection: pod still there
    assert count(r.telemetry.skipped, "refused") == 1  # the policy's 403
    assert count(r.telemetry.skipped, "rate-limit") == 0
    assert [p for p in on_node(kube_api, namespace, hot) if not p.startswith("web-")] == [
        p for p in before if not p.startswith("web-")
    ]


def test_an_eviction_whose_answer_never_came_but_took_place_counts_as_done(
    stage, kube_api, kube_nodes, namespace, exporter
):
    """The proxy forwards the first Eviction and holds its answer past the call's timeout:
    the pod was evicted, the rebalancer cannot know from the call. It asks the pod (its uid
    gone or terminating), counts the eviction, and lets the node rest: no second pod leaves."""
    hot, cold = hot_and_cold(kube_api, kube_nodes, namespace, exporter)
    late: list[str] = []

    def answer_late(request: Request) -> Fault | None:
        if not request.eviction:
            return None
        late.append(request.pod[1])
        return Fault(late=4.0)  # the call gives up after about 1.25 s (the lease's margin)

    try:
        create(
            kube_api,
            namespace,
            deployment("slow", 2, cpu=None, node=hot),
            deployment("web", 2, node=hot),
        )
        wait_for(lambda: on_node(kube_api, namespace, hot, 4), timeout=60, what="four pods, hot")
        stage.watcher.wait_nodes([hot, cold], metrics=("cpu",))
        stage.proxy.fault = answer_late
        election = {"leaderElect": True, "resourceNamespace": namespace, **ELECTION}
        # The exporter's loads stay put after the move; a provider lag longer than the test keeps
        # the node's fresh samples from ending its rest early (see the tests above).
        with rebalancer(stage.api, stage.watcher.url, {}, election, "one", provider_lag=30.0) as r:
            wait_for(lambda: late, timeout=40, what="an eviction sent")
            wait_for(
                lambda: count(r.telemetry.evictions, "cpu-hot") >= 1,
                timeout=20,
                what="the eviction counted",
            )
            start = rounds(r)
            wait_for(lambda: rounds(r) >= start + 6, timeout=30)
            resting = r.last.get("resting") or {}
    finally:
        stage.proxy.reset()
        exporter.remove(hot)
        exporter.remove(cold)
    assert len(late) == 1 and late[0].startswith("slow-"), late
    assert count(r.telemetry.evictions, "cpu-hot") == 1
    assert count(r.telemetry.skipped, "no-answer") == 0
    assert hot in resting


def test_no_eviction_without_its_intent_on_record(stage, kube_api, kube_nodes, namespace, exporter):
    """The node's RebalancerEvicting Event is the rest a successor reads back: while the API
    server refuses it (a 500 from the proxy), nothing is evicted; once it is written again the
    eviction goes ahead."""
    hot, cold = hot_and_cold(kube_api, kube_nodes, namespace, exporter)
    refused: list[float] = []

    def no_intent(request: Request) -> Fault | None:
        if request.method == "POST" and b'"RebalancerEvicting"' in request.body:
            refused.append(time.time())
            return Fault(status=500)
        return None

    try:
        create(kube_api, namespace, deployment("web", 2, node=hot))
        wait_for(lambda: on_node(kube_api, namespace, hot, 2), timeout=60, what="two pods, hot")
        stage.watcher.wait_nodes([hot, cold], metrics=("cpu",))
        stage.proxy.fault = no_intent
        with rebalancer(stage.api, stage.watcher.url, {}) as r:
            wait_for(lambda: refused, timeout=40, what="a refused intent")
            start = rounds(r)
            wait_for(lambda: rounds(r) >= start + 5, timeout=30)
            assert stage.proxy.asked(namespace) == []
            assert len(refused) >= 3  # tried again every round, never evicted
            assert count(r.telemetry.evictions, "cpu-hot") == 0
            assert count(r.telemetry.skipped, "intent-not-recorded") >= 3
            stage.proxy.fault = None
            wait_for(
                lambda: count(r.telemetry.evictions, "cpu-hot") >= 1,
                timeout=20,
                what="the eviction once its intent is written",
            )
    finally:
        stage.proxy.reset()
        exporter.remove(hot)
        exporter.remove(cold)
    assert len(stage.proxy.asked(namespace)) == 1
