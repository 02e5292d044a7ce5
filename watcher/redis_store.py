"""All of the watcher's Redis access. Key names come from watcher/keys.py."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from watcher import defaults
from watcher.errors import StoreError
from watcher.keys import Keys
from watcher.window import Frame

# Take the lock if free, renew it if ours; atomic so two replicas never both hold it.
_LEAD = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}  # scheme -> TLS
# Query parameters of a Redis URL (docs/deploy.md): TLS files and checks, and the Sentinels' own
# credentials when they require some (the URL's user:password are the data nodes').
TLS_OPTIONS = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs", "ssl_check_hostname")
SENTINEL_OPTIONS = ("sentinel_username", "sentinel_password")


def _common() -> dict[str, Any]:
    return {
        "socket_timeout": defaults.REDIS_TIMEOUT,
        "socket_connect_timeout": defaults.REDIS_TIMEOUT,
        # redis-py retries 10 times with backoff by default (4.5 s for a refused connection):
        # fail fast instead, after one immediate retry that replaces a pooled connection broken
        # by a Redis restart (or, through Sentinel, asks again which node is the master). The
        # poller has its own backoff.
        "retry": Retry(NoBackoff(), 1),
    }


def _tls(query: dict[str, str]) -> dict[str, Any]:
    tls: dict[str, Any] = {"ssl": True}
    for key in TLS_OPTIONS:
        if key in query:
            value = query[key]
            tls[key] = (
                value.lower() in ("1", "true", "yes") if key == "ssl_check_hostname" else value
            )
    return tls


def sentinel_client(url: str) -> redis.Redis:
    """`redis+sentinel://[user:password@]host:port[,host:port...]/master-name[/db][?options]`
    (`rediss+sentinel://` for TLS to the Sentinels and the data nodes): a client that asks the
    Sentinels for the master, and again after a failover."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    sentinels = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"sentinel address {item!r} is not host:port")
        sentinels.append((host.strip("[]"), int(port)))
    path = [unquote(p) for p in parts.path.split("/") if p]
    if not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ValueError("the path must be /master-name or /master-name/db")
    query = dict(parse_qsl(parts.query))
    unknown = set(query) - set(TLS_OPTIONS) - set(SENTINEL_OPTIONS)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))}")
    tls = _tls(query) if SENTINEL_SCHEMES[parts.scheme] else {}
    to_sentinels = {**_common(), **tls}
    if "sentinel_password" in query:
        to_sentinels["password"] = query["sentinel_password"]
        to_sentinels["username"] = query.get("sentinel_username")
    manager = Sentinel(sentinels, sentinel_kwargs=to_sentinels, **_common())
    return manager.master_for(
        path[0],
        db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None,
        password=unquote(password) or None,
        **tls,
    )


def client_for(url: str) -> redis.Redis:
    """A client for `url`: `redis://`, `rediss://` (TLS), `unix://`, or Sentinel (above).
    ACL credentials go in the URL as user:password@ (a password alone for `requirepass`)."""
    scheme = url.partition("://")[0]
    if scheme in SENTINEL_SCHEMES:
        return sentinel_client(url)
    return redis.Redis.from_url(url, **_common())


