"""The decision APIs as the chart runs them: the scheduler and the rebalancer started with the
command lines of the rendered Deployments (their mounted files placed under a temporary root,
the ports made free ones, the sandbox's kubeconfig added) answer 401 without the release's API
token and serve with it; /metrics and the health paths stay open for Prometheus and the kubelet;
each listens on IPv4 and IPv6 loopback (the chart's `:PORT`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml

from sandbox.peers.helm import chart
from tests.fixtures.ports import free_port, wait_for

T = 5
TOKEN = "release-api-token-0123456789"


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def find(objects: list[dict], kind: str, name: str) -> dict:
    return next(d for d in objects if d["kind"] == kind and d["metadata"]["name"] == name)


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    return docs(
        chart.template(extra=["--set=rebalancer.enabled=true", f"--set=auth.token={TOKEN}"])
    )


def command(objects: list[dict], name: str, config_key: str, root: Path, namespace: str,
            kubeconfig: Path) -> tuple[list[str], int]:  # fmt: skip
    """The container's args with its files under `root` and a free port; leader election in
    the test's namespace (the release's does not exist here)."""
    deploy = find(objects, "Deployment", name)["spec"]["template"]["spec"]
    (container,) = deploy["containers"]
    cm_name = next(v["configMap"]["name"] for v in deploy["volumes"] if "configMap" in v)
    config = yaml.safe_load(find(objects, "ConfigMap", cm_name)["data"][config_key])
    config["leaderElection"] = {**config["leaderElection"], "resourceNamespace": namespace}
    config["watcherAddress"] = "http://127.0.0.1:9"  # nothing answers: scores from requests
    (root / "etc/ballast").mkdir(parents=True, exist_ok=True)
    (root / f"etc/ballast/{config_key}").write_text(yaml.safe_dump(config))
    token = root / "var/run/ballast/watcher-token/token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(TOKEN)
    port = free_port()
    args = []
    for arg in container["args"]:
        if arg.startswith(("--metrics-listen=:", "--listen=:")):
            arg = arg.split("=")[0] + f"=:{port}"
        args.append(arg.replace("=/", f"={root}/"))
    return [sys.executable, "-m", "ballast.cli", *args, f"--kubeconfig={kubeconfig}"], port


@pytest.mark.parametrize(
    "name,config_key,guarded",
    [("ballast-scheduler", "scheduler-config.yaml", ["/api/v1/decisions"]),
     ("ballast-rebalancer", "rebalancer-config.yaml", ["/status", "/decisions"])],
)  # fmt: skip
def test_the_decision_apis_want_the_token_as_the_chart_runs_them(
    rendered, sandbox, namespace, tmp_path, name, config_key, guarded
):
    argv, port = command(rendered, name, config_key, tmp_path, namespace, sandbox.kubeconfig)
    assert any(a.startswith("--api-token-file=") for a in argv)
    log = open(tmp_path / "log", "wb")  # noqa: SIM115 (lives with the process)
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        for host in ("127.0.0.1", "[::1]"):  # `:PORT`: both families
            wait_for(lambda h=host: requests.get(f"http://{h}:{port}/healthz", timeout=T).ok,
                     timeout=60, what=f"{name} on {host}")  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        assert requests.get(f"{base}/metrics", timeout=T).status_code == 200
        for path in guarded:
            bare = requests.get(base + path, timeout=T)
            assert bare.status_code == 401, (path, bare.text)
            wrong = requests.get(base + path, headers={"Authorization": "Bearer nope"}, timeout=T)
            assert wrong.status_code == 401
            auth = {"Authorization": f"Bearer {TOKEN}"}
            # 200, or 503 from a replica still waiting for its Lease: past the token either way.
            assert requests.get(base + path, headers=auth, timeout=T).status_code in (200, 503)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
