"""charts/ballast installed as a user installs it, into the sandbox with its controllers.

`helm lint`; `helm template` with every values file passes the apiserver's server-side dry run
and renders a scheduler config Ballast loads; bad values fail at `helm template` and `helm
install` naming the value; k8s/ballast.yaml is the chart's rendering. Then `helm install --wait`
(the controllers create the pods, Ballast as the default scheduler places them, kwok runs them),
`kubectl auth can-i` as the chart's service accounts, `helm upgrade` changing a scheduler
profile (the Deployment rolls), and `helm uninstall` leaving nothing behind.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis
import yaml
from kubernetes import client

from sandbox.cluster import build
from sandbox.cluster.namespaces import delete_namespace, ensure_namespace
from sandbox.cluster.nodes import NodeSpec, create_nodes, delete_nodes, wait_ready
from sandbox.peers.helm import chart
from scheduler.config.loader import parse_config
from tests.fixtures.ports import wait_for
from tests.fixtures.redis import RedisServer
from tests.integration.scheduler_support import running
from watcher.redis_store import RedisStore

T = 10
NAMESPACE = chart.NAMESPACE
RELEASE = chart.RELEASE
SCHEDULER = f"system:serviceaccount:{NAMESPACE}:ballast-scheduler"
WATCHER = f"system:serviceaccount:{NAMESPACE}:ballast-watcher"
VALUES = [None, *sorted((chart.CHART / "ci").glob("*-values.yaml")), chart.MANIFEST_VALUES]
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}
INSTANCE = f"app.kubernetes.io/instance={RELEASE}"
EXAMPLE_FILES = ("pod.yaml", "deployment.yaml")


def _id(path: Path | None) -> str:
    return "defaults" if path is None else path.name


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def find(objects: list[dict], kind: str, name: str) -> dict:
    return next(d for d in objects if d["kind"] == kind and d["metadata"]["name"] == name)


def kubectl_with(kubeconfig: Path):
    binary = str(build.binary("kubectl"))

    def run(*args: str, stdin: str | None = None, check: bool = True):
        result = subprocess.run(
            [binary, f"--kubeconfig={kubeconfig}", "--request-timeout=20s", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    return run


@pytest.fixture(scope="module")
def kubectl(sandbox):
    return kubectl_with(sandbox.kubeconfig)


@pytest.fixture(scope="module")
def release_namespace(kube_api) -> Iterator[str]:
    """`ballast`, under Pod Security `restricted`: every pod of the chart must comply."""
    ensure_namespace(kube_api, NAMESPACE, labels=RESTRICTED)
    yield NAMESPACE
    delete_namespace(kube_api, NAMESPACE, finalize=False)


# -- offline: lint, template, bad values -----------------------------------------------------


@pytest.mark.parametrize("values", VALUES, ids=_id)
def test_helm_lint(values):
    args = ["lint", str(chart.CHART), "--strict"] + ([f"--values={values}"] if values else [])
    result = chart.helm(*args)
    assert "0 chart(s) failed" in result.stdout


def test_k8s_manifest_is_the_chart_rendered():
    assert chart.MANIFEST.read_text() == chart.manifest(), "run `make manifests`"


def test_the_rbac_table_in_the_docs_is_the_charts():
    text = chart.DEPLOY_DOC.read_text()
    assert text == chart.rbac_section(text, chart.manifest()), "run `make manifests`"
    table = chart.rbac_table(chart.manifest())
    assert "| ballast-watcher | cluster | core | pods | list |" in table
    assert "| ballast-scheduler | namespace `ballast` | coordination.k8s.io | leases (only " \
        "ballast-scheduler) | get, update, patch |" in table  # fmt: skip


def test_the_manifest_holds_no_secret():
    objects = docs(chart.MANIFEST.read_text())
    assert not [d for d in objects if d["kind"] == "Secret"]
    env = find(objects, "Deployment", "ballast-watcher")["spec"]["template"]["spec"]
    refs = [e["valueFrom"]["secretKeyRef"]["name"] for e in env["containers"][0]["env"]
            if "valueFrom" in e]  # fmt: skip
    assert refs == ["ballast-watcher-token", "ballast-redis"]


# Namespaced objects the manifest puts elsewhere than `ballast`, on purpose.
ELSEWHERE = {("Role", "ballast-rebalancer-node-events"): "default",
             ("RoleBinding", "ballast-rebalancer-node-events"): "default"}  # fmt: skip


def test_apply_k_and_f_put_everything_in_ballast_with_working_rbac(sandbox, tmp_path, kube_api):
    """As a user without Helm: `kubectl apply -k k8s/` from a context whose namespace is another
    one, into a sandbox with no `ballast` namespace yet; then what `apply -f` would create."""
    other = tmp_path / "kubeconfig"
    other.write_text(Path(sandbox.kubeconfig).read_text())
    run = kubectl_with(other)
    run("config", "set-context", "--current", "--namespace=elsewhere")
    run("apply", "-k", str(chart.MANIFEST.parent))
    try:
        applied = docs(chart.MANIFEST.read_text())
        for d in applied:
            kind, name = d["kind"], d["metadata"]["name"]
            if kind in chart.CLUSTER_KINDS:
                continue
            where = ELSEWHERE.get((kind, name), NAMESPACE)
            got = run("get", kind, name, "-n", where, "-o", "jsonpath={.metadata.namespace}")
            assert got.stdout == where, (kind, name)
        checks = [(who, verb, res, ns, "yes") for who, verb, res, ns in ALLOWED]
        checks += [(who, verb, res, ns, "no") for who, verb, res, ns in DENIED]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda c: can_i(run, kube_api, *c[:4]), checks))
        wrong = [c for c, a in zip(checks, answers, strict=True) if a != c[4]]
        assert not wrong, wrong
        # -f: the same objects; the server says where each would be created.
        result = run("apply", "--dry-run=server", "-f", str(chart.MANIFEST), "-o", "json")
        listed = json.loads(result.stdout)
        items = listed["items"] if listed.get("kind") == "List" else [listed]
        assert len(items) == len(applied)
        for d in items:
            meta = d["metadata"]
            if d["kind"] not in chart.CLUSTER_KINDS:
                assert meta["namespace"] == ELSEWHERE.get((d["kind"], meta["name"]), NAMESPACE)
    finally:
        # Everything but the namespace, dependents first: the chart's install below starts clean.
        rest = [d for d in docs(chart.MANIFEST.read_text()) if d["kind"] != "Namespace"]
        run("delete", "--cascade=foreground", "--wait=true", "--ignore-not-found", "-f", "-",
            stdin=yaml.safe_dump_all(rest))  # fmt: skip


def expand(value: str, env: dict[str, str]) -> str:
    """A container's `$(VAR)` reference, as the kubelet expands it."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], value)


