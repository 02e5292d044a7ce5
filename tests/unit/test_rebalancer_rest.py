"""A node's rest after an eviction ends early on evidence newer than the move (rest.py): rounds
driven on a fake clock and a fake watcher, the judge and the actor real, the API's answers
scripted (the Eviction always succeeds; the test deletes the pod from the cache when it wants
the pod gone)."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from scheduler.config.profiles import build_profiles
from scheduler.framework import MetricStats, NodeLoad, Snapshot
from scheduler.framework.clusterindex import REPLICA_SETS
from scheduler.framework.snapshot import snapshot_of
from scheduler.rebalancer import evictions, settings
from scheduler.rebalancer.classify import HOT, Classification
from scheduler.rebalancer.rest import Cooldowns
from scheduler.rebalancer.runtime import Options, Rebalancer
from tests.unit.test_rebalancer import node, pod
from tests.unit.test_rebalancer_safety import offline_rebalancer, replica_set

WINDOW = 60.0  # the watcher's window (its expiry): a rest is 60 s + the provider lag (15 s)
INTERVAL = 2.0  # seconds between rounds; the watcher has a new sample each round
COOL = {"cold1": 40.0, "cold2": 45.0, "mid": 70.0}


class Watcher:
    """The watcher's answer: the hot node's window average and newest sample, set by the test;
    every sample one second old at each round."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.avg = self.latest = 90.0
        self.stuck: float | None = None  # a sample time the watcher keeps answering with

    def loads(self) -> dict[str, NodeLoad]:
        sample = self.stuck if self.stuck is not None else self.clock[0] - 1.0
        figures = {"hot": (self.avg, self.latest), **{n: (v, v) for n, v in COOL.items()}}
        return {
            n: NodeLoad(
                {"cpu": MetricStats(avg, 1.0, latest, "fresh", 1.0, sample, expiry=WINDOW)},
                "ballast",
            )
            for n, (avg, latest) in figures.items()
        }


class Writer:
    """Every intent recorded, every Event told, no history to read back."""

    def intend(self, *args: Any) -> str:
        return ""

    def tell(self, *args: Any) -> None:
        pass

    def resting_nodes(self) -> dict[str, float]:
        return {}


def wire(
    monkeypatch: Any, r: Rebalancer, snap: Snapshot, watcher: Any, clock: list[float]
) -> list[tuple[float, str]]:
    """`r` reading `snap` as its cache, `watcher` as the watcher and `clock` as its clock, every
    intent recorded and every Eviction succeeding; the evictions made, (time, pod name) each."""
    r.cache.nodes, r.cache.index = snap.nodes, snap.cluster
    r.rounds.metrics = watcher
    r.rounds.clock = lambda: clock[0]
    r.actor.writer = Writer()  # type: ignore[assignment]
    evicted: list[tuple[float, str]] = []

    def evict(p: Any, dry_run: bool = False) -> evictions.Outcome:
        evicted.append((clock[0], p.name))
        return evictions.Outcome(evictions.EVICTED)

    monkeypatch.setattr(r.actor, "evict", evict)
    return evicted


class Scene:
    def __init__(self, monkeypatch: Any, options: Options | None = None, **section: Any) -> None:
        self.clock = [1_800_000_000.0]
        self.r = r = offline_rebalancer(options)
        for key, value in {"interval": INTERVAL, **section}.items():
            setattr(r.settings, key, value)
        self.pods = [pod(name, cpu="400m") for name in ("a", "b", "c")]
        nodes = [node(n) for n in ("hot", *COOL)]
        snap = snapshot_of(nodes, [(p, "hot") for p in self.pods])
        for p in self.pods:
            snap.cluster.put(REPLICA_SETS, f"app/{p.name}-owner", replica_set(f"{p.name}-owner", 3))
        self.watcher = Watcher(self.clock)
        self.evicted = wire(monkeypatch, r, snap, self.watcher, self.clock)

    def gone(self, name: str) -> None:
        """The pod deleted: the cache no longer holds it."""
        victim = next(p for p in self.pods if p.name == name)
        self.r.cache.nodes["hot"].remove_pod(victim)
        self.r.cache.index.remove_pod(victim.uid)

    def deleted(self, name: str) -> None:
        """The pod deleted, and the cache's watch reports it now (its listener is told)."""
        self.gone(name)
        self.r.departed(next(p for p in self.pods if p.name == name).uid)

    def rounds(self, n: int) -> None:
        for _ in range(n):
            self.clock[0] += INTERVAL
            self.r.round()

    def first_move(self) -> float:
        """Three hot observations, then one pod off the hot node (90 % less 15 is under high);
        the time of the eviction."""
        self.rounds(3)
        assert [name for _, name in self.evicted] == ["a"], self.evicted
        return self.evicted[0][0]

    def rest_ended(self) -> list[dict[str, Any]]:
        return [d for d in self.r.decisions.latest() if d["action"] == "rest-ended"]


