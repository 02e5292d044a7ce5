"""The chart's rebalancer: it installs in dry run, and its schema refuses several replicas
without leader election (each would evict on its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sandbox.peers.helm import chart
from scheduler.rebalancer import settings


def template(tmp_path: Path, values: dict[str, Any]):
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return chart.helm("template", chart.RELEASE, str(chart.CHART), f"--values={path}", check=False)


def rebalancer_config(rendered: str) -> settings.RebalancerConfig:
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and "rebalancer-config.yaml" in d["data"]]
    return settings.parse(yaml.safe_load(cm["data"]["rebalancer-config.yaml"]))


def election(on: bool) -> dict[str, Any]:
    return {"scheduler": {"config": {"leaderElection": {"leaderElect": on}}}}


def test_replicas_above_one_need_leader_election(tmp_path):
    refused = template(tmp_path, {"rebalancer": {"enabled": True}, **election(False)})
    assert refused.returncode != 0
    assert "/rebalancer/replicas" in refused.stderr, refused.stderr
    one = template(tmp_path, {"rebalancer": {"enabled": True, "replicas": 1}, **election(False)})
    assert one.returncode == 0, one.stderr
    assert rebalancer_config(one.stdout).scheduler.leader_election.leader_elect is False
    two = template(tmp_path, {"rebalancer": {"enabled": True, "replicas": 2}, **election(True)})
    assert two.returncode == 0, two.stderr


def test_the_chart_installs_the_rebalancer_in_dry_run_with_safe_defaults(tmp_path):
    rendered = template(tmp_path, {"rebalancer": {"enabled": True}})
    assert rendered.returncode == 0, rendered.stderr
    section = rebalancer_config(rendered.stdout).rebalancer
    assert section.dry_run is True
    assert section.min_replicas == 2
    assert section.schedulers == ("ballast",)
    assert section.namespace_selector.everything


def test_the_rebalancer_runs_as_the_scheduler_does(tmp_path):
    """Sizes, start-up probe, disruption budget, anti-affinity and priority class: the
    scheduler's, since it holds the same cache."""
    values = {"rebalancer": {"enabled": True}, "priorityClassName": "ballast-critical"}
    rendered = template(tmp_path, values)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]

    def find(kind: str, name: str) -> dict[str, Any]:
        return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)

    pods = {
        part: find("Deployment", f"ballast-{part}")["spec"]["template"]
        for part in ("scheduler", "rebalancer")
    }
    sched, reb = (pods[p]["spec"] for p in ("scheduler", "rebalancer"))
    labels = pods["rebalancer"]["metadata"]["labels"]
    assert reb["containers"][0]["resources"] == sched["containers"][0]["resources"]
    probe = reb["containers"][0]["startupProbe"]
    assert probe["httpGet"] == {"path": "/healthz", "port": "http"}
    assert probe["failureThreshold"] * probe["periodSeconds"] >= 60
    assert reb["priorityClassName"] == sched["priorityClassName"] == "ballast-critical"
    (term,) = reb["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == labels
    budget = find("PodDisruptionBudget", "ballast-rebalancer")["spec"]
    assert budget["selector"]["matchLabels"] == labels
    assert budget["maxUnavailable"] == 1
    off = template(tmp_path, {"rebalancer": {"enabled": True, "pdb": {"enabled": False}}})
    assert not any(
        d["kind"] == "PodDisruptionBudget" and d["metadata"]["name"] == "ballast-rebalancer"
        for d in yaml.safe_load_all(off.stdout)
        if d
    )
    assert "priorityClassName" not in yaml.safe_dump(
        [d for d in yaml.safe_load_all(off.stdout) if d and d["kind"] == "Deployment"]
    )