def test_the_installed_redis_refuses_a_client_without_the_password(tmp_path):
    objects = docs(chart.template())
    password = base64.b64decode(find(objects, "Secret", "ballast-redis")["data"]["password"])
    password = password.decode()
    assert len(password) >= 32
    pod = find(objects, "StatefulSet", "ballast-redis")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {"REDIS_PASSWORD": password}
    assert [e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e] == [
        {"name": "ballast-redis", "key": "password"}
    ]
    args = tuple(expand(a, env) for a in container["args"])
    server = RedisServer(tmp_path / "redis", args=args, user=("default", password)).start()
    try:
        bare = redis.Redis(port=server.port, socket_timeout=5)
        with pytest.raises(redis.AuthenticationError):
            bare.set("ballast:watcher:snapshot", "forged")
        # The probe's redis-cli, with the password as its environment gives it.
        probe = {e["name"]: expand(e.get("value", ""), env) for e in container["env"]}
        command = container["readinessProbe"]["exec"]["command"]
        assert command == ["redis-cli", "ping"]
        pong = subprocess.run(["redis-cli", "-p", str(server.port), "ping"], timeout=10,
                              env={"REDISCLI_AUTH": probe["REDISCLI_AUTH"]}, capture_output=True,
                              text=True)  # fmt: skip
        assert pong.stdout.strip() == "PONG", pong
        # The watcher's URL as its pod builds it, pointed at this server.
        watcher = find(objects, "Deployment", "ballast-watcher")["spec"]["template"]["spec"]
        wenv = {e["name"]: e.get("value") for e in watcher["containers"][0]["env"]}
        url = expand(wenv["BALLAST_REDIS_URL"], env)
        assert url == f"redis://:{password}@ballast-redis:6379/0"
        env_cm = find(objects, "ConfigMap", "ballast-watcher-env")["data"]
        assert "BALLAST_REDIS_URL" not in env_cm  # never in the ConfigMap
        RedisStore(url.replace("ballast-redis:6379", f"127.0.0.1:{server.port}"), "t:", 60).ping()
    finally:
        server.stop()


