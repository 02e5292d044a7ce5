"""The pod poller's figures on /metrics: polls, their seconds, pods seen, refusals by reason."""

from __future__ import annotations

from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

from watcher import selfmetrics
from watcher.errors import ProviderError
from watcher.podpoller import PodPoller
from watcher.podusage import PodFetch, validate_pods
from watcher.store import MemoryStore
from watcher.views import SnapshotReader


class Answers:
    """A pod source answering the given fetches in turn (the provider's side is tested apart)."""

    def __init__(self, *fetches: PodFetch) -> None:
        self.fetches = list(fetches)

    def fetch(self) -> PodFetch:
        return self.fetches.pop(0)


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_pod_polls_counted_on_metrics() -> None:
    items = [
        {"metric": {"namespace": "a", "pod": "p1"}, "value": [0, "0.5"]},
        {"metric": {"namespace": "a"}, "value": [0, "0.5"]},  # no pod label
        {"metric": {"namespace": "a", "pod": "p2"}, "value": [0, "NaN"]},
    ]
    _, refused = validate_pods(items, 1000.0)
    ok = PodFetch(time=1.0, usage={("a", "p1"): (500.0, 1e6), ("a", "p3"): (10.0, 1e6)})
    ok.rejected = Counter(refused)
    failed = PodFetch(time=2.0, error=ProviderError("timeout", "slow"))
    poller = PodPoller(Answers(ok, failed), None, MemoryStore(60), 600, 1, 100)
    poller.poll()
    poller.poll()
    figures = poller.counters()
    assert (figures["polls"], figures["podsSeen"], figures["pods"]) == (2, 2, 2)
    assert figures["pollSeconds"] >= 0
    # no owner reader: both pods count as no_owner, besides the two refused samples
    assert figures["rejected"] == {**dict(refused), "no_owner": 2}
    assert figures["pollErrors"] == {"timeout": 1}

    reader = SnapshotReader(MemoryStore(60), 1.0)
    fig = {"polls": 0, "leading": True, "pods": figures}
    text = selfmetrics.render(selfmetrics.ReplicaCollector(reader, lambda: fig)).decode()
    got = samples(text)
    assert got[("ballast_watcher_pod_polls_total", ())] == 2
    assert got[("ballast_watcher_pods_seen_total", ())] == 2
    assert got[("ballast_watcher_pods", ())] == 2
    assert ("ballast_watcher_pod_poll_seconds_total", ()) in got
    for reason, count in figures["rejected"].items():
        key = ("ballast_watcher_pod_rejected_samples_total", (("reason", reason),))
        assert got[key] == count
    assert got[("ballast_watcher_pod_poll_errors_total", (("reason", "timeout"),))] == 1


def test_a_replica_without_pod_polls_reports_zeros() -> None:
    reader = SnapshotReader(MemoryStore(60), 1.0)
    text = selfmetrics.render(selfmetrics.ReplicaCollector(reader, lambda: None)).decode()
    got = samples(text)
    assert got[("ballast_watcher_pod_polls_total", ())] == 0
    assert got[("ballast_watcher_pods", ())] == 0
