"""The scheduling queue's ordering, backoff and unschedulable handling, on a fake clock."""

from __future__ import annotations

import threading

from scheduler.backend.queue import (
    ACTIVE,
    BACKOFF,
    IN_FLIGHT,
    UNSCHEDULABLE,
    SchedulingQueue,
    pod_updated,
)
from scheduler.framework import PodInfo


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, priority: int = 0, created: float = 0.0) -> PodInfo:
    return PodInfo(
        name, "ns", f"uid-{name}", "ballast", priority, created, "", "Pending", {}, {}, {}
    )


def drain(q: SchedulingQueue) -> list[str]:
    out = []
    while (p := q.pop(timeout=0)) is not None:
        out.append(p.name)
    return out


def test_priority_first_then_age():
    q = SchedulingQueue(clock=Clock())
    q.add(pod("old-low", 0, created=1))
    q.add(pod("new-high", 10, created=5))
    q.add(pod("old-high", 10, created=2))
    q.add(pod("new-low", 0, created=9))
    assert drain(q) == ["old-high", "new-high", "old-low", "new-low"]


def test_readding_a_queued_pod_does_not_duplicate_it():
    q = SchedulingQueue(clock=Clock())
    q.add(pod("a"))
    q.add(pod("a"))
    assert drain(q) == ["a"]


def test_priority_change_reorders():
    q = SchedulingQueue(clock=Clock())
    q.add(pod("a", 0, created=1))
    q.add(pod("b", 0, created=2))
    q.add(pod("b", 5, created=2))
    assert drain(q) == ["b", "a"]


def test_backoff_doubles_and_caps():
    q = SchedulingQueue(initial_backoff=1, max_backoff=10, clock=Clock())
    assert [q.backoff_for(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_failed_pod_waits_out_its_backoff():
    clock = Clock()
    q = SchedulingQueue(initial_backoff=1, max_backoff=10, clock=clock)
    p = pod("a")
    q.add(p)
    assert q.pop(timeout=0) is p
    q.requeue_backoff(p)
    q.requeue_backoff(p)  # second failure: 2 s
    assert q.depth()[BACKOFF] == 1
    clock.now += 1.5
    assert q.pop(timeout=0) is None
    clock.now += 0.6
    assert q.pop(timeout=0) is p
    assert q.attempts(p.uid) == 2


def test_unschedulable_pod_returns_on_cluster_change_only():
    clock = Clock()
    q = SchedulingQueue(initial_backoff=1, unschedulable_flush=60, clock=clock)
    p = pod("a")
    q.add(p)
    q.pop(timeout=0)
    q.unschedulable(p)
    assert q.depth()[UNSCHEDULABLE] == 1
    clock.now += 5  # backoff is over, but nothing changed
    assert q.pop(timeout=0) is None
    q.cluster_changed()
    assert q.pop(timeout=0) is p


def test_unschedulable_pod_is_flushed_periodically():
    clock = Clock()
    q = SchedulingQueue(unschedulable_flush=60, clock=clock)
    p = pod("a")
    q.add(p)
    q.pop(timeout=0)
    q.unschedulable(p)
    clock.now += 59
    assert q.pop(timeout=0) is None
    clock.now += 2
    assert q.pop(timeout=0) is p


def test_change_during_the_attempt_skips_parking():
    clock = Clock()
    q = SchedulingQueue(initial_backoff=1, clock=clock)
    p = pod("a")
    q.add(p)
    q.pop(timeout=0)
    assert q.depth()[IN_FLIGHT] == 1
    q.cluster_changed()  # e.g. a node was added while the pod was being filtered
    q.unschedulable(p)
    assert q.depth()[BACKOFF] == 1
    assert q.pop(timeout=0) is p  # and, nothing else being active, retried at once


def test_a_held_pod_stays_parked_until_its_hold_ends():
    """A preemptor whose victims are being evicted: their deletions (cluster changes) leave it
    parked, also when one comes during its attempt; the change that ends the hold moves it.
    Other parked pods move as before; the periodic flush still takes a held pod."""
    clock = Clock()
    q = SchedulingQueue(initial_backoff=1, unschedulable_flush=60, clock=clock)
    evicting: set[str] = set()
    q.hold_while(evicting.__contains__)
    a, b = pod("a"), pod("b")
    q.add(a)
    assert q.pop(timeout=0) is a
    evicting.add(a.uid)  # its preemption starts while it is still in flight
    q.cluster_changed()  # a first victim gone before the attempt ends
    q.unschedulable(a)
    parked(q, b)
    clock.now += 5
    q.cluster_changed()  # another victim
    assert drain(q) == ["b"]
    assert q.depth()[UNSCHEDULABLE] == 1
    evicting.discard(a.uid)
    q.cluster_changed()  # the evictor's end
    assert drain(q) == ["a"]
    q.unschedulable(a)
    evicting.add(a.uid)
    clock.now += 61
    assert drain(q) == ["a"]  # the flush


def test_removed_pods_are_never_popped():
    q = SchedulingQueue(clock=Clock())
    q.add(pod("a"))
    q.add(pod("b"))
    q.remove("uid-a")
    assert drain(q) == ["b"]
    assert len(q) == 1  # b is in flight until done
    q.done("uid-b")
    assert len(q) == 0


def test_pop_wakes_up_when_a_pod_arrives():
    q = SchedulingQueue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.pop(timeout=10)))
    t.start()
    q.add(pod("a"))
    t.join(timeout=5)
    assert got and got[0].name == "a"


