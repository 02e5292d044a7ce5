"""`ballast scheduler` on SIGTERM/SIGINT: exits 0 and hands its Lease back for a standby."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest
from kubernetes import client

from tests.fixtures.ports import free_port, wait_for
from tests.integration.scheduler_support import create_pods, pod_body, wait_bound
from tests.integration.test_scheduler_replicas import SchedulerProcess

# Long enough that a standby taking over inside the wait below can only mean the lease was
# handed back, not that it ran out.
LEASE_SECONDS = 120


def lease_spec(api: client.ApiClient, namespace: str, name: str) -> dict:
    resp = client.CoordinationV1Api(api).read_namespaced_lease(
        name, namespace, _preload_content=False, _request_timeout=10
    )
    return json.loads(resp.data).get("spec") or {}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_the_leader_and_releases_its_lease(
    tmp_path, sandbox, kube_api, kube_nodes, namespace, sig
):
    label = {"ballast-test": namespace}
    kube_nodes(2, cpu="4", labels=label)
    name = f"ballast-{namespace}"
    config = {
        "leaderElection": {
            "leaderElect": True,
            "leaseDuration": f"{LEASE_SECONDS}s",
            "renewDeadline": "10s",
            "retryPeriod": "500ms",
            "resourceName": name,
            "resourceNamespace": namespace,
        }
    }
    first = SchedulerProcess(tmp_path, sandbox.kubeconfig, config, "first")
    second = None
    try:
        wait_for(lambda: "leader" in first.healthz(), timeout=30, what="the first to lead")
        second = SchedulerProcess(tmp_path, sandbox.kubeconfig, config, "second")
        wait_for(lambda: "standby" in second.healthz(), timeout=30, what="a standby")
        # Pods in flight while the signal arrives must not be lost or bound twice.
        bodies = [pod_body(f"p{i}", node_selector=label) for i in range(20)]
        create_pods(kube_api, namespace, bodies)
        first.proc.send_signal(sig)
        code = first.proc.wait(timeout=60)
        log = first.log.read_text()
        assert code == 0, log[-3000:]
        assert "Traceback" not in log, log[-3000:]
        assert "released the lease" in log, log[-3000:]

        # Released: nobody holds it until the standby picks it up.
        spec = lease_spec(kube_api, namespace, name)
        assert spec.get("holderIdentity") in ("", None, "second"), spec
        wait_for(
            lambda: "leader" in second.healthz(),
            timeout=LEASE_SECONDS / 4,
            what="the standby to lead after the release",
        )
        assert lease_spec(kube_api, namespace, name)["holderIdentity"] == "second"
        wait_bound(kube_api, namespace, 20)
    finally:
        first.stop(signal.SIGKILL)
        if second is not None:
            second.stop(signal.SIGKILL)


def test_signal_during_a_hanging_first_list_still_exits(tmp_path):
    """An API server that accepts connections and never answers: the first list would wait a
    minute; a SIGTERM meanwhile must not."""
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(16)
    port = hang.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""
    )
    cfg = tmp_path / "config.yaml"
    cfg.write_text("leaderElection: {leaderElect: false}\n")
    metrics = free_port()
    log = tmp_path / "scheduler.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ballast.cli", "scheduler", "--config", str(cfg),
             "--kubeconfig", str(kubeconfig), "--metrics-listen", f"127.0.0.1:{metrics}"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        # Up and serving /healthz (not ready: the cache never syncs).
        wait_for(lambda: _answers(metrics), timeout=30, what="the scheduler's /healthz")
        proc.send_signal(signal.SIGTERM)
        # The list's own timeout is 60 s; ending well before it means the signal was heard.
        assert proc.wait(timeout=30) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hang.close()


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