def test_network_policies_let_only_the_watcher_reach_redis():
    objects = docs(chart.template())
    labels = find(objects, "Deployment", "ballast-watcher")["spec"]["template"]["metadata"]
    store = find(objects, "NetworkPolicy", "ballast-redis")["spec"]
    redis_pods = find(objects, "StatefulSet", "ballast-redis")["spec"]["template"]["metadata"]
    assert store["podSelector"]["matchLabels"].items() <= redis_pods["labels"].items()
    (rule,) = store["ingress"]
    (peer,) = rule["from"]
    assert peer == {"podSelector": {"matchLabels": store_peer(labels["labels"])}}
    assert rule["ports"] == [{"port": "redis", "protocol": "TCP"}]
    api = find(objects, "NetworkPolicy", "ballast-watcher")["spec"]
    assert api["ingress"][0]["from"] == [{"namespaceSelector": {}}]
    extra = [{"ipBlock": {"cidr": "10.1.0.0/16"}}]
    more = docs(chart.template(extra=[f"--set-json=networkPolicy.watcherFrom={json.dumps(extra)}"]))
    assert find(more, "NetworkPolicy", "ballast-watcher")["spec"]["ingress"][0]["from"][1:] == extra
    off = docs(chart.template(extra=["--set=networkPolicy.enabled=false"]))
    assert not [d for d in off if d["kind"] == "NetworkPolicy"]


def store_peer(watcher_labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in watcher_labels.items() if k.startswith("app.kubernetes.io/")}


@pytest.mark.parametrize("values", VALUES, ids=_id)
def test_values_render_what_the_apiserver_and_ballast_accept(kubectl, release_namespace, values):
    rendered = chart.template([values] if values else [])
    result = kubectl("apply", "--dry-run=server", "-f", "-", stdin=rendered)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(docs(rendered)), result.stdout
    assert all("(server dry run)" in line for line in lines), result.stdout
    configs = [d for d in docs(rendered) if d["metadata"]["name"] == "ballast-scheduler-config"]
    for cm in configs:  # the scheduler would refuse to start on a config it cannot load
        cfg = parse_config(yaml.safe_load(cm["data"]["scheduler-config.yaml"]))
        assert cfg.leader_election.resource_namespace == NAMESPACE
        assert cfg.watcher_address == "http://ballast-watcher.ballast.svc:2020"


def test_examples_pass_a_server_side_dry_run(kubectl, release_namespace):
    examples = chart.MANIFEST.parent / "examples"
    rendered = kubectl("kustomize", str(examples / "trimaran")).stdout
    objects = docs(rendered) + [yaml.safe_load((examples / f).read_text()) for f in EXAMPLE_FILES]
    result = kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(objects))
    assert result.stdout.count("(server dry run)") == len(objects), result.stdout