def redact(url: str) -> str:
    """`url` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


class RedisStore:
    kind = "redis"

    def __init__(self, url: str, prefix: str, window: float) -> None:
        try:
            self.client = client_for(url)
        except (ValueError, KeyError) as exc:
            raise StoreError(f"bad redis URL {redact(url)!r}: {exc}") from exc
        self.keys = Keys(prefix)
        self.window = window
        # Data outlives the window a little so a replica taking over still finds a full window.
        self.keep_ms = int((window + 60) * 1000)
        self._lead = self.client.register_script(_LEAD)
        self._release = self.client.register_script(_RELEASE)

    def _do(self, what: str, call):  # noqa: ANN001 (a zero-argument callable)
        try:
            return call()
        except redis.RedisError as exc:
            raise StoreError(f"redis {what}: {exc}") from exc

    def ping(self) -> None:
        self._do("ping", self.client.ping)

    def save(self, frames: list[Frame], snapshot: bytes, version: str) -> None:
        pipe = self.client.pipeline(transaction=False)
        for frame in frames:
            pipe.set(self.keys.frame(frame.frame_id), frame.encode(), px=self.keep_ms)
            pipe.zadd(self.keys.frames, {frame.frame_id: frame.time})
        if frames:
            newest = frames[-1].time
            pipe.zremrangebyscore(self.keys.frames, "-inf", newest - self.keep_ms / 1000)
            pipe.pexpire(self.keys.frames, self.keep_ms)
        pipe.set(self.keys.snapshot, snapshot, px=2 * self.keep_ms)
        pipe.set(self.keys.version, version, px=2 * self.keep_ms)
        self._do("save", pipe.execute)

    def load_frames(self, since: float) -> list[Frame]:
        ids = self._do(
            "frame index", lambda: self.client.zrangebyscore(self.keys.frames, since, "+inf")
        )
        if not ids:
            return []
        blobs = self._do(
            "frames", lambda: self.client.mget([self.keys.frame(i.decode()) for i in ids])
        )
        return [Frame.decode(b) for b in blobs if b is not None]

    def snapshot_version(self) -> str | None:
        value = self._do("version", lambda: self.client.get(self.keys.version))
        return value.decode() if value is not None else None

    def load_snapshot(self) -> bytes | None:
        return self._do("snapshot", lambda: self.client.get(self.keys.snapshot))

    def save_workloads(self, doc: bytes, rings: dict[str, bytes] | None, keep: float) -> None:
        pipe = self.client.pipeline(transaction=True)
        keep = max(self.keep_ms, int(keep * 1000))
        pipe.set(self.keys.workloads, doc, px=keep)
        if rings is not None:
            pipe.delete(self.keys.workload_rings)
            if rings:
                pipe.hset(self.keys.workload_rings, mapping=rings)
                pipe.pexpire(self.keys.workload_rings, keep)
        self._do("save workloads", pipe.execute)

    def load_workloads(self) -> tuple[bytes | None, dict[str, bytes]]:
        doc = self.workloads_doc()
        rings = self._do("workload rings", lambda: self.client.hgetall(self.keys.workload_rings))
        return doc, {k.decode(): v for k, v in rings.items()}

    def workloads_doc(self) -> bytes | None:
        return self._do("workloads", lambda: self.client.get(self.keys.workloads))

    def save_pods(self, doc: bytes, rows: bytes | None, keep: float) -> None:
        pipe = self.client.pipeline(transaction=True)
        keep_ms = max(self.keep_ms, int(keep * 1000))
        pipe.set(self.keys.pods, doc, px=keep_ms)
        if rows is not None:
            pipe.set(self.keys.pod_rows, rows, px=keep_ms)
        self._do("save pods", pipe.execute)

    def load_pods(self) -> tuple[bytes | None, bytes | None]:
        doc = self.pods_doc()
        return doc, self._do("pod rows", lambda: self.client.get(self.keys.pod_rows))

    def pods_doc(self) -> bytes | None:
        return self._do("pods", lambda: self.client.get(self.keys.pods))

    def save_workload_history(self, rows: bytes, keep: float) -> None:
        keep_ms = max(self.keep_ms, int(keep * 1000))
        self._do(
            "save workload history",
            lambda: self.client.set(self.keys.workload_history, rows, px=keep_ms),
        )

    def load_workload_history(self) -> bytes | None:
        return self._do("workload history", lambda: self.client.get(self.keys.workload_history))

    def save_gpus(self, doc: bytes, keep: float) -> None:
        keep_ms = max(1, int(keep * 1000))
        self._do("save gpus", lambda: self.client.set(self.keys.gpus, doc, px=keep_ms))

    def gpus_doc(self) -> bytes | None:
        return self._do("gpus", lambda: self.client.get(self.keys.gpus))

    def lead(self, holder: str, ttl: float) -> bool:
        ms = max(1, int(ttl * 1000))
        return bool(self._do("lock", lambda: self._lead(keys=[self.keys.lock], args=[holder, ms])))

    def leader(self) -> str | None:
        value = self._do("lock holder", lambda: self.client.get(self.keys.lock))
        return value.decode() if value is not None else None

    def release(self, holder: str) -> None:
        self._do("unlock", lambda: self._release(keys=[self.keys.lock], args=[holder]))

    def close(self) -> None:
        self.client.close()
