"""Extender mode: the HTTP verbs kube-scheduler calls, answered from Ballast's cache."""

from __future__ import annotations

import requests

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
