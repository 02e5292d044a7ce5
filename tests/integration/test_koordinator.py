"""Koordinator runs on the sandbox as its users run it, fed by the NodeMetric stand-in.

koord-scheduler (LoadAwareScheduling with its default args) turns away a node whose NodeMetric
says 90 % CPU ("cpu usage exceed threshold"; the default threshold is 65 %) and a node whose
NodeMetric is older than 180 s ("nodeMetric expired"), and binds to the cool node.
koord-descheduler (LowNodeLoad, DefaultEvictor) evicts from a node held above its high
threshold only after more than `consecutiveAbnormalities` rounds, never from the cool node, and
not while a PodDisruptionBudget is at its limit; through its MigrationController (EvictDirectly,
the bench's koord-descheduler-migration) it evicts by a PodMigrationJob, held by the PDB too,
with no Reservation. The load comes from the simulator through
`sandbox.load.nodemetric`, the code `ballast sandbox up --with-koordinator` runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from sandbox.load.nodemetric import (
    GROUP,
    PLURAL,
    VERSION,
    NodeMetricConfig,
    NodeMetricWriter,
    delete_all,
)
from sandbox.load.simulator import NodeCapacity, Simulator, SimulatorConfig
from sandbox.peers import koordinator
from sandbox.peers.koordinator import descheduler, scheduler
from sandbox.peers.trimaran import stop_scheduler
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import create_pods, pod_body, pods

T = 10
GI = 1024**3
# A report every second of 3-second means: the figures follow the load within seconds.
FAST = NodeMetricConfig(report_seconds=1, aggregate_seconds=3, durations=(6,))
# A minute's means: a pod gone from the node would linger in them, were it still listed.
MINUTE = NodeMetricConfig(report_seconds=1, aggregate_seconds=60, durations=(60,))
STALE_SECONDS = 300  # beyond LoadAwareScheduling's default nodeMetricExpirationSeconds, 180
ABNORMALITIES = 3
LOW = {"cpu": 45, "memory": 55}  # Koordinator's example thresholds (config/manager)
HIGH = {"cpu": 75, "memory": 80}


@pytest.fixture(scope="module")
def crds(kube_api: client.ApiClient) -> list[str]:
    return koordinator.apply_crds(kube_api)


def sim_config(background: dict[str, tuple[float, float]]) -> SimulatorConfig:
    # Pods use exactly their requests at once; the nodes' backgrounds are the ones given.
    return SimulatorConfig(
        factor_min=1.0, factor_max=1.0, ramp_seconds=0.0, wobble=0.0, background=background
    )


@contextmanager
def node_agent(
    api: client.ApiClient,
    config: SimulatorConfig,
    nodes: list[str],
    metrics: NodeMetricConfig = FAST,
) -> Iterator[NodeMetricWriter]:
    """The simulator writing NodeMetrics for `nodes` (and no other) every second."""
    writer = NodeMetricWriter(api, metrics, include=set(nodes).__contains__)
    sim = Simulator(api, None, config, on_tick=writer.observe).start()
    writer.start()
    try:
        yield writer
    finally:
        sim.stop()
        writer.stop()
        delete_all(api, nodes)


def node_metric(api: client.ApiClient, name: str) -> dict[str, Any]:
    return client.CustomObjectsApi(api).get_cluster_custom_object(
        GROUP, VERSION, PLURAL, name, _request_timeout=T
    )


def cpu_percent(api: client.ApiClient, name: str, capacity_m: int) -> float:
    status = node_metric(api, name).get("status") or {}
    used = status["nodeMetric"]["nodeUsage"]["resources"]["cpu"]
    return 100.0 * int(used.removesuffix("m")) / capacity_m


def listed_pods(api: client.ApiClient, name: str) -> set[str]:
    status = node_metric(api, name).get("status") or {}
    return {p["name"] for p in status.get("podsMetric") or []}


def unschedulable_message(api: client.ApiClient, namespace: str, pod: str) -> str:
    for condition in pods(api, namespace)[pod]["status"].get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition.get("message") or ""
    return ""


def test_koord_scheduler_turns_away_a_hot_node_and_a_stale_one(
    sandbox, kube_api, kube_nodes, namespace, crds
):
    names = {role: f"{namespace}-{role}" for role in ("hot", "cool", "stale")}
    label = {"ballast-test": namespace}
    kube_nodes([NodeSpec(n, cpu="2", memory="8Gi", labels=label) for n in names.values()])
    # The stale node's only report, as of 300 s ago: its agent stopped then.
    then = time.time() - STALE_SECONDS
    stale = NodeMetricWriter(kube_api, FAST, clock=lambda: then)
    quiet = sim_config({names["stale"]: (5.0, 5.0)})
    stale.observe({names["stale"]: NodeCapacity(2000, 8 * GI)}, [], then, quiet)
    assert stale.write() == 1
    koord = f"koord-{namespace}"[:63]
    background = {names["hot"]: (90.0, 30.0), names["cool"]: (10.0, 20.0)}
    try:
        with node_agent(kube_api, sim_config(background), [names["hot"], names["cool"]]):
            wait_for(
                lambda: cpu_percent(kube_api, names["hot"], 2000) > 85,
                timeout=30,
                what="the hot node's NodeMetric",
            )
            scheduler.start_koord_scheduler(sandbox, scheduler_name=koord, name=koord)
            try:
                selectors = {
                    "to-hot": {"kubernetes.io/hostname": names["hot"]},
                    "to-stale": {"kubernetes.io/hostname": names["stale"]},
                    "anywhere": label,
                }
                bodies = [pod_body(n, koord, node_selector=s) for n, s in selectors.items()]
                create_pods(kube_api, namespace, bodies)
                bound = wait_for(
                    lambda: pods(kube_api, namespace)["anywhere"]["spec"].get("nodeName"),
                    timeout=60,
                    what="koord-scheduler to bind the pod free to go anywhere",
                )
                hot = wait_for(lambda: unschedulable_message(kube_api, namespace, "to-hot"), 60)
                expired = wait_for(
                    lambda: unschedulable_message(kube_api, namespace, "to-stale"), 60
                )
            finally:
                stop_scheduler(sandbox, koord)
    finally:
        delete_all(kube_api, [names["stale"]])
    assert bound == names["cool"]
    assert scheduler.CPU_EXCEEDED in hot, hot
    assert scheduler.METRIC_EXPIRED in expired, expired
    assert not pods(kube_api, namespace)["to-hot"]["spec"].get("nodeName")


def nodes_for(namespace: str) -> list[NodeSpec]:
    """A hot and a cool node of 4 CPUs, labelled for the test."""
    label = {"ballast-test": namespace}
    return [NodeSpec(f"{namespace}-{r}", cpu="4", memory="16Gi", labels=label)
            for r in ("hot", "cool")]  # fmt: skip


def pdb_at_limit(api: client.ApiClient, namespace: str, app: str, replicas: int) -> None:
    """A PodDisruptionBudget that lets none of `app`'s `replicas` pods go, its status seen."""
    policy = client.PolicyV1Api(api)
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app},
        "spec": {"minAvailable": replicas, "selector": {"matchLabels": {"app": app}}},
    }
    policy.create_namespaced_pod_disruption_budget(namespace, pdb, _request_timeout=T)
    wait_for(
        lambda: (
            policy.read_namespaced_pod_disruption_budget(app, namespace).status.current_healthy
            == replicas
        ),
        timeout=60,
        what=f"the PDB's status ({replicas} healthy, none allowed to go)",
    )


