"""Preemption judged against upstream kube-scheduler: the same cluster, the same preemptor.

Each seeded scenario fills three 4-CPU nodes with pods of distinct lower priorities (placed by
name, priorities through PriorityClass admission), then a priority-100 pod that fits nowhere
arrives. Upstream kube-scheduler and Ballast each get the scenario on a fresh namespace over the
same nodes, one scheduler at a time (there is no controller-manager: nothing else moves), and
must evict the same victims and bind the preemptor to the same node. Distinct priorities make
upstream's own order decide (lowest highest-victim priority), so its random offset and
unordered final tie cannot make the judge disagree with itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
from kubernetes import client

from sandbox.cluster.namespaces import delete_namespace, ensure_namespace
from tests.differential.upstream import start_kube_scheduler, stop_judge
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import T, create_pods, placement, pod_body, running
from tests.integration.test_scheduler_preemption import priority_classes  # noqa: F401

SEEDS = (1, 2, 3, 4, 5)
NODE_CPU = 4
PREEMPTOR_PRIORITY = 100


def scenario(seed: int, nodes: list[str]) -> tuple[list[tuple[str, str, int, int]], int]:
    """([(pod, node, cpu, priority)], preemptor cpu): every node full, priorities distinct."""
    rng = random.Random(seed)
    priorities = iter(rng.sample(range(1, 60), NODE_CPU * len(nodes)))
    placed = []
    for i, node in enumerate(nodes):
        left = NODE_CPU
        j = 0
        while left:
            cpu = min(left, rng.choice((1, 1, 2)))
            placed.append((f"v{i}-{j}", node, cpu, next(priorities)))
            left -= cpu
            j += 1
    return placed, rng.choice((2, 3, 4))


@contextmanager
def upstream(sandbox) -> Any:
    start_kube_scheduler(sandbox)
    try:
        yield
    finally:
        stop_judge(sandbox)


def play(
    kube_api,
    namespace: str,
    scheduler: str,
    start: Callable[[], AbstractContextManager],
    placed: list[tuple[str, str, int, int]],
    cpu: int,
    classes: dict[int, str],
    label: dict[str, str],
) -> tuple[str, list[str]]:
    """(the preemptor's node, the victims' names) under one scheduler."""
    bodies = []
    for name, node, pod_cpu, priority in placed:
        body = pod_body(name, scheduler=scheduler, cpu=str(pod_cpu))
        body["spec"].update(nodeName=node, priorityClassName=classes[priority])
        bodies.append(body)
    create_pods(kube_api, namespace, bodies)
    preemptor = pod_body("hi", scheduler=scheduler, cpu=str(cpu), node_selector=label)
    preemptor["spec"]["priorityClassName"] = classes[PREEMPTOR_PRIORITY]
    with start():
        create_pods(kube_api, namespace, [preemptor])
        node = wait_for(
            lambda: placement(kube_api, namespace).get("hi") or None,
            timeout=60,
            what=f"preemptor bound by {scheduler}",
        )
    left = placement(kube_api, namespace)
    return node, sorted(name for name, *_ in placed if name not in left)


def empty(kube_api, nodes: list[str]) -> bool:
    core = client.CoreV1Api(kube_api)
    for node in nodes:
        found = core.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={node}", _request_timeout=T
        )
        if found.items:
            return False
    return True


@pytest.mark.parametrize("seed", SEEDS)
def test_same_node_and_victims_as_kube_scheduler(
    sandbox,
    kube_api,
    kube_nodes,
    namespace,
    priority_classes,  # noqa: F811
    seed,
):
    label = {"ballast-test": namespace}
    nodes = kube_nodes(3, cpu=str(NODE_CPU), labels=label)
    placed, cpu = scenario(seed, nodes)
    values = {p for *_, p in placed} | {PREEMPTOR_PRIORITY}
    classes = {v: priority_classes(v) for v in sorted(values)}
    results = {}
    sides = (
        ("default-scheduler", lambda: upstream(sandbox)),
        ("ballast", lambda: running(kube_api)),
    )
    for scheduler, start in sides:
        ns = f"{namespace}-{scheduler[:7]}"
        ensure_namespace(kube_api, ns)
        try:
            results[scheduler] = play(kube_api, ns, scheduler, start, placed, cpu, classes, label)
        finally:
            delete_namespace(kube_api, ns)
        wait_for(lambda: empty(kube_api, nodes), timeout=30, what="nodes empty again")
    assert results["ballast"] == results["default-scheduler"], (seed, placed, cpu)
    assert results["ballast"][1], "the scenario must need a preemption"