def rest_end(r: Rebalancer, at: float) -> float:
    return at + WINDOW + r.options.provider_lag


def test_a_node_still_hot_on_post_move_samples_is_judged_again_before_its_rest_ends(monkeypatch):
    s = Scene(monkeypatch)
    at = s.first_move()
    assert s.r.memory.cooldowns.until["hot"] == rest_end(s.r, at)
    s.gone("a")
    # The background keeps rising: every sample after the move shows the node over high.
    s.watcher.latest = 95.0
    s.rounds(20)  # 40 s: the rest would have lasted 75 s
    assert [name for _, name in s.evicted] == ["a", "b"]
    second = s.evicted[1][0]
    # Seen gone at +2 s; a sample counts once taken after +17 s (the provider's 15 s lag):
    # those of the rounds at +20, +22 and +24 s.
    assert second == at + 24.0
    assert second < rest_end(s.r, at)
    [ended] = s.rest_ended()
    assert ended["node"] == "hot" and ended["reason"] == "hot-again"
    assert ended["detail"].startswith("hot again after the move: 3 samples above high since ")


def test_the_provider_lag_it_is_given_sets_the_rest_and_its_early_end(monkeypatch):
    # --provider-lag 3 (the benchmarks' 15 s over 5): the rest is the window plus 3 s, and a
    # sample counts as post-move once taken 3 s after the pod was seen gone, not 15.
    s = Scene(monkeypatch, Options(provider_lag=3.0))
    assert (s.r.rounds.judge.provider_lag, s.r.memory.replacements.bound.provider_lag) == (3.0, 3.0)
    at = s.first_move()
    assert s.r.memory.cooldowns.until["hot"] == at + WINDOW + 3.0
    s.gone("a")
    s.watcher.latest = 95.0
    s.rounds(6)
    # Seen gone at +2 s; samples count once taken after +5 s: those of the rounds at +8, +10
    # and +12 s (at 15 s, the first would be at +20 s).
    assert [(t - at, name) for t, name in s.evicted] == [(0.0, "a"), (12.0, "b")]
    assert [d["reason"] for d in s.rest_ended()] == ["hot-again"]


def test_samples_from_before_the_move_could_show_or_too_few_do_not_end_the_rest(monkeypatch):
    s = Scene(monkeypatch)
    at = s.first_move()
    s.watcher.latest = 95.0
    s.rounds(10)  # 20 s hot, but the pod is still placed (terminating): nothing shows its going
    assert len(s.evicted) == 1 and s.r.last["resting"] and not s.rest_ended()
    s.gone("a")
    gone = s.clock[0] + INTERVAL  # the round that sees it gone
    s.rounds(8)  # samples up to 15 s after it was seen gone: taken before its going could show
    assert s.clock[0] - 1.0 <= gone + 15.0
    assert len(s.evicted) == 1 and not s.rest_ended()
    s.rounds(2)  # two post-move samples above high: fewer than `consecutive`
    assert len(s.evicted) == 1 and not s.rest_ended()
    s.watcher.latest = 78.0  # one under high: the samples in a row start over
    s.rounds(1)
    s.watcher.latest = 95.0
    s.rounds(2)
    assert len(s.evicted) == 1 and not s.rest_ended()
    s.watcher.stuck = s.clock[0] - 1.0  # the same sample read again is no new evidence
    s.rounds(3)
    assert len(s.evicted) == 1 and not s.rest_ended()
    s.watcher.stuck = None
    s.rounds(1)  # the third newer sample in a row
    assert [name for _, name in s.evicted] == ["a", "b"]
    assert s.evicted[1][0] < rest_end(s.r, at)


def test_a_node_cooled_by_the_move_keeps_resting_though_its_average_is_still_hot(monkeypatch):
    s = Scene(monkeypatch)
    at = s.first_move()
    s.gone("a")
    # The window average still holds the victim (90 %); every sample since shows 76 %.
    s.watcher.latest = 76.0
    while s.clock[0] + INTERVAL < rest_end(s.r, at):
        s.rounds(1)
        assert "hot" in s.r.last["resting"]
    assert len(s.evicted) == 1 and not s.rest_ended()


