"""GPU windows from dcgm-exporter's series (watcher/gpus.py): parsing, the window and its
statistics, the staleness added at request time; a scripted source (our own interface)."""

from __future__ import annotations

import json

import pytest

from watcher.errors import ProviderError
from watcher.gpupods import parse_pods
from watcher.gpus import FB_FREE, FB_USED, UTIL, GpuFetch, GpuPoller, parse, with_state
from watcher.nodenames import Directory, NodeNamer
from watcher.store import MemoryStore

NAMER = NodeNamer(directory=Directory(names=frozenset({"gpu-0", "gpu-1"})))


def item(node: str | None, gpu: str | None, value: object, **extra: str) -> dict:
    labels = {"UUID": f"GPU-{node}-{gpu}", "modelName": "NVIDIA A100", **extra}
    if node is not None:
        labels["Hostname"] = node
    if gpu is not None:
        labels["gpu"] = gpu
    return {"metric": labels, "value": [0, value]}


def test_parse_rejects_bad_samples_by_reason_and_keeps_the_rest():
    items = [
        item("gpu-0", "0", "42"),
        item("gpu-0", "1", "NaN"),
        item("gpu-0", "2", "120"),  # utilisation over 100 %
        item("gpu-0", "3", "-1"),
        item(None, "0", "5"),
        item("gpu-1", None, "5"),
        item("elsewhere", "0", "5"),
        item("gpu-1", "0", "7"),
        item("gpu-1", "0", "8"),  # the same GPU twice: neither is kept
        {"metric": None, "value": []},
    ]
    values, info, rejected = parse(items, "Hostname", NAMER, percent=True)
    assert values == {("gpu-0", "0"): 42.0}
    assert info == {("gpu-0", "0"): ("GPU-gpu-0-0", "NVIDIA A100", "")}
    assert rejected == {
        "nan": 1,
        "over_100": 1,
        "negative": 1,
        "no_node_label": 1,
        "no_gpu_label": 1,
        "unknown_node": 1,
        "duplicate": 2,
        "malformed": 1,
    }
    # Framebuffer figures are MiB: over 100 is fine there.
    values, _, rejected = parse([item("gpu-0", "2", "40960")], "Hostname", NAMER, percent=False)
    assert values == {("gpu-0", "2"): 40960.0} and not rejected


def test_a_mig_instance_is_a_device_of_its_own():
    mig = {"GPU_I_ID": "3", "GPU_I_PROFILE": "1g.5gb"}
    items = [item("gpu-0", "0", "60", **mig), item("gpu-0", "1", "5")]
    values, info, rejected = parse(items, "Hostname", NAMER, percent=True)
    assert values == {("gpu-0", "0-mig3"): 60.0, ("gpu-0", "1"): 5.0} and not rejected
    assert info[("gpu-0", "0-mig3")] == ("GPU-gpu-0-0", "NVIDIA A100", "1g.5gb")
    assert info[("gpu-0", "1")] == ("GPU-gpu-0-1", "NVIDIA A100", "")
    pods, _ = parse_pods(
        [item("gpu-0", "0", "1", namespace="ml", pod="p", **mig)], "Hostname", NAMER
    )
    assert pods == {("gpu-0", "0-mig3"): {("ml", "p")}}

    key = ("gpu-0", "0-mig3")
    fetch = GpuFetch(
        1.0, {UTIL: {key: 60.0}, FB_USED: {key: 1000.0}, FB_FREE: {key: 3864.0}}, dict(info)
    )
    store = MemoryStore(60.0)
    GpuPoller(Scripted([fetch]), store, 60.0, 60.0, 5.0, (2.0, 60.0)).poll()
    gpu = json.loads(store.gpus_doc())["nodes"]["gpu-0"]["0-mig3"]
    assert gpu["mig"] == {"gpu": "0", "instance": "3", "profile": "1g.5gb"}
    assert gpu["fbTotal"] == 4864.0 and gpu["util"]["latest"] == 60.0


