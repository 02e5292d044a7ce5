"""The watcher on a real Redis: outage and return, one poller across replicas, key hygiene."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from tests.fixtures.ports import wait_for
from watcher.redis_store import RedisStore
from watcher.window import Frame

NODES = {"redis-a": (35.0, 45.0), "redis-b": (60.0, 25.0)}


@pytest.fixture(scope="module", autouse=True)
def loaded(exporter, prometheus):
    for node, (cpu, memory) in NODES.items():
        exporter.set(node, cpu=cpu, memory=memory)
    prometheus.wait_for_series('node_memory_MemTotal_bytes{instance=~"redis-.*"}', len(NODES))


def prefix() -> str:
    return f"t-{uuid.uuid4().hex[:8]}:"


def last_poll_time(watcher) -> float:
    return watcher.status()["lastPoll"]["time"]


def test_redis_outage_serves_last_copy_then_recovers(prometheus, make_redis, make_watcher):
    redis = make_redis()
    watcher = make_watcher(prometheus.url, redis.url, workers=2)
    watcher.wait_nodes(list(NODES))
    assert watcher.status()["store"]["kind"] == "redis"
    # Workload profiles too: enough reads that both workers hold a copy before the outage.
    wait_for(
        lambda: watcher.get("/api/v1/workloads").status_code == 200,
        timeout=15,
        what="the workload profiles document",
    )
    for _ in range(20):
        assert watcher.get("/api/v1/workloads").status_code == 200

    redis.stop()

    # Each worker finds out on its own, so wait for an answer that names the store; the
    # replica stays ready: it serves its last copy (watcher/health.py).
    def ready_naming_the_store() -> bool:
        resp = watcher.get("/readyz")
        return resp.status_code == 200 and any("store" in r for r in resp.json()["reasons"])

    wait_for(ready_naming_the_store, timeout=10, what="/readyz: 200 naming the store")
    # The API keeps answering from the last snapshot, flagged (by each worker once it has
    # tried the store itself).
    resp = wait_for(
        lambda: (r := watcher.get("/api/v1/nodes")).headers.get("X-Ballast-Store") and r,
        timeout=10,
        what="an answer flagged with the store's state",
    )
    assert resp.status_code == 200 and set(NODES) <= set(resp.json()["nodes"])
    assert "unavailable" in resp.headers["X-Ballast-Store"]
    assert watcher.get("/watcher").status_code == 200
    # The last copy of the profiles, flagged, never a 503 (the chaos suite counted them).
    for _ in range(10):
        resp = watcher.get("/api/v1/workloads")
        assert resp.status_code == 200, resp.text
    # The poller logs its first store failure once, from a poll or from a lock renewal.
    wait_for(
        lambda: re.search(r"watcher\.poller: .*redis", watcher.log_path.read_text()),
        timeout=15,
        what="the poller to hit the outage",
    )
    assert watcher.proc.poll() is None, watcher.log()

    redis.start()  # same port, empty: the poller's in-memory window refills it
    wait_for(lambda: not watcher.json("/readyz")["reasons"], timeout=40, what="the store back")
    # Each gunicorn worker may still answer from its own last copy until the poller's first
    # save after the restart, so wait for an answer that comes from that save.
    status = wait_for(
        lambda: (s := watcher.status())["counters"]["storeErrors"] >= 1 and s,
        timeout=20,
        what="the failed polls counted in a new snapshot",
    )
    assert status["store"]["ok"] is True
    before = status["lastPoll"]["time"]
    wait_for(lambda: last_poll_time(watcher) > before, timeout=10, what="polls to go on")
    nodes = watcher.json("/api/v1/nodes")["nodes"]
    assert nodes["redis-a"]["state"] == "fresh"
    assert nodes["redis-a"]["metrics"]["memory"]["count"] >= 3  # the window survived


def test_a_backed_off_poller_writes_soon_after_the_store_returns(
    prometheus, make_redis, make_watcher
):
    """The poller's pause doubles with each failed poll (1, 2, 4, 8, 16 s at a 1 s interval);
    a lock renewal that goes through ends it, so writes resume within about a renewal
    interval of the store's return, not when the pause runs out (chaos's sentinel failover
    measured the difference)."""
    redis = make_redis()
    watcher = make_watcher(prometheus.url, redis.url, workers=1, lock_ttl=3.0)
    watcher.wait_nodes(list(NODES))
    redis.stop()
    # Each pause runs from a failed attempt and the first tick after it tries again, so the
    # attempts come 0, 2, 5, 10, 19 and 36 s after the first, itself within a tick of the stop.
    # Back at 23 s, the store has 13 s or more of a pause to wait out.
    time.sleep(23)
    back = time.time()
    redis.start()
    wait_for(lambda: last_poll_time(watcher) > back, timeout=40, what="a poll after the return")
    resumed_after = last_poll_time(watcher) - back
    # A renewal every lock_ttl / 3 = 1 s, then the next tick: about 2 s.
    assert resumed_after < 6, resumed_after


def test_two_replicas_one_poller_and_takeover(prometheus, redis_server, make_watcher):
    shared = {"key_prefix": prefix(), "lock_ttl": 3.0}
    first = make_watcher(prometheus.url, redis_server.url, workers=2, **shared)
    second = make_watcher(prometheus.url, redis_server.url, workers=2, **shared)
    first.wait_nodes(list(NODES))

    def leaders() -> list:
        return [w for w in (first, second) if w.status()["poller"]["leading"]]

    wait_for(lambda: len(leaders()) == 1, timeout=10, what="exactly one leader")
    active = leaders()[0]
    standby = second if active is first else first
    holder = active.status()["poller"]["self"]
    for _ in range(10):  # over a few polls the lock never moves and never doubles
        statuses = [w.status() for w in (first, second)]
        assert [s["poller"]["leading"] for s in statuses].count(True) == 1
        assert all(s["poller"]["leader"] == holder for s in statuses)
        assert statuses[0]["snapshot"]["version"].startswith(holder)
        time.sleep(0.3)
    # Both replicas serve the same data.
    assert (
        standby.json("/api/v1/nodes")["nodes"].keys()
        == active.json("/api/v1/nodes")["nodes"].keys()
    )
    count_before = standby.json("/api/v1/nodes/redis-a")["metrics"]["memory"]["count"]

    active.kill()  # no clean release: the lock must expire
    # The standby must take over once the dead holder's lock expires (TTL plus a poll or two).
    wait_for(
        lambda: standby.status()["poller"]["leading"],
        timeout=shared["lock_ttl"] + 5,
        what="takeover within the lock's TTL",
    )
    before = last_poll_time(standby)
    wait_for(lambda: last_poll_time(standby) > before, timeout=10, what="the new poller")
    node = standby.json("/api/v1/nodes/redis-a")
    assert node["state"] == "fresh"
    # The new poller continued the stored window instead of starting an empty one.
    assert node["metrics"]["memory"]["count"] >= count_before


def test_keys_use_the_prefix_and_expire(prometheus, redis_server, redis_client, make_watcher):
    key_prefix = prefix()
    watcher = make_watcher(prometheus.url, redis_server.url, key_prefix=key_prefix, window=5.0)
    watcher.wait_nodes(list(NODES))
    keys = [k.decode() for k in redis_client.keys("*")]
    assert keys and all(k.startswith(key_prefix) for k in keys)
    frames = [k for k in keys if ":frame:" in k]
    assert frames
    for key in frames + [f"{key_prefix}snapshot", f"{key_prefix}frames"]:
        ttl = redis_client.pttl(key)
        assert 0 < ttl <= (2 * (5.0 + 60)) * 1000, (key, ttl)


def test_frames_past_the_retention_leave_the_index(redis_server, redis_client):
    """A save drops index entries older than window + slack, so removed data disappears."""
    store = RedisStore(redis_server.url, prefix(), window=5.0)
    now = time.time()
    old = Frame.build(now - 600, {"cpu": {"n1": 10.0}})
    recent = Frame.build(now - 1, {"cpu": {"n1": 20.0}})
    store.save([old], b"{}", "v1")
    index = f"{store.keys.frames}"
    assert [f for f, _ in redis_client.zrange(index, 0, -1, withscores=True)] == [
        old.frame_id.encode()
    ]
    store.save([recent], b"{}", "v2")
    assert [f for f, _ in redis_client.zrange(index, 0, -1, withscores=True)] == [
        recent.frame_id.encode()
    ]
    assert [f.time for f in store.load_frames(now - 300)] == [recent.time]
