"""The placement benchmark's learnable scenario and the feasibility check (pure parts)."""

from __future__ import annotations

from bench.placement import run as pl
from shared.workloads import workload_of


def test_learnable_replicas_share_their_deployments_factor_and_request() -> None:
    _, pods = pl.plan(pl.SCENARIOS["learnable"], 1, 50)
    by_deployment: dict[int, set] = {}
    for p in pods:
        by_deployment.setdefault(p.deployment, set()).add((p.cpu_m, p.factor))
    assert len(by_deployment) == 16 and all(len(v) == 1 for v in by_deployment.values())
    factors = [next(iter(v))[1] for v in by_deployment.values()]
    assert factors.count(3.0) == 8 and factors.count(0.2) == 8
    # every wave has replicas of every Deployment: later waves can learn from the first
    per_wave = pl.SCENARIOS["learnable"].per_wave
    assert {p.deployment for p in pods[:per_wave]} == set(by_deployment)


def test_learnable_pods_name_their_deployment_through_a_replicaset() -> None:
    _, pods = pl.plan(pl.SCENARIOS["learnable"], 1, 50)
    body = pl.pod_body("ballast-tlp", 0, pods[0])
    body["metadata"]["namespace"] = pl.NAMESPACE
    w = workload_of(body["metadata"])
    assert w is not None and (w.kind, w.name) == ("Deployment", "ballast-tlp-d00")
    assert "ownerReferences" not in pl.pod_body("ballast-tlp", 0, pl.PodPlan(200, 1.0))["metadata"]


def test_misleading_and_learnable_are_feasible_and_near_70_percent() -> None:
    for name in ("misleading", "learnable"):
        for seed in pl.SEEDS:
            nodes, pods = pl.plan(pl.SCENARIOS[name], seed, pl.NODES_PER_POOL)
            assert 60 <= pl.mean_demand(nodes, pods) <= 80
            fit = pl.perfect_fit(nodes, pods)
            assert fit is not None and fit < 95


def test_perfect_fit_says_when_it_cannot_place() -> None:
    nodes = [pl.NodePlan(1, 50.0, 10.0)]
    assert pl.perfect_fit(nodes, [pl.PodPlan(400, 1.0)]) is not None
    assert pl.perfect_fit(nodes, [pl.PodPlan(400, 2.0)]) is None
