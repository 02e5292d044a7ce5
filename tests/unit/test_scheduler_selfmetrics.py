"""The scheduler's /metrics per replica: a standby does not report the leader's pending pods."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.backend.queue import SchedulingQueue
from scheduler.framework import PodInfo
from scheduler.serve.status import Telemetry


class Elector:
    def __init__(self, leader: bool) -> None:
        self.leader = leader

    def is_leader(self) -> bool:
        return self.leader


def samples(telemetry: Telemetry, name: str) -> dict[str, float]:
    text = generate_latest(telemetry.registry).decode()
    return {
        s.labels.get("queue", ""): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == name
    }


def test_pending_pods_count_on_the_leader_only():
    queue = SchedulingQueue(1.0, 10.0)
    for i in range(3):
        queue.add(PodInfo(f"p{i}", "ns", f"uid-{i}", "", 0, 0.0, "", "", {}, {}, {}))
    elector = Elector(leader=False)
    telemetry = Telemetry()
    telemetry.add_sources(queue=queue, elector=elector)
    assert samples(telemetry, "ballast_scheduler_pending_pods")["active"] == 0
    assert samples(telemetry, "ballast_scheduler_leader") == {"": 0.0}
    elector.leader = True
    assert samples(telemetry, "ballast_scheduler_pending_pods")["active"] == 3
    assert samples(telemetry, "ballast_scheduler_leader") == {"": 1.0}


def test_without_leader_election_the_replica_reports_its_queue():
    queue = SchedulingQueue(1.0, 10.0)
    queue.add(PodInfo("p", "ns", "uid", "", 0, 0.0, "", "", {}, {}, {}))
    telemetry = Telemetry()
    telemetry.add_sources(queue=queue)
    assert samples(telemetry, "ballast_scheduler_pending_pods")["active"] == 1


class FakeWatcherClient:
    """The counters MetricsClient.refresh keeps; failures include malformed and unauthorized."""

    def __init__(self) -> None:
        self.fetches, self.failures, self.malformed, self.unauthorized = 0, 0, 0, 0
        self.age: float | None = None

    def snapshot_age(self) -> float | None:
        return self.age


def by_result(telemetry: Telemetry) -> dict[str, float]:
    text = generate_latest(telemetry.registry).decode()
    return {
        s.labels["result"]: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "ballast_scheduler_watcher_fetches_total"
    }


def test_fetch_outcomes_partition_the_fetches_so_sum_counts_each_once():
    client = FakeWatcherClient()
    client.fetches, client.failures, client.malformed, client.unauthorized = 10, 4, 1, 2
    telemetry = Telemetry()
    telemetry.add_sources(metrics_client=client)
    results = by_result(telemetry)
    assert results == {"ok": 6, "error": 1, "malformed": 1, "unauthorized": 2}
    assert sum(results.values()) == client.fetches


def test_snapshot_age_is_absent_until_the_first_answer():
    client = FakeWatcherClient()
    telemetry = Telemetry()
    telemetry.add_sources(metrics_client=client)
    name = "ballast_scheduler_watcher_snapshot_age_seconds"
    assert samples(telemetry, name) == {}
    assert samples(telemetry, "ballast_scheduler_watcher_snapshot_received") == {"": 0.0}
    client.age = 2.5
    assert samples(telemetry, name) == {"": 2.5}
    assert samples(telemetry, "ballast_scheduler_watcher_snapshot_received") == {"": 1.0}
