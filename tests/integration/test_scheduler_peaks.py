"""The peak model over the real chain: cAdvisor-like pod series in a real Prometheus, the watcher
(with Redis) keeping per-pod statistics, the scheduler's PeakFit against LoadVariationRiskBalancing
on kwok nodes.

Two 4-CPU nodes. "steady" runs two replicas at 1200m each, all the time: 60 % of the node.
"bursty" runs two replicas of one Deployment that idle at 50m and burst together to 1500m for
3 s of every 15: about 17 % on average, but 75 % at every burst. LoadVariationRiskBalancing
weighs the mean plus one deviation, half each ((0.17 + 0.29) / 2 against 0.60 / 2), and
prefers "bursty"; PeakFit, with its defaults, predicts "bursty"'s peak at 77 % with the pod
(each replica's max summed, 3000m, and the node's own max, 75 %) against "steady"'s 62 %, and
prefers "steady".
"""

from __future__ import annotations

import threading
import time

from kubernetes import client

from sandbox.cluster.nodes import NodeSpec
from tests.fixtures.ports import wait_for
from tests.integration.scheduler_support import create_pods, pod_body, running, wait_bound

STEADY_M, IDLE_M, BURST_M = 1200.0, 50.0, 1500.0
PERIOD, BURST = 15.0, 3.0
MEMORY = 256 * 1024**2


def deployment(name: str, node: str) -> dict:
    labels = {"app": name}
    container = {
        "name": "app",
        "image": "example.invalid/app:1",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                # no scheduler for these: placed where they are created
                "spec": {"nodeName": node, "containers": [container]},
            },
        },
    }


def profile(name: str, plugin: str) -> dict:
    return {
        "schedulerName": name,
        "plugins": {
            "score": {"enabled": [{"name": plugin, "weight": 1}], "disabled": [{"name": "*"}]}
        },
    }


class Load:
    """Drives the pods' and nodes' series: steady replicas flat, bursty ones in step."""

    def __init__(self, exporter, namespace: str, pods: dict[str, list[str]], nodes: dict) -> None:
        self.exporter, self.namespace, self.pods, self.nodes = exporter, namespace, pods, nodes
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def set(self, bursting: bool) -> None:
        burst = BURST_M if bursting else IDLE_M
        for role, use in (("steady", STEADY_M), ("bursty", burst)):
            node = self.nodes[role]
            for pod in self.pods[role]:
                self.exporter.set_pod(self.namespace, pod, node, {"app": (use, MEMORY)})
            self.exporter.set(node, cpu=100 * 2 * use / 4000, memory=20.0)

    def run(self) -> None:
        while not self.stop.is_set():
            self.set(time.time() % PERIOD < BURST)
            self.stop.wait(0.25)

    def __enter__(self) -> Load:
        self.set(False)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        for pods in self.pods.values():
            for pod in pods:
                self.exporter.remove_pod(self.namespace, pod)


def test_a_bursty_node_with_a_low_mean_loses_to_a_steady_one_under_peakfit_only(
    sandbox, kube_api, kube_nodes, namespace, exporter, prometheus, redis_server, make_watcher
):
    nodes = {role: f"{namespace}-{role}" for role in ("steady", "bursty")}
    label = {"ballast-test": namespace}
    kube_nodes([NodeSpec(n, cpu="4", memory="16Gi", labels=label) for n in nodes.values()])
    apps, core = client.AppsV1Api(kube_api), client.CoreV1Api(kube_api)
    apps.create_namespaced_deployment(namespace, deployment("calm", nodes["steady"]))
    apps.create_namespaced_deployment(namespace, deployment("spiky", nodes["bursty"]))

    def replicas() -> dict[str, list[str]] | None:
        found = {}
        for role, app in (("steady", "calm"), ("bursty", "spiky")):
            items = core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
            if len(items) != 2:
                return None
            found[role] = sorted(p.metadata.name for p in items)
        return found

    pods = wait_for(replicas, timeout=30, what="the two Deployments' pods")
    with Load(exporter, namespace, pods, nodes):
        watcher = make_watcher(
            prometheus.url,
            redis_server.url,
            kubeconfig=str(sandbox.kubeconfig),
            key_prefix=f"{namespace}:",
            warm_start=False,
            kube_refresh=2,
        )

        def burst_seen() -> dict | None:
            resp = watcher.get(f"/api/v1/pods?namespace={namespace}")
            if resp.status_code != 200:
                return None
            doc = resp.json()
            where = {name: i for i, name in enumerate(doc["pods"])}
            rows = [where.get(f"{namespace}/{p}") for p in pods["bursty"]]
            if None in rows or min(doc["samples"][i] for i in rows) < 20:
                return None
            # two bursts in the window, so the deviations are the bursts', not one's edge
            window = doc["cpu"]["window"]
            highs = [window["max"][i] for i in rows]
            return doc if min(highs) > 0.8 * BURST_M and time.time() % PERIOD > BURST else None

        doc = wait_for(burst_seen, timeout=60, what="the watcher to see the replicas burst")
        where = {name: i for i, name in enumerate(doc["pods"])}
        spiky = where[f"{namespace}/{pods['bursty'][0]}"]
        calm = where[f"{namespace}/{pods['steady'][0]}"]
        assert doc["workloads"][spiky] == f"{namespace}/Deployment/spiky"
        window = doc["cpu"]["window"]
        assert window["mean"][spiky] < 0.5 * window["mean"][calm]
        assert window["std"][spiky] > 300 and window["std"][calm] < 100
        assert set(doc["pods"]) == {f"{namespace}/{p}" for ps in pods.values() for p in ps}

        config = {
            "watcherAddress": watcher.url,
            "profiles": [profile("lvrb", "LoadVariationRiskBalancing"), profile("peak", "PeakFit")],
        }
        with running(kube_api, config, provider_lag=120.0) as runtime:

            def ready() -> bool:
                usage = runtime.pods_client.pod_usage()
                loads = runtime.metrics.loads()
                seen = all((namespace, p) in usage.by_pod for ps in pods.values() for p in ps)
                return seen and all(n in loads for n in nodes.values())

            wait_for(ready, timeout=30, what="the scheduler to hold the pods' statistics")
            bursty_load = runtime.metrics.loads()[nodes["bursty"]].metrics["cpu"]
            steady_load = runtime.metrics.loads()[nodes["steady"]].metrics["cpu"]
            # what LoadVariationRiskBalancing weighs: the bursty node's mean plus deviation is
            # the lower of the two
            assert bursty_load.avg + bursty_load.std < steady_load.avg, (bursty_load, steady_load)
            create_pods(
                kube_api,
                namespace,
                [
                    pod_body("by-lvrb", scheduler="lvrb", node_selector=label),
                    pod_body("by-peak", scheduler="peak", node_selector=label),
                ],
            )
            placed = wait_bound(kube_api, namespace, 6)
    assert placed["by-lvrb"] == nodes["bursty"]
    assert placed["by-peak"] == nodes["steady"]
