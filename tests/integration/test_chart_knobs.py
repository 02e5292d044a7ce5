"""The chart's operator knobs, rendered offline with helm: monitors and rules only where the
Prometheus Operator's API is served (and the NOTES say when it is not), the schema's refusals,
placement and extras on every part, names unique per release and namespace, the decision APIs
behind the token, NetworkPolicies for every part, logging flags and dual-stack listening."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sandbox.peers.helm import chart
from scheduler.rebalancer import settings
from tests.fixtures.ports import wait_for

MONITORING = [f"--api-versions=monitoring.coreos.com/v1/{kind}"
              for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule")]  # fmt: skip
PARTS = {
    "watcher": ("Deployment", "ballast-watcher"),
    "scheduler": ("Deployment", "ballast-scheduler"),
    "rebalancer": ("Deployment", "ballast-rebalancer"),
    "redis": ("StatefulSet", "ballast-redis"),
}


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def find(objects: list[dict], kind: str, name: str) -> dict:
    return next(d for d in objects if d["kind"] == kind and d["metadata"]["name"] == name)


def kinds(objects: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in objects if d["kind"] == kind}


def refused(tmp_path: Path, values: dict) -> str:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    result = chart.helm(
        "template", chart.RELEASE, str(chart.CHART), f"--values={path}", check=False
    )
    assert result.returncode != 0, "accepted"
    return result.stderr


# -- monitoring ----------------------------------------------------------------------------


def test_a_monitor_for_every_part_and_the_rules_where_the_operator_is_served():
    on = ["--set=rebalancer.enabled=true"]
    objects = docs(chart.template(extra=[*on, *MONITORING]))
    monitors = {**kinds(objects, "ServiceMonitor"), **kinds(objects, "PodMonitor")}
    assert set(monitors) == {"ballast-watcher", "ballast-scheduler", "ballast-rebalancer"}
    for part, (kind, name) in PARTS.items():
        if part == "redis":
            continue
        pod = find(objects, kind, name)["spec"]["template"]
        monitor = monitors[name]
        selector = monitor["spec"]["selector"]["matchLabels"]
        if monitor["kind"] == "PodMonitor":
            assert selector.items() <= pod["metadata"]["labels"].items()
            port = monitor["spec"]["podMetricsEndpoints"][0]["port"]
        else:
            service = find(objects, "Service", name)
            assert selector.items() <= service["metadata"]["labels"].items() or \
                selector.items() <= service["spec"]["selector"].items()  # fmt: skip
            port = monitor["spec"]["endpoints"][0]["port"]
        ports = {p["name"] for p in pod["spec"]["containers"][0]["ports"]}
        assert port in ports, name
    (rule,) = kinds(objects, "PrometheusRule").values()
    alerts = [r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert len(alerts) == 13 and "BallastRebalancerNoLeader" in alerts
    urls = {r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert all(u.startswith("https://github.com/ballast-scheduler/ballast/blob/main/docs/runbooks.md#")
               for u in urls)  # fmt: skip
    # No rebalancer: neither its monitor nor its alerts.
    objects = docs(chart.template(extra=MONITORING))
    assert "ballast-rebalancer" not in kinds(objects, "ServiceMonitor")
    (rule,) = kinds(objects, "PrometheusRule").values()
    assert [g["name"] for g in rule["spec"]["groups"]] == ["ballast-watcher", "ballast-scheduler"]


OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(kind: str) -> dict:
    """A stand-in for the Prometheus Operator's CRD of `kind` (its schema left open): what the
    chart asks is only whether the cluster serves the kind."""
    plural = kind.lower() + "s"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.monitoring.coreos.com"},
            "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": OPEN}}]}}  # fmt: skip


def test_the_notes_say_whether_the_operator_is_served(sandbox, kube_api):
    """A server-side dry run against the sandbox, without and then with the CRDs."""
    from kubernetes import client

    assert not [d for d in docs(chart.template())
                if d["kind"] in ("ServiceMonitor", "PodMonitor", "PrometheusRule")]  # fmt: skip
    args = ["install", "notes-check", str(chart.CHART), "--dry-run=server", "--namespace=default",
            "--set=rebalancer.enabled=true"]  # fmt: skip

    def dry_run() -> tuple[str, list[dict]]:
        out = chart.helm(*args, kubeconfig=sandbox.kubeconfig).stdout
        manifest, _, notes = out.partition("NOTES:")
        return notes, docs(manifest.split("MANIFEST:", 1)[1])

    notes, objects = dry_run()
    assert "serves no monitoring.coreos.com/v1 ServiceMonitor, PodMonitor, PrometheusRule" in notes
    api = client.ApiextensionsV1Api(kube_api)
    kinds_ = ("ServiceMonitor", "PodMonitor", "PrometheusRule")
    for kind in kinds_:
        api.create_custom_resource_definition(crd(kind), _request_timeout=10)
    try:

        def served() -> bool:
            groups = client.ApisApi(kube_api).get_api_versions(_request_timeout=10).groups
            return any(g.name == "monitoring.coreos.com" for g in groups)

        wait_for(served, timeout=30, what="the monitoring API")

        def rendered() -> tuple[str, list[dict]] | None:
            notes, objects = dry_run()
            return (notes, objects) if "PrometheusRule (alerts" in notes else None

        notes, objects = wait_for(rendered, timeout=30, what="helm to see the CRDs")
        assert {d["kind"] for d in objects} >= set(kinds_)
    finally:
        for kind in kinds_:
            api.delete_custom_resource_definition(
                crd(kind)["metadata"]["name"], _request_timeout=10
            )


def test_the_dashboard_configmap_is_the_repositorys_json():
    objects = docs(chart.template())
    cm = find(objects, "ConfigMap", "ballast-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads((chart.CHART / "files" / "dashboard.json").read_text())
    assert json.loads(cm["data"]["ballast.json"]) == shipped
    off = docs(chart.template(extra=["--set=monitoring.dashboard.enabled=false"]))
    assert "ballast-dashboard" not in kinds(off, "ConfigMap")


# -- schema ------------------------------------------------------------------------------


def test_two_active_schedulers_are_refused(tmp_path):
    election = {"config": {"leaderElection": {"leaderElect": False}}}
    err = refused(tmp_path, {"scheduler": {"replicas": 2, **election}})
    assert "/scheduler/replicas" in err
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump({"scheduler": {"replicas": 1, **election}}))
    chart.helm("template", chart.RELEASE, str(chart.CHART), f"--values={one}")


@pytest.mark.parametrize(
    "config,named",
    [({"maxPerNod": 2}, "maxPerNod"), ({"interval": True}, "/rebalancer/config/interval"),
     ({"resources": [{"name": "gpu"}]}, "/rebalancer/config/resources/0/name"),
     ({"dryRun": False}, "dryRun")],
)  # fmt: skip
def test_rebalancer_config_is_checked(tmp_path, config, named):
    assert named in refused(tmp_path, {"rebalancer": {"enabled": True, "config": config}})


def test_every_rebalancer_setting_the_schema_allows_reaches_a_config_it_loads(tmp_path):
    config = {"interval": "20s", "consecutive": 2, "thresholds": "absolute", "scoreMargin": 10,
              "loadMargin": 2.5, "maxPerNode": 2, "cooldown": 30, "gpu": {"utilHigh": 95},
              "excludedNamespaces": ["kube-system", "infra"], "evictJobs": True}  # fmt: skip
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"rebalancer": {"enabled": True, "config": config}}))
    out = docs(chart.template([path]))
    cm = find(out, "ConfigMap", "ballast-rebalancer-config")
    loaded = settings.parse(yaml.safe_load(cm["data"]["rebalancer-config.yaml"])).rebalancer
    assert (loaded.interval, loaded.max_per_node, loaded.cooldown) == (20.0, 2, 30.0)
    assert (loaded.load_margin, loaded.score_margin) == (2.5, 10)
    assert loaded.lease_name == "ballast-rebalancer"


# -- placement and extras -------------------------------------------------------------------

KNOBS = {
    "nodeSelector": {"pool": "system"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system",
                     "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["system"]}]}]}}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                   "whenUnsatisfiable": "ScheduleAnyway"}],
    "podAnnotations": {"example.com/team": "platform"},
    "extraArgs": ["--some-flag=1"],
    "extraVolumes": [{"name": "extra", "emptyDir": {}}],
    "extraVolumeMounts": [{"name": "extra", "mountPath": "/extra"}],
    "imagePullSecrets": [{"name": "regcred"}],
}  # fmt: skip


def test_every_part_takes_placement_and_extras(tmp_path):
    values = {part: dict(KNOBS) for part in PARTS}
    values["rebalancer"]["enabled"] = True
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    objects = docs(chart.template([path]))
    for part, (kind, name) in PARTS.items():
        template = find(objects, kind, name)["spec"]["template"]
        spec, container = template["spec"], template["spec"]["containers"][0]
        assert spec["nodeSelector"] == KNOBS["nodeSelector"], part
        assert spec["tolerations"] == KNOBS["tolerations"], part
        assert spec["affinity"] == KNOBS["affinity"], part  # replaces the default spread
        assert spec["topologySpreadConstraints"] == KNOBS["topologySpreadConstraints"], part
        assert template["metadata"]["annotations"]["example.com/team"] == "platform", part
        assert container["args"][-1] == "--some-flag=1", part
        assert {"name": "extra", "emptyDir": {}} in spec["volumes"], part
        assert {"name": "extra", "mountPath": "/extra"} in container["volumeMounts"], part
        assert spec["imagePullSecrets"] == [{"name": "regcred"}], part


def rebalancer_args(tmp_path: Path, values: dict) -> list[str]:
    path = tmp_path / "values.yaml"
    rebalancer = {"enabled": True, **values.get("rebalancer", {})}
    path.write_text(yaml.safe_dump({**values, "rebalancer": rebalancer}))
    deployment = find(docs(chart.template([path])), "Deployment", "ballast-rebalancer")
    return deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_rebalancer_follows_the_schedulers_provider_lag(tmp_path):
    # A sample's lag is the metrics pipeline's: the scheduler's --provider-lag, given in its
    # extraArgs, reaches the rebalancer too, in either form; the rebalancer's own comes after it
    # (the last flag wins); none given, none passed (the 15 s default of both).
    lag = {"scheduler": {"extraArgs": ["--watcher-interval=2", "--provider-lag=30"]}}
    assert rebalancer_args(tmp_path, lag)[-1] == "--provider-lag=30"
    split = {"scheduler": {"extraArgs": ["--provider-lag", "25"]},
             "rebalancer": {"extraArgs": ["--provider-lag=20"]}}  # fmt: skip
    assert rebalancer_args(tmp_path, split)[-3:] == ["--provider-lag", "25", "--provider-lag=20"]
    assert not [a for a in rebalancer_args(tmp_path, {}) if a.startswith("--provider-lag")]
    assert "--watcher-interval=2" not in rebalancer_args(tmp_path, lag)  # the lag alone


def test_the_rebalancer_follows_the_schedulers_recent_max_age(tmp_path):
    # The judge counts a pod the scheduler bound lately as long as the scheduler does: its
    # --recent-max-age reaches the rebalancer, in either form, beside the lag, in their order.
    both = {"scheduler": {"extraArgs": ["--recent-max-age", "60", "--watcher-interval=2",
                                        "--provider-lag=30"]}}  # fmt: skip
    assert rebalancer_args(tmp_path, both)[-3:] == ["--recent-max-age", "60", "--provider-lag=30"]
    own = {"scheduler": {"extraArgs": ["--recent-max-age=60"]},
           "rebalancer": {"extraArgs": ["--recent-max-age=90"]}}  # fmt: skip
    assert rebalancer_args(tmp_path, own)[-2:] == ["--recent-max-age=60", "--recent-max-age=90"]
    assert not [a for a in rebalancer_args(tmp_path, {}) if a.startswith("--recent-max-age")]


def test_redis_takes_the_charts_pull_secrets_by_default():
    objects = docs(chart.template(extra=["--set=imagePullSecrets[0].name=shared"]))
    redis = find(objects, "StatefulSet", "ballast-redis")["spec"]["template"]["spec"]
    assert redis["imagePullSecrets"] == [{"name": "shared"}]
    default = find(docs(chart.template()), "Deployment", "ballast-watcher")["spec"]["template"]
    terms = default["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


# -- names -----------------------------------------------------------------------------------

CLUSTER_SCOPED = ("ClusterRole", "ClusterRoleBinding")


def names(release: str, namespace: str) -> tuple[set[tuple[str, str]], str]:
    args = ["template", release, str(chart.CHART), f"--namespace={namespace}",
            "--set=rebalancer.enabled=true"]  # fmt: skip
    objects = docs(chart.helm(*args).stdout)
    cluster = {(d["kind"], d["metadata"]["name"]) for d in objects if d["kind"] in CLUSTER_SCOPED}
    # Roles the chart puts in another namespace than the release's collide like cluster ones.
    cluster |= {(d["kind"], d["metadata"]["name"]) for d in objects
                if d["metadata"].get("namespace") not in (None, namespace)}  # fmt: skip
    cfg = find(objects, "ConfigMap", f"{release}-scheduler-config")["data"]
    lease = yaml.safe_load(cfg["scheduler-config.yaml"])["leaderElection"]["resourceName"]
    return cluster, lease


def test_names_are_unique_per_release_and_namespace():
    a, lease_a = names("ballast", "team-a")
    b, lease_b = names("ballast", "team-b")
    assert a and not a & b  # same release name, two namespaces: no shared cluster object
    c, lease_c = names("other", "team-a")
    assert not a & c and lease_a != lease_c  # two releases in one namespace: two Leases
    same, lease = names("ballast", "ballast")  # the usual install keeps its short names
    assert ("ClusterRole", "ballast-scheduler") in same and lease == "ballast-scheduler"
    role = find(docs(chart.template()), "Role", "ballast-scheduler-lease")
    assert {"resourceNames": ["ballast-scheduler"]}.items() <= role["rules"][1].items()


# -- closed ports, logging, dual stack -------------------------------------------------------


def args_of(objects: list[dict], kind: str, name: str) -> list[str]:
    return find(objects, kind, name)["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_decision_apis_want_the_token_and_everything_listens_on_both_families():
    objects = docs(chart.template(extra=["--set=rebalancer.enabled=true",
                                         "--set=logging.format=json",
                                         "--set=logging.level=DEBUG"]))  # fmt: skip
    token = "--api-token-file=/var/run/ballast/watcher-token/token"
    for name, listen in (("ballast-scheduler", "--metrics-listen=:10259"),
                         ("ballast-rebalancer", "--listen=:10260")):  # fmt: skip
        args = args_of(objects, "Deployment", name)
        assert token in args and listen in args, name
    for name in ("ballast-watcher", "ballast-scheduler", "ballast-rebalancer"):
        args = args_of(objects, "Deployment", name)
        assert "--log-format=json" in args and "--log-level=DEBUG" in args, name
    assert "--listen=:2020" in args_of(objects, "Deployment", "ballast-watcher")
    env = find(objects, "ConfigMap", "ballast-watcher-env")["data"]
    assert env["BALLAST_REBALANCER_TOKEN_FILE"] == "/var/run/ballast/api-token/token"
    off = docs(chart.template(extra=["--set=auth.enabled=false"]))
    assert not [a for a in args_of(off, "Deployment", "ballast-scheduler") if "token" in a]


def test_network_policies_for_every_part():
    objects = docs(chart.template(extra=["--set=rebalancer.enabled=true",
                                         "--set=scheduler.extender.enabled=true"]))  # fmt: skip
    policies = kinds(objects, "NetworkPolicy")
    assert set(policies) == {"ballast-watcher", "ballast-scheduler", "ballast-rebalancer",
                             "ballast-redis"}  # fmt: skip
    labels = {part: find(objects, *PARTS[part])["spec"]["template"]["metadata"]["labels"]
              for part in PARTS}  # fmt: skip
    monitoring = {"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}  # fmt: skip

    def peer(part: str) -> dict:
        sel = {k: v for k, v in labels[part].items() if k.startswith("app.kubernetes.io/")}
        return {"podSelector": {"matchLabels": sel}}

    watcher = policies["ballast-watcher"]["spec"]["ingress"]
    assert watcher[0]["from"] == [peer("scheduler"), peer("rebalancer"), monitoring]
    rebalancer = policies["ballast-rebalancer"]["spec"]["ingress"]
    assert rebalancer[0]["from"] == [peer("watcher"), monitoring]
    scheduler = policies["ballast-scheduler"]["spec"]["ingress"]
    assert scheduler[0] == {"from": [monitoring], "ports": [{"port": "http", "protocol": "TCP"}]}
    assert scheduler[1] == {"ports": [{"port": "extender", "protocol": "TCP"}]}  # token-guarded
    for name, policy in policies.items():
        part = name.removeprefix("ballast-")
        assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels[part].items()
    # Trimaran's pods (or anything else) let in on purpose.
    system = {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}
    trimaran = [{"namespaceSelector": system,
                 "podSelector": {"matchLabels": {"component": "trimaran"}}}]  # fmt: skip
    more = docs(
        chart.template(extra=[f"--set-json=networkPolicy.watcherFrom={json.dumps(trimaran)}"])
    )
    assert (
        find(more, "NetworkPolicy", "ballast-watcher")["spec"]["ingress"][0]["from"][-1:]
        == trimaran
    )


def test_the_extender_service_selects_the_leader_alone():
    objects = docs(chart.template(extra=["--set=scheduler.extender.enabled=true"]))
    service = find(objects, "Service", "ballast-scheduler-extender")
    assert service["spec"]["selector"]["ballast.dev/leader"] == "true"
    args = args_of(objects, "Deployment", "ballast-scheduler")
    assert "--leader-label" in args
    env = find(objects, "Deployment", "ballast-scheduler")["spec"]["template"]["spec"][
        "containers"
    ][0]["env"]
    assert {e["name"] for e in env} == {"POD_NAMESPACE", "POD_NAME"}
    role = find(objects, "Role", "ballast-scheduler-leader-label")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}]