def deployment(name: str, node: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    container = {
        "name": "app",
        "image": "example.invalid/app:1",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                # Placed where it is created: replacements come back to the same node.
                "spec": {"nodeName": node, "containers": [container]},
            },
        },
    }


def uids(api: client.ApiClient, namespace: str, app: str) -> dict[str, str]:
    listed = client.CoreV1Api(api).list_namespaced_pod(
        namespace, label_selector=f"app={app}", _request_timeout=T
    )
    return {p.metadata.uid: p.metadata.name for p in listed.items}


def listed_exactly(api: client.ApiClient, namespace: str, node: str) -> set[str] | None:
    """The busy pods' names when the node's podsMetric lists exactly them, else None."""
    running = set(uids(api, namespace, "busy").values())
    return running if running and listed_pods(api, node) == running else None


def test_koord_descheduler_evicts_from_the_hot_node_after_its_anomaly_count(
    sandbox, kube_api, kube_nodes, namespace, crds
):
    names = {role: f"{namespace}-{role}" for role in ("hot", "cool")}
    label = {"ballast-test": namespace}
    kube_nodes(nodes_for(namespace))
    apps, policy = client.AppsV1Api(kube_api), client.PolicyV1Api(kube_api)
    # hot: 20 % + 3 x 25 % = 95 % CPU, above high; cool: 10 % + 25 % = 35 %, below low.
    apps.create_namespaced_deployment(namespace, deployment("busy", names["hot"], 3))
    apps.create_namespaced_deployment(namespace, deployment("calm", names["cool"], 1))
    pdb_at_limit(kube_api, namespace, "busy", 3)
    busy, calm = uids(kube_api, namespace, "busy"), uids(kube_api, namespace, "calm")
    assert len(busy) == 3 and len(calm) == 1
    background = {names["hot"]: (20.0, 20.0), names["cool"]: (10.0, 20.0)}
    name = f"koord-descheduler-{namespace}"
    with node_agent(kube_api, sim_config(background), list(names.values()), MINUTE):
        wait_for(
            lambda: cpu_percent(kube_api, names["hot"], 4000) > 90,
            timeout=30,
            what="the hot node's NodeMetric with its three pods",
        )
        doc = descheduler.config(
            sandbox.kubeconfig, LOW, HIGH, interval=1, abnormalities=ABNORMALITIES,
            namespaces=[namespace], node_selector=label,
        )  # fmt: skip
        descheduler.start_koord_descheduler(sandbox, doc, name=name)
        try:
            refused = wait_for(
                lambda: descheduler.log_lines(sandbox, name, descheduler.EVICTION_FAILED),
                timeout=60,
                what="an eviction the PDB refuses",
            )
            assert uids(kube_api, namespace, "busy") == busy
            log = (sandbox.log_dir / f"{name}.log").read_text(errors="replace")
            before = log.split(descheduler.EVICTION_FAILED, 1)[0]
            quiet_rounds = before.count(descheduler.NOT_ANOMALOUS)
            policy.delete_namespaced_pod_disruption_budget("busy", namespace, _request_timeout=T)
            evicted = wait_for(
                lambda: set(busy) - set(uids(kube_api, namespace, "busy")),
                timeout=60,
                what="an eviction from the hot node once the PDB is gone",
            )
        finally:
            stop_scheduler(sandbox, name)
        # Evictions over, the hot node's report lists exactly its running pods: the evicted
        # ones no more, their replacements (bound back to it) already.
        running = wait_for(
            lambda: listed_exactly(kube_api, namespace, names["hot"]),
            timeout=20,  # well within the minute an evicted pod would linger
            what="the hot node's podsMetric to list exactly its running pods",
        )
        policy_seen = node_metric(kube_api, names["hot"])["spec"]["metricCollectPolicy"]
    gone = {busy[uid] for uid in evicted}
    assert gone and not gone & running, (gone, running)
    assert any(busy[uid] in " ".join(refused) for uid in busy), refused
    assert quiet_rounds >= ABNORMALITIES, before[-2000:]
    assert uids(kube_api, namespace, "calm") == calm
    for line in descheduler.log_lines(sandbox, name, descheduler.EVICTED):
        assert any(pod in line for pod in busy.values()), line
    assert policy_seen["reportIntervalSeconds"] == 1


