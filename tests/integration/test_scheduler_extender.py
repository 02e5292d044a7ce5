"""Extender mode: the HTTP verbs kube-scheduler calls, answered from Ballast's cache."""

from __future__ import annotations

import requests
from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import create_pods, placement, pod_body, pods, running


def test_filter_prioritize_and_bind(kube_api, kube_nodes, namespace):
    label = {"ballast-test": namespace}
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    a, b, tainted = (f"{namespace}-{s}" for s in ("a", "b", "tainted"))
    kube_nodes(
        [
            NodeSpec(a, cpu="2", labels=label),
            NodeSpec(b, cpu="2", labels=label),
            NodeSpec(tainted, cpu="2", labels=label, taints=[taint]),
        ]
    )
    # A pod for another scheduler (kube-scheduler with Ballast as its extender).
    create_pods(kube_api, namespace, [pod_body("p", scheduler="kube-with-extender")])
    raw = pods(kube_api, namespace)["p"]
    with running(kube_api, extender_listen="127.0.0.1:0") as runtime:
        url = f"http://127.0.0.1:{runtime.extender.port}"
        wait_for(lambda: {a, b, tainted} <= set(runtime.cache.nodes), timeout=10)
        names = [a, b, tainted, "ghost"]

        got = requests.post(f"{url}/filter", json={"Pod": raw, "NodeNames": names}, timeout=5)
        assert got.status_code == 200
        answer = got.json()
        assert sorted(answer["NodeNames"]) == sorted([a, b])
        assert "untolerated taint" in answer["FailedNodes"][tainted]
        assert "ghost" in answer["FailedNodes"]
        assert answer["Error"] == ""

        items = [{"metadata": {"name": n}} for n in (a, tainted)]
        answer = requests.post(
            f"{url}/filter", json={"Pod": raw, "Nodes": {"items": items}}, timeout=5
        ).json()
        assert [i["metadata"]["name"] for i in answer["Nodes"]["items"]] == [a]

        scores = requests.post(
            f"{url}/prioritize", json={"Pod": raw, "NodeNames": [a, b]}, timeout=5
        ).json()
        assert {s["Host"] for s in scores} == {a, b}
        assert all(0 <= s["Score"] <= 10 for s in scores)

        bound = requests.post(
            f"{url}/bind",
            json={"PodName": "p", "PodNamespace": namespace, "PodUID": raw["metadata"]["uid"],
                  "Node": b},
            timeout=10,
        ).json()  # fmt: skip
        assert bound == {"Error": ""}
        assert placement(kube_api, namespace)["p"] == b
        # Ballast now counts the pod's predicted CPU on b: its 100m request x 1.5.
        assert runtime.recent.cpu_by_node({})[b] == 150

        # Each answer is in the decision record (`ballast explain`), newest first.
        answers = runtime.decisions.get(namespace, "p")["attempts"]
        verbs = [(x.get("extender") or {}).get("verb") for x in answers]
        assert verbs == ["bind", "prioritize", "filter", "filter"]
        assert answers[0]["outcome"] == "bound" and answers[0]["node"] == b
        top = {row["node"]: row["total"] for row in answers[1]["scores"]["top"]}
        assert set(top) == {a, b} and answers[1]["node"] == max(top, key=lambda n: (top[n], n))
        first_filter = answers[3]["filters"]
        assert first_filter["rejectedNodes"] == 2  # the tainted node and the unknown one
        assert first_filter["byPlugin"]["TaintToleration"] == {
            "node(s) had untolerated taint(s)": 1
        }

        bad = requests.post(f"{url}/filter", data=b"{not json", timeout=5)
        assert bad.status_code == 400 and "bad filter request" in bad.json()["Error"]
        assert runtime.extender  # still serving
    assert placement(kube_api, namespace)["p"] == b


def test_only_the_leader_serves_the_extender_and_carries_the_leader_label(
    kube_api, kube_nodes, namespace
):
    """The chart's extender Service selects `ballast.dev/leader: "true"`: the leader's pod says
    so, the standby's says "false" (so a pod left labelled by a replica that lost the Lease and
    restarted is corrected), and a standby reached anyway answers 503."""
    from scheduler.kube.leaderlabel import LABEL

    kube_nodes(1, cpu="2")
    create_pods(kube_api, namespace, [pod_body("sched-a"), pod_body("sched-b")])
    core = client.CoreV1Api(kube_api)
    # The standby's pod still says "true" from an earlier life.
    core.patch_namespaced_pod("sched-b", namespace, {"metadata": {"labels": {LABEL: "true"}}})
    election = {"leaderElect": True, "leaseDuration": "6s", "renewDeadline": "4s",
                "retryPeriod": "500ms", "resourceName": f"ext-{namespace}",
                "resourceNamespace": namespace}  # fmt: skip

    def label(pod: str) -> str | None:
        return (core.read_namespaced_pod(pod, namespace).metadata.labels or {}).get(LABEL)

    doc = {"leaderElection": election}
    with running(kube_api, doc, extender_listen="127.0.0.1:0", identity="a",
                 leader_label=(namespace, "sched-a")) as leader:  # fmt: skip
        wait_for(lambda: label("sched-a") == "true", timeout=20, what="the leader's label")
        with running(kube_api, doc, extender_listen="127.0.0.1:0", identity="b",
                     leader_label=(namespace, "sched-b")) as standby:  # fmt: skip
            wait_for(lambda: label("sched-b") == "false", timeout=20, what="the standby's label")
            body = {"Pod": pods(kube_api, namespace)["sched-a"], "NodeNames": []}
            url = f"http://127.0.0.1:{standby.extender.port}/filter"
            answer = requests.post(url, json=body, timeout=5)
            assert answer.status_code == 503 and "standby" in answer.json()["Error"]
            url = f"http://127.0.0.1:{leader.extender.port}/filter"
            assert requests.post(url, json=body, timeout=5).status_code == 200
            assert label("sched-a") == "true"
