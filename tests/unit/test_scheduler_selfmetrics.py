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