def test_the_dry_run_refuses_a_broken_object(kubectl, release_namespace):
    # Proves the dry runs above validate: the same Deployment with a bad field fails.
    deploy = find(docs(chart.template()), "Deployment", "ballast-watcher")
    deploy["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 70000
    result = kubectl(
        "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(deploy), check=False
    )
    assert result.returncode != 0 and "containerPort" in result.stderr


BAD_VALUES = [
    ({"watcher": {"replicas": "two"}}, "/watcher/replicas"),
    ({"watcher": {"replica": 3}}, "replica"),
    ({"auth": {"enabled": "yes"}}, "/auth/enabled"),
    (
        {"scheduler": {"config": {"profiles": [{"plugins": {"score": {"enabled": [
            {"name": "TargetLoadPackin"}]}}}]}}},
        "/scheduler/config/profiles/0/plugins/score/enabled/0/name",
    ),
    (
        {"scheduler": {"config": {"profiles": [{"pluginConfig": [{"name": "Trimaran"}]}]}}},
        "/scheduler/config/profiles/0/pluginConfig/0/name",
    ),
    ({"redis": {"enabled": False}}, "redis.url is required"),
    ({"rebalancer": {"enabled": True, "dryrun": True}}, "dryrun"),
]  # fmt: skip


@pytest.mark.parametrize("values,named", BAD_VALUES, ids=[n for _, n in BAD_VALUES])
def test_bad_values_fail_at_template_naming_the_value(tmp_path, values, named):
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    args = ["template", RELEASE, str(chart.CHART), f"--values={path}"]
    result = chart.helm(*args, check=False)
    assert result.returncode != 0 and named in result.stderr, result.stderr


def test_service_monitor_only_where_the_cluster_serves_its_api():
    assert not [d for d in docs(chart.template()) if d["kind"] == "ServiceMonitor"]
    api = "--api-versions=monitoring.coreos.com/v1/ServiceMonitor"
    (monitor,) = [d for d in docs(chart.template(extra=[api])) if d["kind"] == "ServiceMonitor"]
    labels = monitor["spec"]["selector"]["matchLabels"]
    service = find(docs(chart.template()), "Service", "ballast-watcher")
    assert labels.items() <= service["metadata"]["labels"].items()


def test_the_watcher_reaches_the_rebalancer_through_its_service():
    assert (
        "BALLAST_REBALANCER_URL"
        not in find(docs(chart.template()), "ConfigMap", "ballast-watcher-env")["data"]
    )
    objects = docs(chart.template(extra=["--set=rebalancer.enabled=true"]))
    env = find(objects, "ConfigMap", "ballast-watcher-env")["data"]
    service = find(objects, "Service", "ballast-rebalancer")
    assert env["BALLAST_REBALANCER_URL"] == f"http://ballast-rebalancer.{NAMESPACE}.svc:10260"
    assert service["spec"]["ports"] == [{"name": "http", "port": 10260, "targetPort": "http"}]
    pods = find(objects, "Deployment", "ballast-rebalancer")["spec"]["template"]["metadata"]
    assert service["spec"]["selector"].items() <= pods["labels"].items()
    # an operator's own address wins
    own = [
        "--set=rebalancer.enabled=true",
        "--set=watcher.extraEnv.BALLAST_REBALANCER_URL=http://x",
    ]
    env = find(docs(chart.template(extra=own)), "ConfigMap", "ballast-watcher-env")["data"]
    assert env["BALLAST_REBALANCER_URL"] == "http://x"


# -- installed into the sandbox ------------------------------------------------------------


@pytest.fixture(scope="module")
def installed(sandbox, kube_api, release_namespace) -> Iterator[str]:
    """`helm install --wait` of the chart's defaults; uninstalled at the end if still there."""
    nodes = create_nodes(kube_api, [NodeSpec(f"chart-{i}", cpu="4") for i in range(3)])
    wait_ready(kube_api, nodes)
    # The sandbox runs no kube-scheduler: Ballast takes the default scheduler's name here.
    with running(kube_api, {"profiles": [{"schedulerName": "default-scheduler"}]}):
        args = ["install", RELEASE, str(chart.CHART), f"--namespace={NAMESPACE}"]
        chart.helm(*args, "--wait", "--timeout=90s", kubeconfig=sandbox.kubeconfig)
        try:
            yield RELEASE
        finally:
            args = ["uninstall", RELEASE, f"--namespace={NAMESPACE}", "--ignore-not-found"]
            chart.helm(*args, kubeconfig=sandbox.kubeconfig, check=False)
            delete_nodes(kube_api, nodes)


def test_bad_values_fail_at_install_before_anything_is_created(sandbox, release_namespace):
    args = ["install", "ballast-bad", str(chart.CHART), f"--namespace={NAMESPACE}"]
    result = chart.helm(
        *args, "--set=watcher.replicas=two", kubeconfig=sandbox.kubeconfig, check=False
    )
    assert result.returncode != 0 and "/watcher/replicas" in result.stderr
    listed = chart.helm("list", f"--namespace={NAMESPACE}", "-q", kubeconfig=sandbox.kubeconfig)
    assert "ballast-bad" not in listed.stdout


def test_install_rolls_out_every_part(kube_api, installed):
    apps = client.AppsV1Api(kube_api)
    for name, replicas in (("ballast-watcher", 2), ("ballast-scheduler", 2)):
        status = apps.read_namespaced_deployment(name, NAMESPACE, _request_timeout=T).status
        assert status.available_replicas == replicas
    # Each Deployment is covered by a PodDisruptionBudget.
    policy = client.PolicyV1Api(kube_api)
    budgets = policy.list_namespaced_pod_disruption_budget(NAMESPACE, _request_timeout=T).items
    assert {b.metadata.name for b in budgets} == {"ballast-watcher", "ballast-scheduler"}
    redis = apps.read_namespaced_stateful_set("ballast-redis", NAMESPACE, _request_timeout=T)
    assert redis.status.ready_replicas == 1
    pods = client.CoreV1Api(kube_api).list_namespaced_pod(NAMESPACE, _request_timeout=T).items
    assert len(pods) == 5 and all(p.spec.node_name and p.status.phase == "Running" for p in pods)

    def pdb_filled():
        pdb = policy.read_namespaced_pod_disruption_budget(
            "ballast-watcher", NAMESPACE, _request_timeout=T
        )
        return pdb.status if pdb.status and pdb.status.current_healthy == 2 else None

    status = wait_for(pdb_filled, 30, 0.2, "the disruption controller to fill the PDB's status")
    assert status.disruptions_allowed == 1


ALLOWED = [
    (SCHEDULER, "list", "pods", None),
    (SCHEDULER, "watch", "pods", None),
    (SCHEDULER, "list", "nodes", None),
    (SCHEDULER, "watch", "nodes", None),
    (SCHEDULER, "create", "pods#binding", "default"),
    (SCHEDULER, "patch", "pods#status", "default"),
    (SCHEDULER, "create", "events", "default"),
    (SCHEDULER, "create", "events.events.k8s.io", "default"),
    (SCHEDULER, "create", "leases.coordination.k8s.io", NAMESPACE),
    (SCHEDULER, "list", "namespaces", None),
    (SCHEDULER, "watch", "namespaces", None),
    (SCHEDULER, "list", "persistentvolumeclaims", None),
    (SCHEDULER, "watch", "persistentvolumeclaims", None),
    (SCHEDULER, "patch", "persistentvolumeclaims", "default"),
    (SCHEDULER, "list", "persistentvolumes", None),
    (SCHEDULER, "watch", "persistentvolumes", None),
    (SCHEDULER, "patch", "persistentvolumes", None),
    (SCHEDULER, "list", "storageclasses.storage.k8s.io", None),
    (SCHEDULER, "watch", "storageclasses.storage.k8s.io", None),
    (SCHEDULER, "list", "csinodes.storage.k8s.io", None),
    (SCHEDULER, "watch", "csinodes.storage.k8s.io", None),
    (SCHEDULER, "list", "services", None),  # PodTopologySpread's default constraints
    (SCHEDULER, "watch", "services", None),
    (SCHEDULER, "list", "replicationcontrollers", None),
    (SCHEDULER, "watch", "replicationcontrollers", None),
    (SCHEDULER, "list", "replicasets.apps", None),
    (SCHEDULER, "watch", "replicasets.apps", None),
    (SCHEDULER, "list", "statefulsets.apps", None),
    (SCHEDULER, "watch", "statefulsets.apps", None),
    (SCHEDULER, "delete", "pods", "default"),  # preemption
    (SCHEDULER, "list", "poddisruptionbudgets.policy", None),
    (SCHEDULER, "watch", "poddisruptionbudgets.policy", None),
    (SCHEDULER, "list", "priorityclasses.scheduling.k8s.io", None),
    (SCHEDULER, "watch", "priorityclasses.scheduling.k8s.io", None),
    (SCHEDULER, "get", "leases.coordination.k8s.io/ballast-scheduler", NAMESPACE),
    (SCHEDULER, "update", "leases.coordination.k8s.io/ballast-scheduler", NAMESPACE),
    (WATCHER, "list", "nodes", None),
    (WATCHER, "watch", "nodes", None),
    (WATCHER, "get", "nodes.metrics.k8s.io", None),
    (WATCHER, "list", "nodes.metrics.k8s.io", None),
    (WATCHER, "list", "pods", None),  # metadata only: the workload join (docs/profiles.md)
    (WATCHER, "list", "pods.metrics.k8s.io", None),
]
DENIED = [
    (SCHEDULER, "list", "nodes.metrics.k8s.io", None),
    (SCHEDULER, "get", "secrets", NAMESPACE),
    (SCHEDULER, "list", "secrets", None),
    (SCHEDULER, "deletecollection", "pods", "default"),
    (SCHEDULER, "delete", "nodes", None),
    (SCHEDULER, "delete", "poddisruptionbudgets.policy", "default"),
    (SCHEDULER, "create", "priorityclasses.scheduling.k8s.io", None),
    (SCHEDULER, "update", "nodes", None),
    (SCHEDULER, "patch", "nodes", None),
    (SCHEDULER, "update", "pods", "default"),
    (SCHEDULER, "patch", "pods", "default"),
    (SCHEDULER, "update", "pods#status", "default"),
    (SCHEDULER, "create", "pods", "default"),
    (SCHEDULER, "update", "leases.coordination.k8s.io/someone-else", NAMESPACE),
    (SCHEDULER, "get", "persistentvolumeclaims", "default"),
    (SCHEDULER, "update", "persistentvolumeclaims", "default"),
    (SCHEDULER, "delete", "persistentvolumeclaims", "default"),
    (SCHEDULER, "create", "persistentvolumeclaims", "default"),
    (SCHEDULER, "update", "persistentvolumes", None),
    (SCHEDULER, "delete", "persistentvolumes", None),
    (SCHEDULER, "create", "persistentvolumes", None),
    (SCHEDULER, "patch", "persistentvolumeclaims#status", "default"),
    (SCHEDULER, "patch", "storageclasses.storage.k8s.io", None),
    (SCHEDULER, "patch", "csinodes.storage.k8s.io", None),
    (SCHEDULER, "patch", "namespaces", None),
    (SCHEDULER, "get", "services", "default"),
    (SCHEDULER, "patch", "services", "default"),
    (SCHEDULER, "patch", "replicasets.apps", "default"),
    (SCHEDULER, "delete", "statefulsets.apps", "default"),
    (SCHEDULER, "update", "leases.coordination.k8s.io/ballast-scheduler", "kube-system"),
    (WATCHER, "get", "secrets", NAMESPACE),
    (WATCHER, "delete", "pods", "default"),
    (WATCHER, "update", "nodes", None),
    (WATCHER, "get", "pods", "default"),
    (WATCHER, "watch", "pods", None),
    (WATCHER, "create", "pods#binding", "default"),
]


def can_i(kubectl, api, who: str, verb: str, resource: str, namespace: str | None) -> str:
    if resource.endswith(".metrics.k8s.io"):
        return review(api, who, verb, resource, namespace)
    scope = ["-n", namespace] if namespace else ["--all-namespaces"]
    # `pods/binding` would read as the pod named "binding": subresources have their own flag.
    target = resource.split("#")
    if len(target) == 2:
        scope.append(f"--subresource={target[1]}")
    result = kubectl("auth", "can-i", verb, target[0], f"--as={who}", *scope, check=False)
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), result.stderr
    return answer


