"""The deployment files agree with the code that reads them: scheduler configs, compose.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scheduler.config.loader import load_config
from watcher.config import Config

ROOT = Path(__file__).resolve().parents[2]
BALLAST_SCHEDULER_CONFIGS = {
    "k8s/scheduler-config.yaml": "http://ballast-watcher.ballast.svc:2020",
    "compose/scheduler.yaml": "http://watcher:2020",
    "k8s/examples/openshift-secondary-scheduler/scheduler-config.yaml": (
        "http://ballast-watcher.ballast.svc:2020"
    ),
}


@pytest.mark.parametrize("path", sorted(BALLAST_SCHEDULER_CONFIGS))
def test_shipped_scheduler_configs_load(path):
    cfg = load_config(ROOT / path)
    assert cfg.watcher_address == BALLAST_SCHEDULER_CONFIGS[path]
    assert cfg.leader_election.leader_elect
    assert [p.scheduler_name for p in cfg.profiles] == ["ballast"]
    assert "TargetLoadPacking" in [s.name for s in cfg.profiles[0].scores]


def test_rbac_lease_name_matches_the_scheduler_config():
    cfg = load_config(ROOT / "k8s/scheduler-config.yaml")
    docs = list(yaml.safe_load_all((ROOT / "k8s/scheduler-rbac.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "Role")
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named[0]["resourceNames"] == [cfg.leader_election.resource_name]
    assert cfg.leader_election.resource_namespace == "ballast"


def test_compose_services_and_healthchecks():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"redis", "prometheus", "node-exporter", "watcher", "scheduler"}
    watcher, scheduler = services["watcher"], services["scheduler"]
    assert "/readyz" in " ".join(watcher["healthcheck"]["test"])
    assert watcher["environment"]["BALLAST_WORKERS"] == "2"
    assert any(v.endswith(":/etc/ballast/kubeconfig:ro") for v in scheduler["volumes"])
    assert scheduler["depends_on"]["watcher"]["condition"] == "service_healthy"
    # Every BALLAST_* variable compose sets is a real watcher setting.
    fields = {f"BALLAST_{name.upper()}" for name in Config.__dataclass_fields__}
    assert set(watcher["environment"]) <= fields
    for mount in scheduler["volumes"] + services["prometheus"]["volumes"]:
        source = mount.split(":")[0]
        if source.startswith("./"):
            assert (ROOT / source).is_file(), f"compose mounts a missing file: {source}"


def test_kustomize_watcher_env_names_are_watcher_settings():
    kustomization = yaml.safe_load((ROOT / "k8s/kustomization.yaml").read_text())
    env = next(g for g in kustomization["configMapGenerator"] if g["name"] == "ballast-watcher-env")
    fields = {f"BALLAST_{name.upper()}" for name in Config.__dataclass_fields__}
    assert {item.split("=", 1)[0] for item in env["literals"]} <= fields


def test_openshift_example_sends_the_base_watchers_token():
    # The operator mounts only the ConfigMap, so the token is inline: it must match the Secret.
    kustomization = yaml.safe_load((ROOT / "k8s/kustomization.yaml").read_text())
    generators = kustomization["secretGenerator"]
    secret = next(g for g in generators if g["name"] == "ballast-watcher-token")
    token = dict(item.split("=", 1) for item in secret["literals"])["token"]
    cfg = load_config(ROOT / "k8s/examples/openshift-secondary-scheduler/scheduler-config.yaml")
    assert cfg.watcher_token == token
    assert load_config(ROOT / "k8s/scheduler-config.yaml").watcher_token_file