def test_close_releases_a_waiting_pop():
    q = SchedulingQueue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.pop(timeout=30)))
    t.start()
    q.close()
    t.join(timeout=5)
    assert got == [None]


def test_depth_counts_each_room():
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    for name in "abcd":
        q.add(pod(name, created=ord(name)))
    a = q.pop(timeout=0)
    b = q.pop(timeout=0)
    q.pop(timeout=0)
    q.requeue_backoff(a)
    q.unschedulable(b)
    assert q.depth() == {ACTIVE: 1, BACKOFF: 1, UNSCHEDULABLE: 1, IN_FLIGHT: 1}


def test_has_active_until_the_last_pod_is_popped():
    q = SchedulingQueue(clock=Clock())
    assert not q.has_active()
    q.add(pod("a"))
    q.add(pod("b"))
    assert q.has_active()
    drain(q)
    assert not q.has_active()


def parked(q: SchedulingQueue, p: PodInfo) -> None:
    q.add(p)
    assert q.pop(timeout=0) is p
    q.unschedulable(p)


def test_a_moved_pod_is_popped_from_backoff_when_nothing_is_active():
    # v1.34's SchedulerPopFromBackoffQ: no idling out the backoff while the queue is empty.
    clock = Clock()
    q = SchedulingQueue(initial_backoff=1, clock=clock)
    a, b = pod("a"), pod("b")
    parked(q, a)
    q.cluster_changed()  # its victims are gone, say: backoff, 1 s left
    assert q.depth()[BACKOFF] == 1
    q.add(b)
    assert q.pop(timeout=0) is b  # the active pod first
    assert q.pop(timeout=0) is a  # then, with nothing active, the backing-off one at once
    assert q.attempts(a.uid) == 1


def test_backoff_pops_in_order_of_backoff_end():
    clock = Clock()
    q = SchedulingQueue(initial_backoff=1, clock=clock)
    early, late = pod("early"), pod("late")
    parked(q, early)
    clock.now += 0.5
    parked(q, late)
    q.cluster_changed()
    assert drain(q) == ["early", "late"]


def test_error_backoff_is_not_popped_early_nor_without_the_gate():
    clock = Clock()
    q = SchedulingQueue(initial_backoff=1, clock=clock)
    p = pod("a")
    q.add(p)
    q.pop(timeout=0)
    q.requeue_backoff(p)  # a failed bind: upstream's podErrorBackoffQ waits it out
    assert q.pop(timeout=0) is None
    clock.now += 1
    assert q.pop(timeout=0) is p

    q = SchedulingQueue(initial_backoff=1, clock=clock, pop_from_backoff=False)
    parked(q, p)
    q.cluster_changed()
    assert q.pop(timeout=0) is None
    clock.now += 1
    assert q.pop(timeout=0) is p


def with_raw(p: PodInfo, raw: dict) -> PodInfo:
    p.raw = raw
    return p


def test_only_an_edit_of_the_pod_wakes_it_not_a_status_write():
    # upstream's isPodUpdated: our own PodScheduled=False patch must not retry the pod
    q = SchedulingQueue(initial_backoff=1, clock=Clock())
    spec = {"containers": [{"name": "c"}]}
    raw = {"metadata": {"resourceVersion": "1", "labels": {"a": "1"}}, "spec": spec}
    parked(q, with_raw(pod("a"), raw))
    status_write = {
        "metadata": {"resourceVersion": "2", "labels": {"a": "1"}, "managedFields": [{}]},
        "spec": spec,
        "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]},
    }
    q.add(with_raw(pod("a"), status_write))
    assert q.depth()[UNSCHEDULABLE] == 1
    relabelled = {"metadata": {"resourceVersion": "3", "labels": {"a": "2"}}, "spec": spec}
    q.add(with_raw(pod("a"), relabelled))
    assert q.depth()[UNSCHEDULABLE] == 0
    assert q.pop(timeout=0).raw is relabelled


def test_pod_updated_as_upstream():
    base = {"metadata": {"name": "p", "generation": 1}, "spec": {"x": 1}, "status": {}}
    assert not pod_updated(base, {**base, "status": {"phase": "Pending"}})
    assert not pod_updated(base, {**base, "metadata": {"name": "p", "finalizers": ["f"]}})
    assert pod_updated(base, {**base, "spec": {"x": 2}})
    assert pod_updated(base, {**base, "status": {"resourceClaimStatuses": [{"name": "c"}]}})