def review(api, who: str, verb: str, resource: str, namespace: str | None) -> str:
    """A SubjectAccessReview, as `kubectl auth can-i --as` sends it, for the metrics API.

    Without metrics-server the sandbox serves no metrics.k8s.io, and kubectl, unable to resolve
    the group, would ask about resource "nodes.metrics.k8s.io" in the core group instead.
    """
    plural, _, group = resource.partition(".")
    sa_namespace = who.split(":")[2]
    body = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=who,
            groups=["system:serviceaccounts", f"system:serviceaccounts:{sa_namespace}",
                    "system:authenticated"],
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, group=group, resource=plural, namespace=namespace or ""
            ),
        )
    )  # fmt: skip
    answer = client.AuthorizationV1Api(api).create_subject_access_review(body, _request_timeout=T)
    return "yes" if answer.status.allowed else "no"


@pytest.mark.parametrize("who,verb,resource,namespace", ALLOWED)
def test_service_account_may(kubectl, kube_api, installed, who, verb, resource, namespace):
    assert can_i(kubectl, kube_api, who, verb, resource, namespace) == "yes"


@pytest.mark.parametrize("who,verb,resource,namespace", DENIED)
def test_service_account_may_not(kubectl, kube_api, installed, who, verb, resource, namespace):
    assert can_i(kubectl, kube_api, who, verb, resource, namespace) == "no"