@contextmanager
def migrating(
    sandbox, api: client.ApiClient, kube_nodes, namespace: str, mode: str, pdb: bool = False
) -> Iterator[tuple[str, dict[str, str]]]:
    """A hot node (20 % + 3 x 25 % = 95 % CPU, above high) and a cool one (10 %), the three pods
    of `busy` on the hot one (a PDB at its limit if `pdb`), and koord-descheduler evicting
    through its MigrationController in `mode` every second once the node is hot for 2 rounds;
    yields its process name and busy's pods (uid -> name)."""
    names = {role: f"{namespace}-{role}" for role in ("hot", "cool")}
    label = {"ballast-test": namespace}
    kube_nodes(nodes_for(namespace))
    client.AppsV1Api(api).create_namespaced_deployment(
        namespace, deployment("busy", names["hot"], 3), _request_timeout=T
    )
    if pdb:
        pdb_at_limit(api, namespace, "busy", 3)
    busy = wait_for(lambda: len(uids(api, namespace, "busy")) == 3, what="busy's three pods")
    busy = uids(api, namespace, "busy")
    background = {names["hot"]: (20.0, 20.0), names["cool"]: (10.0, 20.0)}
    name = f"koord-migration-{namespace}"
    with node_agent(api, sim_config(background), list(names.values())):
        wait_for(
            lambda: cpu_percent(api, names["hot"], 4000) > 90,
            timeout=30,
            what="the hot node's NodeMetric with its three pods",
        )
        # A job TTL and a workload limiter, as the trace sets them: the test reads them back.
        migration = descheduler.migration_args(mode, [namespace], job_ttl=60, workload_limiter=5)
        doc = descheduler.config(
            sandbox.kubeconfig, LOW, HIGH, interval=1, abnormalities=1, namespaces=[namespace],
            node_selector=label, migration=migration,
        )  # fmt: skip
        descheduler.start_koord_descheduler(sandbox, doc, name=name)
        try:
            yield name, busy
        finally:
            stop_scheduler(sandbox, name)