class Scripted:
    def __init__(self, answers: list[GpuFetch]) -> None:
        self.answers = answers

    def fetch(self) -> GpuFetch:
        return self.answers.pop(0)


def fetch(t: float, util: float, used: float, free: float, node: str = "gpu-0") -> GpuFetch:
    key = (node, "0")
    return GpuFetch(
        t,
        {UTIL: {key: util}, FB_USED: {key: used}, FB_FREE: {key: free}},
        {key: ("GPU-abc", "NVIDIA A100")},
    )


def test_window_per_gpu_with_statistics_and_state():
    store = MemoryStore(60.0)
    t0 = 1_000_000.0
    answers = [fetch(t0 + i, 20.0 + 10 * i, 1024.0 * (i + 1), 8192.0 - 1024 * i) for i in range(3)]
    # A partial answer: utilisation came, the memory queries failed; what came still counts.
    partial = GpuFetch(t0 + 3, {UTIL: {("gpu-0", "0"): 60.0}}, error=ProviderError("timeout", "x"))
    poller = GpuPoller(Scripted([*answers, partial]), store, 60.0, 60.0, 5.0, (2.0, 60.0))
    for _ in range(4):
        poller.poll()
    doc = json.loads(store.gpus_doc())
    gpu = doc["nodes"]["gpu-0"]["0"]
    assert gpu["uuid"] == "GPU-abc" and gpu["model"] == "NVIDIA A100"
    assert gpu["util"]["latest"] == 60.0 and gpu["util"]["max"] == 60.0
    assert gpu["util"]["avg"] == pytest.approx(37.5)  # 20, 30, 40, 60
    assert gpu["fbUsed"]["latest"] == 3072.0 and gpu["fbFree"]["latest"] == 6144.0
    assert gpu["fbTotal"] == 9216.0
    assert gpu["memory"]["latest"] == pytest.approx(100 * 3072 / 9216, abs=1e-3)
    assert gpu["count"] == 4 and gpu["last"] == t0 + 3
    assert doc["lastPoll"]["ok"] is False and doc["counters"]["pollErrors"] == {"timeout": 1}
    # Utilisation moves 10 points a second: fresh for 5 / 10 s, clamped to the 2 s floor.
    assert gpu["horizon"] == 2.0
    fresh = with_state(doc, t0 + 4, "gpu-0")["nodes"]["gpu-0"]
    stale = with_state(doc, t0 + 10, "gpu-0")["nodes"]["gpu-0"]
    gone = with_state(doc, t0 + 64, None)["nodes"]["gpu-0"]
    assert (fresh["state"], stale["state"], gone["state"]) == ("fresh", "stale", "expired")
    assert stale["gpus"]["0"]["age"] == 7.0
    assert with_state(doc, t0, "elsewhere")["nodes"] == {}


def test_a_cluster_without_gpus_has_no_entries():
    store = MemoryStore(60.0)
    poller = GpuPoller(Scripted([GpuFetch(1.0)]), store, 60.0, 60.0, 5.0, (2.0, 60.0))
    poller.poll()
    doc = json.loads(store.gpus_doc())
    assert doc["nodes"] == {} and doc["lastPoll"]["ok"] is True


def two_gpus(t: float, partial: dict[str, str] | None = None, lose: str = "") -> GpuFetch:
    """gpu-0 and gpu-1 holding still; `lose` left out of the answer."""
    out = GpuFetch(t, {UTIL: {}, FB_USED: {}, FB_FREE: {}}, partial=dict(partial or {}))
    for node, util in (("gpu-0", 10.0), ("gpu-1", 80.0)):
        if node != lose:
            key = (node, "0")
            out.values[UTIL][key] = util
            out.values[FB_USED][key], out.values[FB_FREE][key] = 1000.0, 9000.0
            out.info[key] = ("GPU-" + node, "NVIDIA A100")
    return out


