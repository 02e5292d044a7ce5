"""A `helm upgrade` that changes Redis' password, as the chart's checksums roll it out: Redis
restarts with the new password (same Service, so the same address), the running watchers lose
their store and keep serving what they hold (ready, flagged), and the watchers started with the
new password serve fresh data. Real redis-server and watchers; Redis as the chart runs it
(`--requirepass`, no persistence)."""

from __future__ import annotations

from tests.fixtures.ports import free_port, wait_for
from tests.fixtures.redis import RedisServer

NODES = {"rollout-a": (30.0, 40.0), "rollout-b": (55.0, 20.0)}
CHART_ARGS = ("--save", "", "--appendonly", "no", "--maxmemory-policy", "volatile-ttl")


def url(password: str, port: int) -> str:
    return f"redis://:{password}@127.0.0.1:{port}/0"


def test_a_new_redis_password_keeps_the_watchers_serving(
    exporter, prometheus, make_watcher, tmp_path
):
    for node, (cpu, memory) in NODES.items():
        exporter.set(node, cpu=cpu, memory=memory)
    port = free_port()
    old = RedisServer(
        tmp_path / "old",
        port=port,
        args=(*CHART_ARGS, "--requirepass", "first"),
        user=("default", "first"),
    )
    old.start()
    try:
        before = make_watcher(prometheus.url, url("first", port), workers=2, key_prefix="rollout:")
        before.wait_nodes(list(NODES))
    finally:
        old.stop()
    # The StatefulSet's new pod: the same address, the new password, nothing kept.
    new = RedisServer(
        tmp_path / "new",
        port=port,
        args=(*CHART_ARGS, "--requirepass", "second"),
        user=("default", "second"),
    )
    new.start()
    try:
        # The old watchers cannot log in: they stay ready and answer from their last copy.
        def held() -> bool:
            resp = before.get("/api/v1/nodes")
            return "unavailable" in resp.headers.get("X-Ballast-Store", "") and resp.ok

        wait_for(held, timeout=20, what="the old watchers flagging their held copy")
        assert set(NODES) <= set(before.get("/api/v1/nodes").json()["nodes"])
        assert before.get("/readyz").status_code == 200
        # The new watchers (new pods, the new password from the Secret) serve fresh data.
        after = make_watcher(prometheus.url, url("second", port), workers=2, key_prefix="rollout:")
        nodes = after.wait_nodes(list(NODES))
        assert abs(nodes["rollout-a"]["metrics"]["cpu"]["latest"] - 30.0) < 1.0
        assert "X-Ballast-Store" not in after.get("/api/v1/nodes").headers
    finally:
        new.stop()
