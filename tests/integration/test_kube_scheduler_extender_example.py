"""k8s/examples/kube-scheduler-extender/ against upstream kube-scheduler in the sandbox: its
profile and extender settings as written (only the URL points at this test's Ballast, token
included); a pod of that profile is filtered, scored and bound through Ballast, which records
it as recently bound; with a wrong token kube-scheduler places nothing (`ignorable: false`)."""

from __future__ import annotations

from pathlib import Path

import yaml

from sandbox.cluster import build
from sandbox.cluster.kube_scheduler import start_kube_scheduler
from tests.differential.upstream import stop_judge
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import (
    create_pods,
    events_for,
    placement,
    pod_body,
    running,
    wait_bound,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "k8s/examples/kube-scheduler-extender"
TOKEN = "example-token-0123456789"


def example(url: str) -> dict:
    doc = yaml.safe_load((EXAMPLE / "kube-scheduler-config.yaml").read_text())
    (extender,) = doc["extenders"]
    assert extender["urlPrefix"].endswith("/EXTENDER_TOKEN")
    extender["urlPrefix"] = url
    return {"profiles": doc["profiles"], "extenders": doc["extenders"]}


def test_upstream_kube_scheduler_uses_ballast_through_the_example(
    sandbox, kube_api, kube_nodes, namespace
):
    build.binary("kube-scheduler")  # built by `make kube-scheduler-build` (part of make test)
    nodes = kube_nodes(2, cpu="4")
    with running(kube_api, extender_listen="127.0.0.1:0", extender_token=TOKEN) as ballast:
        wait_for(lambda: set(nodes) <= set(ballast.cache.nodes), timeout=10)
        base = f"http://127.0.0.1:{ballast.extender.port}"
        overrides = example(f"{base}/{TOKEN}")
        profile = overrides["profiles"][0]["schedulerName"]
        start_kube_scheduler(sandbox, overrides)
        try:
            create_pods(kube_api, namespace, [pod_body("via-ballast", scheduler=profile)])
            node = wait_bound(kube_api, namespace, 1, timeout=60)["via-ballast"]
            assert node in nodes
            # Bound by Ballast's bind verb: its record counts the pod's CPU on that node.
            assert ballast.recent.cpu_by_node({}).get(node, 0) > 0
        finally:
            stop_judge(sandbox)
        # The same example with a wrong token: every call is refused, nothing is placed.
        start_kube_scheduler(sandbox, example(f"{base}/wrong-token"))
        try:
            create_pods(kube_api, namespace, [pod_body("refused", scheduler=profile)])
            wait_for(lambda: events_for(kube_api, namespace, "refused", "FailedScheduling"),
                     timeout=60, what="kube-scheduler's FailedScheduling")  # fmt: skip
            assert placement(kube_api, namespace)["refused"] == ""
        finally:
            stop_judge(sandbox)
