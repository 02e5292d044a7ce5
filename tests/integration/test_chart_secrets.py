"""The chart's secrets under GitOps (`helm template`, Argo CD: no `lookup`, so nothing generated
survives a render) and Prometheus' credentials from Secrets.

With every secret an existingSecret, two renders are identical and hold no Secret; a pod that
reads a Secret at start carries a checksum that changes with that Secret's value (and only that
pod); the watcher's Prometheus credentials, wired as the chart mounts them, reach a real
Prometheus that asks for basic auth over TLS with a client certificate.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.peers.helm import chart
from tests.fixtures.ports import wait_for
from tests.integration.store_support import Guarded
from tests.integration.watcher_support import self_signed

GITOPS = [
    "--set=auth.existingSecret=my-watcher-token",
    "--set=redis.auth.existingSecret=my-redis",
    "--set=scheduler.extender.enabled=true",
    "--set=scheduler.extender.existingSecret=my-extender-token",
    "--set=rebalancer.enabled=true",
]
REDIS = ("StatefulSet", "ballast-redis")
WATCHER = ("Deployment", "ballast-watcher")
SCHEDULER = ("Deployment", "ballast-scheduler")
# Pod templates and the annotation that says what each read at start.
CHECKSUMS = {
    REDIS: "checksum/secret",
    WATCHER: "checksum/secrets",
    SCHEDULER: "checksum/extender-token",
}


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def find(objects: list[dict], kind: str, name: str) -> dict:
    return next(d for d in objects if d["kind"] == kind and d["metadata"]["name"] == name)


def annotations(objects: list[dict]) -> dict[tuple[str, str], dict[str, str]]:
    return {key: find(objects, *key)["spec"]["template"]["metadata"].get("annotations", {})
            for key in CHECKSUMS}  # fmt: skip


def test_helm_template_twice_with_existing_secrets_is_identical():
    first, second = chart.template(extra=GITOPS), chart.template(extra=GITOPS)
    assert first == second
    objects = docs(first)
    assert not [d["metadata"]["name"] for d in objects if d["kind"] == "Secret"]
    refs = set()
    for d in objects:
        spec = d.get("spec", {}).get("template", {}).get("spec", {})
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                refs.add(volume["secret"]["secretName"])
        for container in spec.get("containers", []):
            for env in container.get("env", []):
                if "secretKeyRef" in env.get("valueFrom", {}):
                    refs.add(env["valueFrom"]["secretKeyRef"]["name"])
    assert refs == {"my-watcher-token", "my-redis", "my-extender-token"}


def test_without_existing_secrets_each_render_mints_new_ones_and_rolls_the_readers():
    # Why GitOps needs existingSecret: `helm template` cannot read back what it generated.
    extra = ["--set=scheduler.extender.enabled=true"]
    first, second = docs(chart.template(extra=extra)), docs(chart.template(extra=extra))
    token = [find(o, "Secret", "ballast-watcher-token")["data"]["token"] for o in (first, second)]
    assert token[0] != token[1]
    # The checksum is of the value the Secret holds, so the pods follow it.
    for key, name in CHECKSUMS.items():
        assert annotations(first)[key][name] != annotations(second)[key][name], key


@pytest.mark.parametrize(
    "value,rolls",
    [
        ("redis.auth.password", {REDIS, WATCHER}),
        ("auth.token", {WATCHER}),
        ("scheduler.extender.token", {SCHEDULER}),
    ],
)  # fmt: skip
def test_a_changed_secret_rolls_exactly_the_pods_that_read_it_at_start(value, rolls):
    base = ["--set=scheduler.extender.enabled=true", "--set=auth.token=t0",
            "--set=redis.auth.password=p0", "--set=scheduler.extender.token=e0"]  # fmt: skip
    before = annotations(docs(chart.template(extra=base)))
    again = annotations(docs(chart.template(extra=base)))
    assert before == again  # given values: a deterministic render
    after = annotations(docs(chart.template(extra=[*base, f"--set={value}=changed"])))
    changed = {key for key in CHECKSUMS if before[key] != after[key]}
    assert changed == rolls


def test_an_existing_secret_renamed_rolls_its_readers():
    before = annotations(docs(chart.template(extra=GITOPS)))
    after = annotations(docs(chart.template(extra=[*GITOPS, "--set=redis.auth.existingSecret=r2"])))
    assert {k for k in CHECKSUMS if before[k] != after[k]} == {REDIS, WATCHER}


def test_basic_auth_and_bearer_token_together_are_refused():
    args = ["template", chart.RELEASE, str(chart.CHART),
            "--set=watcher.prometheusAuth.basicAuth.existingSecret=a",
            "--set=watcher.prometheusAuth.bearerToken.existingSecret=b"]  # fmt: skip
    result = chart.helm(*args, check=False)
    assert result.returncode != 0 and "basicAuth or bearerToken" in result.stderr


# -- Prometheus' credentials as the chart wires them, against a real guarded Prometheus --------

PROM_AUTH = [
    "--set=watcher.prometheusAuth.basicAuth.existingSecret=prom-basic",
    "--set=watcher.prometheusAuth.tls.existingSecret=prom-tls",
    "--set=watcher.prometheusAuth.tls.certKey=tls.crt",
    "--set=watcher.prometheusAuth.tls.keyKey=tls.key",
]
NODE = "chart-guarded"


def mounted(pod: dict, container: dict, secrets: dict[str, dict[str, bytes]], root: Path) -> None:
    """Writes each Secret volume's files under `root` as the kubelet would mount them."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in container["volumeMounts"]:
        source = volumes[mount["name"]].get("secret")
        if source is None:
            continue
        data = secrets[source["secretName"]]
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            path = root / mount["mountPath"].lstrip("/") / item["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data[item["key"]])


def pod_env(container: dict, configmap: dict, secrets: dict[str, dict[str, bytes]], root: Path):
    env: dict[str, Any] = dict(configmap["data"])
    for e in container.get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref is not None and ref["name"] in secrets:  # the Prometheus ones, here
            env[e["name"]] = secrets[ref["name"]][ref["key"]].decode()
    # The files live under `root` here, not at the pod's absolute paths.
    return {k: str(root / v.lstrip("/")) if str(v).startswith("/var/run/") else str(v)
            for k, v in env.items()
            if k.startswith("BALLAST_PROMETHEUS_") and k != "BALLAST_PROMETHEUS_URL"}  # fmt: skip


def test_prometheus_credentials_from_secrets_reach_a_guarded_prometheus(
    make_exporter, make_watcher, tmp_path
):
    exporter = make_exporter()
    exporter.set(NODE, cpu=40.0, memory=30.0)
    for name in ("server", "client"):
        (tmp_path / name).mkdir()
    server_ca, _ = self_signed(tmp_path / "server")
    client_cert, _ = self_signed(tmp_path / "client")
    store = Guarded(tmp_path / "prom", [exporter.target], prefix="/p",
                    tls=(server_ca, tmp_path / "server" / "tls.key"), client_ca=client_cert,
                    users={"watcher": "s3cret"})  # fmt: skip
    store.start()
    try:
        objects = docs(chart.template(extra=PROM_AUTH))
        pod = find(objects, "Deployment", "ballast-watcher")["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        secrets = {  # what the operator created (cert-manager's Secret has these keys)
            "prom-basic": {"username": b"watcher", "password": b"s3cret\n"},
            "prom-tls": {"ca.crt": server_ca.read_bytes(),
                         "tls.crt": (tmp_path / "client" / "tls.crt").read_bytes(),
                         "tls.key": (tmp_path / "client" / "tls.key").read_bytes()},
        }  # fmt: skip
        root = tmp_path / "pod"
        mounted(pod, container, secrets, root)
        env = pod_env(container, find(objects, "ConfigMap", "ballast-watcher-env"), secrets, root)
        assert set(env) >= {"BALLAST_PROMETHEUS_USERNAME", "BALLAST_PROMETHEUS_PASSWORD_FILE",
                            "BALLAST_PROMETHEUS_CA_FILE", "BALLAST_PROMETHEUS_CERT_FILE",
                            "BALLAST_PROMETHEUS_KEY_FILE"}  # fmt: skip
        url = store.url  # the chart's prometheusUrl is the cluster's; here, the local one
        watcher = make_watcher(url, env=env)
        nodes = watcher.wait_nodes([NODE], timeout=60)
        assert abs(nodes[NODE]["metrics"]["memory"]["latest"] - 30.0) < 0.5
        # The store's password rotates; the Secret's file follows as the kubelet swaps it in:
        # read again at the next poll, no restart.
        store.set_users({"watcher": "rotated"})
        refused = lambda: watcher.status()["counters"]["pollErrors"].get("http_401", 0) >= 1  # noqa: E731
        wait_for(refused, timeout=20, what="a poll refused with the old password")
        (root / "var/run/ballast/prometheus/basic-auth/password").write_text("rotated\n")
        wait_for(lambda: watcher.status()["provider"]["ok"], timeout=20, what="the rotated one")
    finally:
        store.stop()


def test_secret_values_never_reach_a_configmap():
    extra = [*PROM_AUTH, "--set=auth.token=tok-value", "--set=redis.auth.password=redis-value"]
    for d in docs(chart.template(extra=extra)):
        if d["kind"] == "ConfigMap":
            text = yaml.safe_dump(d)
            assert "tok-value" not in text and "redis-value" not in text, d["metadata"]["name"]
    secret = find(docs(chart.template(extra=extra)), "Secret", "ballast-redis")
    assert base64.b64decode(secret["data"]["password"]) == b"redis-value"
