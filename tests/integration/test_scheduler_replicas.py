"""Two `ballast scheduler` processes with leader election: every pod bound exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import requests
import yaml

from tests.fixtures.ports import free_port, wait_for
from tests.integration.scheduler_support import create_pods, events_for, pod_body, wait_bound


class SchedulerProcess:
    def __init__(self, tmp_path, kubeconfig, config: dict, identity: str) -> None:
        self.port = free_port()
        self.identity = identity
        cfg = tmp_path / f"{identity}.yaml"
        cfg.write_text(yaml.safe_dump(config))
        self.log = tmp_path / f"{identity}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ballast.cli", "scheduler", "--config", str(cfg),
                 "--kubeconfig", str(kubeconfig), "--metrics-listen", f"127.0.0.1:{self.port}",
                 "--identity", identity],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def healthz(self) -> str:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.identity} exited: {self.log.read_text()[-2000:]}")
        resp = requests.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2)
        return resp.text if resp.status_code == 200 else ""

    def metric(self, name: str, **labels: str) -> float:
        text = requests.get(f"http://127.0.0.1:{self.port}/metrics", timeout=2).text
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + ("{" if want else " ")) and want in line:
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=15)


@pytest.fixture
def replicas(tmp_path, sandbox, namespace):
    config = {
        "leaderElection": {
            "leaderElect": True,
            "leaseDuration": "6s",
            "renewDeadline": "4s",
            "retryPeriod": "500ms",
            "resourceName": f"ballast-{namespace}",
            "resourceNamespace": namespace,
        }
    }
    procs = [SchedulerProcess(tmp_path, sandbox.kubeconfig, config, f"r{i}") for i in range(2)]
    yield procs
    for p in procs:
        p.stop(signal.SIGKILL)


def test_two_replicas_bind_every_pod_exactly_once(kube_api, kube_nodes, namespace, replicas):
    label = {"ballast-test": namespace}
    kube_nodes(3, cpu="4", labels=label)
    wait_for(lambda: all(r.healthz() for r in replicas), timeout=30, what="both replicas up")
    leader = wait_for(
        lambda: next((r for r in replicas if "leader" in r.healthz()), None),
        timeout=15,
        what="a leader",
    )
    standby = next(r for r in replicas if r is not leader)
    assert "standby" in standby.healthz()

    create_pods(kube_api, namespace, [pod_body(f"a{i}", node_selector=label) for i in range(15)])
    wait_bound(kube_api, namespace, 15)
    assert leader.metric("ballast_scheduler_binding_results_total", result="bound") == 15
    assert standby.metric("ballast_scheduler_binding_results_total") == 0

    # Events trail their bindings (they wait while a backlog binds): wait for them before the
    # leader is killed, since a SIGKILL drops whatever is still queued.
    for i in range(15):
        wait_for(lambda i=i: events_for(kube_api, namespace, f"a{i}", "Scheduled"), timeout=30)

    # The leader dies without a goodbye; the standby takes over once the lease runs out.
    leader.stop(signal.SIGKILL)
    wait_for(lambda: "leader" in standby.healthz(), timeout=30, what="the standby to lead")
    create_pods(kube_api, namespace, [pod_body(f"b{i}", node_selector=label) for i in range(10)])
    wait_bound(kube_api, namespace, 25)
    assert standby.metric("ballast_scheduler_binding_results_total", result="bound") == 10
    assert standby.metric("ballast_scheduler_binding_results_total", result="already_bound") == 0
    # The standby never wrote a second Scheduled event for a pod the leader had placed.
    for i in range(15):
        assert len(events_for(kube_api, namespace, f"a{i}", "Scheduled")) == 1
