"""k8s/ against a real kube-apiserver: server-side dry run and least-privilege RBAC.

The rendered kustomize base passes the apiserver's own validation and admission (dry run), and
with the RBAC objects really applied, `kubectl auth can-i` impersonating each service account
shows what it may do and that secrets, pod deletes and node updates are denied.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from sandbox import build
from sandbox.errors import SandboxError
from sandbox.namespaces import delete_namespace, ensure_namespace

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "ballast"
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
SCHEDULER = f"system:serviceaccount:{NAMESPACE}:ballast-scheduler"
WATCHER = f"system:serviceaccount:{NAMESPACE}:ballast-watcher"


def kubectl_binary() -> str:
    """The sandbox's own kubectl (same release as the apiserver), else kubectl on PATH."""
    try:
        return str(build.binary("kubectl"))
    except SandboxError:
        found = shutil.which("kubectl")
        if found is None:
            raise RuntimeError("no kubectl: run `make sandbox-build`") from None
        return found


@pytest.fixture(scope="module")
def kubectl(sandbox):
    binary = kubectl_binary()

    def run(*args: str, stdin: str | None = None, check: bool = True):
        result = subprocess.run(
            [binary, f"--kubeconfig={sandbox.kubeconfig}", "--request-timeout=20s", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    return run


def render(path: str) -> list[dict]:
    # kustomize from the kubectl on PATH or the sandbox's: both embed it.
    result = subprocess.run(
        [kubectl_binary(), "kustomize", str(ROOT / path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


@pytest.fixture(scope="module")
def base() -> list[dict]:
    return render("k8s")


@pytest.fixture(scope="module")
def applied_rbac(kubectl, kube_api, base):
    """The namespace and the RBAC objects, applied for real for the can-i checks."""
    ensure_namespace(kube_api, NAMESPACE)
    rbac = yaml.safe_dump_all([d for d in base if d["kind"] in RBAC_KINDS])
    kubectl("apply", "-f", "-", stdin=rbac)
    yield
    kubectl("delete", "--ignore-not-found", "-f", "-", stdin=rbac, check=False)
    delete_namespace(kube_api, NAMESPACE)


def find(docs: list[dict], kind: str, name: str) -> dict:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def test_base_renders_everything_into_the_ballast_namespace(base):
    kinds = {(d["kind"], d["metadata"]["name"]) for d in base}
    for wanted in [
        ("Namespace", "ballast"),
        ("Deployment", "ballast-redis"),
        ("Deployment", "ballast-watcher"),
        ("Service", "ballast-watcher"),
        ("Deployment", "ballast-scheduler"),
        ("ClusterRole", "ballast-scheduler"),
        ("ClusterRole", "ballast-watcher"),
        ("Role", "ballast-scheduler-lease"),
    ]:
        assert wanted in kinds
    namespaced = [
        d for d in base if not d["kind"].startswith("Cluster") and d["kind"] != "Namespace"
    ]
    assert {d["metadata"]["namespace"] for d in namespaced} == {NAMESPACE}


def test_watcher_deployment_is_hardened_and_probed(base):
    deploy = find(base, "Deployment", "ballast-watcher")
    assert deploy["spec"]["replicas"] == 2
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    service = find(base, "Service", "ballast-watcher")
    assert service["spec"]["ports"][0]["port"] == 2020


def test_scheduler_config_map_has_leader_election_on(base):
    cm = next(d for d in base if d["metadata"]["name"].startswith("ballast-scheduler-config"))
    config = yaml.safe_load(cm["data"]["scheduler-config.yaml"])
    assert config["leaderElection"]["leaderElect"] is True
    deploy = find(base, "Deployment", "ballast-scheduler")
    volumes = deploy["spec"]["template"]["spec"]["volumes"]
    assert any(v.get("configMap", {}).get("name") == cm["metadata"]["name"] for v in volumes)


def test_watcher_auth_is_on_with_one_token_for_watcher_and_scheduler(base):
    secret = next(d for d in base if d["metadata"]["name"].startswith("ballast-watcher-token"))
    assert secret["kind"] == "Secret" and "token" in secret["data"]
    name = secret["metadata"]["name"]  # with kustomize's hash suffix: references must follow
    watcher = find(base, "Deployment", "ballast-watcher")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in watcher["containers"][0]["env"]}
    assert env["BALLAST_API_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": name, "key": "token"}
    # /watcher stays open for Trimaran, which cannot send a token.
    watcher_env = next(d for d in base if d["metadata"]["name"].startswith("ballast-watcher-env"))
    assert watcher_env["data"]["BALLAST_API_OPEN_PATHS"] == "/watcher"

    scheduler = find(base, "Deployment", "ballast-scheduler")["spec"]["template"]["spec"]
    volume = next(v for v in scheduler["volumes"] if "secret" in v)
    assert volume["secret"]["secretName"] == name
    (mount,) = [
        m for m in scheduler["containers"][0]["volumeMounts"] if m["name"] == volume["name"]
    ]
    cm = next(d for d in base if d["metadata"]["name"].startswith("ballast-scheduler-config"))
    config = yaml.safe_load(cm["data"]["scheduler-config.yaml"])
    assert config["watcherTokenFile"] == f"{mount['mountPath']}/token"


def test_base_and_examples_pass_a_server_side_dry_run(kubectl, applied_rbac, base):
    docs = base + render("k8s/examples/trimaran")
    docs += [yaml.safe_load((ROOT / "k8s/examples/pod.yaml").read_text())]
    result = kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(docs))
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(docs), result.stdout
    assert all("(server dry run)" in line for line in lines), result.stdout


def test_a_broken_manifest_is_refused_by_the_dry_run(kubectl, applied_rbac, base):
    # Proves the dry run above validates: the same Deployment with a bad field fails.
    deploy = find(base, "Deployment", "ballast-watcher")
    broken = yaml.safe_load(yaml.safe_dump(deploy))
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 70000
    result = kubectl(
        "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(broken), check=False
    )
    assert result.returncode != 0
    assert "containerPort" in result.stderr


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
]
DENIED_METRICS = [(SCHEDULER, "list", "nodes.metrics.k8s.io", None)]
DENIED = [
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
    (WATCHER, "list", "pods", None),
    (WATCHER, "create", "pods#binding", "default"),
]


def can_i(kubectl, kube_api, who: str, verb: str, resource: str, namespace: str | None) -> str:
    if resource.endswith(".metrics.k8s.io"):
        return review(kube_api, who, verb, resource, namespace)
    scope = ["-n", namespace] if namespace else ["--all-namespaces"]
    # `pods/binding` would read as the pod named "binding": subresources have their own flag.
    target = resource.split("#")
    if len(target) == 2:
        scope.append(f"--subresource={target[1]}")
    result = kubectl("auth", "can-i", verb, target[0], f"--as={who}", *scope, check=False)
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), result.stderr
    return answer


def review(kube_api, who: str, verb: str, resource: str, namespace: str | None) -> str:
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
    answer = client.AuthorizationV1Api(kube_api).create_subject_access_review(
        body, _request_timeout=10
    )
    return "yes" if answer.status.allowed else "no"


@pytest.mark.parametrize("who,verb,resource,namespace", ALLOWED)
def test_service_account_may(kubectl, kube_api, applied_rbac, who, verb, resource, namespace):
    assert can_i(kubectl, kube_api, who, verb, resource, namespace) == "yes"


@pytest.mark.parametrize("who,verb,resource,namespace", DENIED + DENIED_METRICS)
def test_service_account_may_not(kubectl, kube_api, applied_rbac, who, verb, resource, namespace):
    assert can_i(kubectl, kube_api, who, verb, resource, namespace) == "no"
