"""The deployment files agree with the code that reads them: scheduler configs, compose.yaml,
the chart's values schema, and k8s/ballast.yaml (the chart rendered by `make manifests`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sandbox.peers.helm import chart
from scheduler.config import registry
from scheduler.config.loader import load_config, parse_config
from watcher.config import Config

ROOT = Path(__file__).resolve().parents[2]
BALLAST_SCHEDULER_CONFIGS = {
    "compose/scheduler.yaml": "http://watcher:2020",
    "k8s/examples/openshift-secondary-scheduler/scheduler-config.yaml": (
        "http://ballast-watcher.ballast.svc:2020"
    ),
}


def manifest() -> list[dict]:
    return [d for d in yaml.safe_load_all(chart.MANIFEST.read_text()) if d]


def manifest_object(kind: str, name: str) -> dict:
    return next(d for d in manifest() if d["kind"] == kind and d["metadata"]["name"] == name)


def manifest_scheduler_config():
    cm = manifest_object("ConfigMap", "ballast-scheduler-config")
    return parse_config(yaml.safe_load(cm["data"]["scheduler-config.yaml"]))


@pytest.mark.parametrize("path", sorted(BALLAST_SCHEDULER_CONFIGS) + [str(chart.MANIFEST)])
def test_shipped_scheduler_configs_load(path):
    if path == str(chart.MANIFEST):
        cfg = manifest_scheduler_config()
        assert cfg.watcher_address == "http://ballast-watcher.ballast.svc:2020"
    else:
        cfg = load_config(ROOT / path)
        assert cfg.watcher_address == BALLAST_SCHEDULER_CONFIGS[path]
    assert cfg.leader_election.leader_elect
    assert [p.scheduler_name for p in cfg.profiles] == ["ballast"]
    scores = [s.name for s in cfg.profiles[0].scores]
    if path == str(chart.MANIFEST):  # the chart's profile: LoadVariationRiskBalancing alone
        assert "LoadVariationRiskBalancing" in scores and "TargetLoadPacking" not in scores
    else:
        assert "TargetLoadPacking" in scores


def test_rbac_lease_name_matches_the_scheduler_config():
    cfg = manifest_scheduler_config()
    role = manifest_object("Role", "ballast-scheduler-lease")
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


def test_manifest_watcher_env_names_are_watcher_settings():
    env = manifest_object("ConfigMap", "ballast-watcher-env")["data"]
    fields = {f"BALLAST_{name.upper()}" for name in Config.__dataclass_fields__}
    assert set(env) <= fields
    assert env["BALLAST_API_OPEN_PATHS"] == "/watcher"  # Trimaran cannot send the token


def test_openshift_example_names_the_secret_whose_token_it_needs():
    # The operator mounts only the ConfigMap, so the token is inline. k8s/ carries no Secret (the
    # user creates it): the example holds a placeholder naming the Secret the watcher reads.
    cfg = load_config(ROOT / "k8s/examples/openshift-secondary-scheduler/scheduler-config.yaml")
    watcher = manifest_object("Deployment", "ballast-watcher")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in watcher["containers"][0]["env"]}
    secret = env["BALLAST_API_TOKEN"]["valueFrom"]["secretKeyRef"]["name"]
    assert cfg.watcher_token.startswith("REPLACE") and secret in cfg.watcher_token
    assert manifest_scheduler_config().watcher_token_file


def test_manifest_watcher_and_scheduler_share_the_token_secret():
    watcher = manifest_object("Deployment", "ballast-watcher")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in watcher["containers"][0]["env"]}
    ref = env["BALLAST_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "ballast-watcher-token", "key": "token"}
    scheduler = manifest_object("Deployment", "ballast-scheduler")["spec"]["template"]["spec"]
    volume = next(v for v in scheduler["volumes"] if "secret" in v)
    assert volume["secret"]["secretName"] == "ballast-watcher-token"
    (mount,) = [
        m for m in scheduler["containers"][0]["volumeMounts"] if m["name"] == volume["name"]
    ]
    assert manifest_scheduler_config().watcher_token_file == f"{mount['mountPath']}/token"


def test_manifest_parts_are_hardened_and_probed():
    namespace = manifest_object("Namespace", "ballast")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for kind, name in [("Deployment", "ballast-watcher"), ("Deployment", "ballast-scheduler"),
                       ("StatefulSet", "ballast-redis")]:  # fmt: skip
        pod = manifest_object(kind, name)["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["livenessProbe"] and container["readinessProbe"]
        assert container["resources"]["requests"] and container["resources"]["limits"]
    assert manifest_object("PodDisruptionBudget", "ballast-watcher")["spec"]["maxUnavailable"] == 1


def test_values_schema_names_exactly_the_registered_plugins():
    schema = json.loads((chart.CHART / "values.schema.json").read_text())
    assert schema["definitions"]["pluginName"]["enum"] == registry.names()