def test_the_victim_is_not_counted_twice_when_the_node_is_judged_again(monkeypatch):
    # Up to two pods a round may leave the node.
    s = Scene(monkeypatch, max_per_node=2)
    s.first_move()
    s.gone("a")
    # The window average (97 %) still holds the victim's 15 points: judged on it, the node
    # would need two more pods off (97 - 15 = 82 > 80). The samples since its going show
    # 93-95 %: one pod brings it under high.
    s.watcher.avg = 97.0
    readings = iter([94.0, 93.0, 95.0] + [95.0] * 20)

    def loads() -> dict[str, NodeLoad]:
        s.watcher.latest = next(readings) if s.clock[0] - 1.0 > gone + 15.0 else 95.0
        return Watcher.loads(s.watcher)

    gone = s.clock[0] + INTERVAL
    s.watcher.loads = loads  # type: ignore[method-assign]
    s.rounds(15)
    assert [name for _, name in s.evicted] == ["a", "b"]
    [second] = [d for d in s.r.decisions.latest() if d["action"] == "evict" and "/b" in d["pod"]]
    # Judged on the least of the three samples that ended the rest, not on the average.
    assert second["detail"].startswith("hot cpu 93.0% > high 80.0%"), second["detail"]
    assert "hot again after the move: 3 samples above high" in s.rest_ended()[0]["detail"]
    assert "cpu 93.0%" in s.rest_ended()[0]["detail"]


def hot_view(sample: float, latest: float = 95.0) -> Classification:
    nodes = ("restored", "moved")
    return Classification(
        state={n: HOT for n in nodes},
        usage={n: {"cpu": 90.0} for n in nodes},
        latest={n: {"cpu": latest} for n in nodes},
        sample_time={n: sample for n in nodes},
        high={"cpu": 80.0},
        low={"cpu": 50.0},
    )


def test_a_rest_read_back_or_with_a_new_victim_placed_is_not_ended_by_older_evidence():
    rests = Cooldowns(lag=15.0)
    rests.start("restored", 0.0, 75.0)  # read back from the Events: no victim known
    rests.start("moved", 0.0, 75.0, "uid-1")
    placed = {"uid-2"}
    assert rests.observe(hot_view(1.0), 2.0, placed, 3) == {}  # uid-1 gone: counts after 17 s
    for t in (18.0, 20.0):
        assert rests.observe(hot_view(t), t + 1.0, placed, 3) == {}
    # A second pod leaves the node before the third sample: the evidence starts over, and
    # waits for that pod's going too.
    rests.start("moved", 21.0, 75.0, "uid-2")
    for t in (22.0, 24.0, 26.0):
        assert rests.observe(hot_view(t), t + 1.0, placed, 3) == {}
    placed.clear()
    assert rests.observe(hot_view(28.0), 30.0, placed, 3) == {}  # gone at 30: counts after 45
    for t in (46.0, 48.0):
        assert rests.observe(hot_view(t), t + 1.0, placed, 3) == {}
    ended = rests.observe(hot_view(50.0), 51.0, placed, 3)
    assert list(ended) == ["moved"] and not rests.active("moved", 51.0)
    assert rests.active("restored", 51.0)


def test_the_cache_s_watch_tells_the_rests_when_a_pod_went(monkeypatch):
    # The path a deletion takes: the cache's watch event, its listener, the rests' record, on
    # the rounds' clock (rest.py counts a victim's post-move samples from it).
    s = Scene(monkeypatch)
    s.r.cache._pod_event("DELETED", {"metadata": {"uid": "gone-1"}, "spec": {}})
    assert s.r.memory.cooldowns.went(["gone-1"], s.clock[0] + 60.0) == s.clock[0]
    assert s.r.memory.cooldowns.went(["never-seen"], s.clock[0] + 60.0) == s.clock[0] + 60.0


def test_round_on_new_samples_starts_the_next_round_when_the_watcher_polled():
    # roundOnNewSamples: the wait for the next round ends when the watcher client has a newer
    # sample (its on_new), not up to `interval` later; without it, `interval` ends it.
    cfg = settings.parse(
        {
            "profiles": [{"schedulerName": "ballast"}],
            "leaderElection": {"leaderElect": False},
            "rebalancer": {"interval": "600s", "roundOnNewSamples": True},
        }
    )
    r = Rebalancer(cfg, client.ApiClient(client.Configuration()), build_profiles(cfg.scheduler))
    assert r.metrics.on_new is not None
    r.metrics.on_new()  # a newer sample fetched: the wait returns at once, not in 600 s
    assert r.pause() is True
    r.new_samples.clear()
    r.settings.interval = 0.01  # none: the interval ends the wait
    assert r.pause() is False
    off = offline_rebalancer()
    assert off.settings.round_on_new_samples is False and off.metrics.on_new is None
    off.settings.interval = 0.01
    off.new_samples.set()  # off: only the interval ends it
    assert off.pause() is False