def test_a_partial_answer_is_reported_and_its_missing_gpus_turn_stale_not_gone():
    store = MemoryStore(60.0)
    t0 = 1_000_000.0
    note = {UTIL: "warning: shard b unreachable", FB_USED: "warning: shard b unreachable"}
    answers = [
        two_gpus(t0),
        two_gpus(t0 + 1),
        two_gpus(t0 + 2, partial=note, lose="gpu-1"),
        two_gpus(t0 + 3, lose="gpu-1"),  # complete, still without it: still lacking
        two_gpus(t0 + 4),  # back
    ]
    poller = GpuPoller(Scripted(answers), store, 60.0, 60.0, 5.0, (2.0, 60.0))
    for _ in range(2):
        poller.poll()
    doc = json.loads(store.gpus_doc())
    assert doc["lastPoll"]["partial"] is None and doc["lastPoll"]["lacking"] is None
    assert doc["nodes"]["gpu-1"]["0"]["horizon"] == 60.0  # still: trusted to the upper bound

    poller.poll()
    doc = json.loads(store.gpus_doc())
    assert doc["lastPoll"]["ok"] is True and doc["lastPoll"]["partial"] == note
    assert doc["lastPoll"]["lacking"] == {UTIL: 1, FB_USED: 1}
    assert doc["counters"]["partialAnswers"] == {UTIL: 1, FB_USED: 1}
    kept = doc["nodes"]["gpu-1"]["0"]  # its last window, never dropped or zeroed
    assert kept["util"]["latest"] == 80.0 and kept["last"] == t0 + 1
    assert kept["horizon"] == 2.0  # the shortest: stale two seconds after its last sample
    assert doc["nodes"]["gpu-0"]["0"]["horizon"] == 60.0
    assert with_state(doc, t0 + 3.5)["nodes"]["gpu-1"]["state"] == "stale"
    assert with_state(doc, t0 + 3.5)["nodes"]["gpu-0"]["state"] == "fresh"

    poller.poll()
    doc = json.loads(store.gpus_doc())
    assert doc["lastPoll"]["partial"] is None and doc["lastPoll"]["lacking"] == {
        UTIL: 1,
        FB_USED: 1,
    }
    assert doc["nodes"]["gpu-1"]["0"]["horizon"] == 2.0

    poller.poll()
    doc = json.loads(store.gpus_doc())
    assert doc["lastPoll"]["lacking"] is None
    assert doc["nodes"]["gpu-1"]["0"]["horizon"] == 60.0
    assert doc["counters"]["partialAnswers"] == {UTIL: 1, FB_USED: 1}


class OneQuery:
    """The provider's answer() as PrometheusGpus uses it; records what was asked."""

    def __init__(self, answers: dict[str, list], notes: dict[str, str] | None = None) -> None:
        self.answers = answers
        self.notes = notes or {}
        self.asked: list[str] = []

    def answer(self, query: str, at: float, what: str = "query") -> tuple[list, str | None]:
        self.asked.append(query)
        return self.answers.get(query, []), self.notes.get(query)


def test_no_gpu_series_means_one_query_per_poll():
    from watcher.config import Config
    from watcher.gpus import PrometheusGpus

    queries = Config().gpu_queries()
    provider = OneQuery({})
    result = PrometheusGpus(provider, queries, "Hostname", NAMER).fetch()
    assert provider.asked == [queries[UTIL]] and not result.values
    assert "Hostname" in queries[UTIL] and "DCGM_FI_DEV_GPU_UTIL" in queries[UTIL]
    provider = OneQuery({queries[UTIL]: [item("gpu-0", "0", "3")]})
    result = PrometheusGpus(provider, queries, "Hostname", NAMER).fetch()
    assert len(provider.asked) == 4 and result.values[UTIL] == {("gpu-0", "0"): 3.0}
    assert provider.asked[3] == queries["pods"] and "DCGM_FI_DEV_FB_USED" in queries["pods"]
    assert result.partial == {}
    # The store's note on an answer comes with the fetch, by query key.
    answers = {queries[UTIL]: [item("gpu-0", "0", "3")]}
    provider = OneQuery(answers, {queries[FB_FREE]: "shard b down", queries["pods"]: "b"})
    result = PrometheusGpus(provider, queries, "Hostname", NAMER).fetch()
    assert result.partial == {FB_FREE: "shard b down", "pods": "b"}
    # No GPU in a partial answer: said so, and the memory queries still skipped.
    provider = OneQuery({}, {queries[UTIL]: "shard b down"})
    result = PrometheusGpus(provider, queries, "Hostname", NAMER).fetch()
    assert provider.asked == [queries[UTIL]] and result.partial == {UTIL: "shard b down"}