def test_koord_descheduler_migration_controller_evicts_by_a_pod_migration_job(
    sandbox, kube_api, kube_nodes, namespace, crds
):
    policy = client.PolicyV1Api(kube_api)
    directly = descheduler.EVICT_DIRECTLY
    with migrating(sandbox, kube_api, kube_nodes, namespace, directly, pdb=True) as (name, busy):
        refused = wait_for(
            lambda: [
                line
                for line in descheduler.log_lines(sandbox, name, descheduler.MIGRATION_FAILED)
                if "disruption budget" in line
            ],
            timeout=30,
            what="the PodMigrationJob's eviction, refused by the PDB",
        )
        held = descheduler.migration_jobs(kube_api, namespace)
        assert uids(kube_api, namespace, "busy") == busy
        policy.delete_namespaced_pod_disruption_budget("busy", namespace, _request_timeout=T)
        evicted = wait_for(
            lambda: set(busy) - set(uids(kube_api, namespace, "busy")),
            timeout=30,
            what="the job's eviction once the PDB is gone",
        )
        done = wait_for(
            lambda: [
                j
                for j in descheduler.migration_jobs(kube_api, namespace)
                if (j.get("status") or {}).get("phase") == "Succeeded"
            ],
            timeout=15,
            what="the PodMigrationJob to succeed",
        )
    assert len(held) == 1, held  # one job: the workload's others wait behind it
    job = done[0]
    assert job["metadata"]["uid"] == held[0]["metadata"]["uid"]
    assert job["spec"]["mode"] == descheduler.EVICT_DIRECTLY
    assert job["spec"]["podRef"]["uid"] in evicted
    assert job["metadata"]["annotations"]["koordinator.sh/evict-trigger"] == "LowNodeLoad"
    assert not job["spec"].get("reservationOptions"), job["spec"]  # no Reservation asked for
    assert held[0]["spec"]["podRef"]["name"] in " ".join(refused)
    # The configuration it runs (logged whole at --v=2), with the arguments given.
    used = descheduler.used_config(sandbox, name)
    wanted = ("defaultJobMode: EvictDirectly", "defaultJobTTL: 1m0s", "duration: 5s")
    for arg in (*wanted, "maxMigratingPerNode: 2", "evictionPolicy: Eviction"):
        assert arg in used, used[:3000]
    # The eviction is the job's: the controller's evictor logs it with the job's trigger.
    gone = busy[job["spec"]["podRef"]["uid"]]
    lines = descheduler.log_lines(sandbox, name, descheduler.EVICTED)
    assert any(gone in line and 'trigger="LowNodeLoad"' in line for line in lines), lines


def test_reservation_first_refuses_a_pod_koord_scheduler_did_not_place(
    sandbox, kube_api, kube_nodes, namespace, crds
):
    # Koordinator's default mode: a pod whose schedulerName is not among the controller's
    # schedulerNames (koord-scheduler) is filtered out, so LowNodeLoad evicts none of them.
    first = descheduler.RESERVATION_FIRST
    with migrating(sandbox, kube_api, kube_nodes, namespace, first) as (name, busy):
        refused = wait_for(
            lambda: descheduler.log_lines(sandbox, name, descheduler.NOT_RESERVABLE),
            timeout=30,
            what="the MigrationController to refuse the hot node's pods",
        )
        assert descheduler.migration_jobs(kube_api, namespace) == []
        assert uids(kube_api, namespace, "busy") == busy
    assert "pod.schedulerName=default-scheduler" in refused[0], refused[0]