def test_upgrade_changes_a_scheduler_profile_and_rolls_the_scheduler(sandbox, kube_api, installed):
    core, apps = client.CoreV1Api(kube_api), client.AppsV1Api(kube_api)

    def token() -> str:
        return core.read_namespaced_secret("ballast-watcher-token", NAMESPACE).data["token"]

    def redis_password() -> str:
        return core.read_namespaced_secret("ballast-redis", NAMESPACE).data["password"]

    def template_hash() -> str:
        deploy = apps.read_namespaced_deployment("ballast-scheduler", NAMESPACE, _request_timeout=T)
        return deploy.spec.template.metadata.annotations["checksum/config"]

    before_token, before_hash, before_password = token(), template_hash(), redis_password()
    profiles = [
        {
            "schedulerName": "ballast",
            "pluginConfig": [{"name": "TargetLoadPacking", "args": {"targetUtilization": 60}}],
        },
        {"schedulerName": "ballast-batch"},
    ]
    args = ["upgrade", RELEASE, str(chart.CHART), f"--namespace={NAMESPACE}", "--reuse-values"]
    args += [f"--set-json=scheduler.config.profiles={json.dumps(profiles)}"]
    chart.helm(*args, "--wait", "--timeout=90s", kubeconfig=sandbox.kubeconfig)

    cm = core.read_namespaced_config_map("ballast-scheduler-config", NAMESPACE, _request_timeout=T)
    cfg = parse_config(yaml.safe_load(cm.data["scheduler-config.yaml"]))
    assert [p.scheduler_name for p in cfg.profiles] == ["ballast", "ballast-batch"]
    assert cfg.profiles[0].args["TargetLoadPacking"].target_utilization == 60
    assert template_hash() != before_hash  # a new ReplicaSet: the pods restart with the config
    assert token() == before_token  # the generated token survives the upgrade
    assert redis_password() == before_password  # and so does Redis' password
    sets = apps.list_namespaced_replica_set(
        NAMESPACE, label_selector="app.kubernetes.io/name=ballast-scheduler", _request_timeout=T
    ).items
    assert len(sets) == 2 and sorted(rs.status.ready_replicas or 0 for rs in sets) == [0, 2]


NAMESPACED = ("deployments", "statefulsets", "replicasets", "pods", "services", "configmaps")
NAMESPACED += ("secrets", "serviceaccounts", "poddisruptionbudgets", "roles", "rolebindings")
NAMESPACED += ("networkpolicies",)


def test_uninstall_leaves_nothing_behind(sandbox, kubectl, installed):
    args = ["uninstall", RELEASE, f"--namespace={NAMESPACE}", "--wait", "--timeout=60s"]
    chart.helm(*args, kubeconfig=sandbox.kubeconfig)

    def left() -> str:
        # Pods and ReplicaSets carry the instance label from the pod templates.
        kinds = ",".join(NAMESPACED)
        owned = kubectl("get", kinds, "-n", NAMESPACE, "-l", INSTANCE, "-o", "name").stdout
        cluster = kubectl("get", "clusterroles,clusterrolebindings", "-l", INSTANCE, "-o", "name")
        return (owned + cluster.stdout).strip()

    wait_for(lambda: left() == "", 60, 0.5, "everything of the release to be gone")
    assert chart.helm("list", "-A", "-q", kubeconfig=sandbox.kubeconfig).stdout.strip() == ""