class Owners:
    """watcher.owners.PodOwners' lookup, from a fixed map (its listing is tested elsewhere)."""

    def __init__(self, owners: dict) -> None:
        self.owners = owners

    def update(self, unknown: bool = False) -> None:
        pass

    def lookup(self, namespace: str, pod: str):
        return self.owners.get((namespace, pod))


def test_per_pod_gpu_use_by_workload():
    from shared.workloads import Workload
    from watcher.gpupods import parse_pods, pod_shares

    pods_items = [
        {"metric": {"Hostname": "gpu-0", "gpu": "0", "namespace": "ml", "pod": "infer-a"}},
        {"metric": {"Hostname": "gpu-0", "gpu": "0", "namespace": "ml", "pod": "infer-b"}},
        {"metric": {"Hostname": "gpu-0", "gpu": "1", "namespace": "ml", "pod": "train-0"}},
        {"metric": {"Hostname": "gpu-1", "gpu": "0", "namespace": "ml", "pod": "train-0"}},
        {"metric": {"Hostname": "gpu-0", "gpu": "1", "namespace": "", "pod": ""}},
        {"metric": {"Hostname": "far", "gpu": "0", "namespace": "ml", "pod": "x"}},
    ]
    pods, rejected = parse_pods(pods_items, "Hostname", NAMER)
    assert rejected == {"no_pod_label": 1, "unknown_node": 1}
    used = {("gpu-0", "0"): 8000.0, ("gpu-0", "1"): 30000.0, ("gpu-1", "0"): 10000.0}
    util = {("gpu-0", "0"): 60.0, ("gpu-0", "1"): 90.0, ("gpu-1", "0"): 70.0}
    shares = pod_shares(pods, used, util)
    # a shared GPU split evenly; a pod on two GPUs sums them
    assert shares == {("ml", "infer-a"): (4000.0, 30.0), ("ml", "infer-b"): (4000.0, 30.0),
                      ("ml", "train-0"): (40000.0, 160.0)}  # fmt: skip
    infer = Workload("ml", "Deployment", "infer", "abc")
    owners = Owners({("ml", "infer-a"): infer, ("ml", "infer-b"): infer})
    store = MemoryStore(60.0)
    key = ("gpu-0", "0")
    answers = [
        GpuFetch(
            100.0 + i, {UTIL: util, FB_USED: used, FB_FREE: {key: 1.0}}, pods=pods, mapped=True
        )  # fmt: skip
        for i in range(3)
    ]
    poller = GpuPoller(Scripted(answers), store, 60.0, 60.0, 5.0, (2.0, 60.0), owners)
    for _ in range(3):
        poller.poll()
    doc = json.loads(store.gpus_doc())
    infer_doc = doc["workloads"]["ml/Deployment/infer"]
    assert infer_doc["samples"] == 6 and infer_doc["memory"]["p95"] == 4000.0
    assert infer_doc["util"]["max"] == 30.0
    assert list(doc["workloads"]) == ["ml/Deployment/infer"]
    # who uses each GPU now, for the scheduler's guess of the GPU a new replica gets
    assert doc["nodes"]["gpu-0"]["0"]["pods"] == ["ml/infer-a", "ml/infer-b"]
    assert doc["nodes"]["gpu-1"]["0"]["pods"] == ["ml/train-0"]
    assert doc["counters"]["rejected"]["no_owner"] == 3  # train-0, once a poll
