"""The cluster cache: nodes and pods from list+watch, with assumed pods counted at once.

Two reflector threads (nodes, pods) list with pagination, then watch from the list's
resourceVersion with bookmarks. A watch that ends is resumed from the last version seen; a 410
Gone (the version left etcd's history) means list again and reconcile; any other failure
reconnects with jittered exponential backoff. Raw JSON all the way (`_preload_content=False`):
the kubernetes client's model classes cost more than the scheduling itself.

Pods are parsed once (resources.pod_info) when they matter: pending pods of our scheduler names
go to the listener (the queue), bound pods are counted on their node. Status-only updates of a
pod already counted are ignored. A pod that this scheduler assumed counts on its node from the
moment `assume` is called until the watch confirms the binding, or `forget` drops it.

All mutation happens under `lock`; the scheduling cycle holds it while it filters, scores and
assumes, so it sees one consistent cluster without copying it.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol
from urllib.parse import urlencode

import orjson
import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler.framework import NodeInfo, PodInfo, Snapshot, resources
from scheduler.framework.clusterindex import (
    CSI_NODES,
    DEPLOYMENTS,
    NAMESPACES,
    PDBS,
    PVCS,
    PVS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SELECTOR_KINDS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    ClusterIndex,
    object_key,
)
from shared.lifecycle import Lifecycle, gc_paused, join

log = logging.getLogger(__name__)

LIST_PAGE = 500
WATCH_SECONDS = 300  # server-side watch timeout; the client's read timeout is a bit longer
CONNECT_TIMEOUT = 5.0
LIST_TIMEOUT = 60.0
TERMINAL_PHASES = ("Succeeded", "Failed")
ASSUME_GRACE = 30.0  # seconds a binding may take before a re-list may drop its assumption


class Listener(Protocol):
    def pod_pending(self, pod: PodInfo) -> None: ...

    def pod_gone(self, uid: str) -> None: ...

    def pod_bound(self, pod: PodInfo) -> None: ...

    def cluster_changed(self) -> None: ...


def interrupt(resp: Any) -> None:
    """Wake a thread blocked reading a watch stream. Closing the response from another thread
    blocks on the reader's lock; shutting the socket down makes the read return instead."""
    conn = getattr(resp, "connection", None) or getattr(resp, "_connection", None)
    sock = getattr(conn, "sock", None)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def decode(data: bytes) -> Any:
    """One JSON document of a list or watch. orjson parses the bytes as they come, without the
    str copy, in 21 us per 2.6 KB kwok node where json takes 29 us (the lists of 5,000 nodes
    and every pod's watch events go through here); what orjson refuses (invalid
    UTF-8) goes through json as the client's reader would have. The API server writes int64 at
    most, which orjson reads as ints like json does."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data.decode("utf-8", errors="replace"))


def slim(obj: Any) -> Any:
    """Drop what no part of the scheduler reads and every object carries: managedFields, a
    quarter of a bound pod's memory (at 50,000 pods, 280 of 1,110 MB in-process)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def stream_lines(resp: Any) -> Iterator[bytes]:
    """The non-empty lines of a watch stream, as bytes. Split once per chunk: the client's
    iter_resp_lines decodes each line to str and copies the rest of its buffer per line."""
    pending = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        if isinstance(chunk, str):
            chunk = chunk.encode()
        *lines, pending = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
        for line in lines:
            if line:
                yield line
    if pending:
        yield pending


# The generated client's list_* keyword arguments the reflectors use, as query parameters.
_QUERY = {
    "limit": "limit",
    "_continue": "continue",
    "watch": "watch",
    "resource_version": "resourceVersion",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "timeout_seconds": "timeoutSeconds",
}


class RawList:
    """A collection's list and watch as plain GETs through the client's connection pool,
    called as the generated client's list_* methods are (same keyword arguments, the response
    undecoded; an HTTP error raises ApiException). The generated API classes and their pydantic
    models are never imported: that import was about half of the scheduler's start-up CPU."""

    def __init__(self, api: client.ApiClient, path: str) -> None:
        self._api = api
        self.path = path

    def __call__(
        self,
        _preload_content: bool = False,
        _request_timeout: tuple[float, float] = (CONNECT_TIMEOUT, LIST_TIMEOUT),
        **params: Any,
    ) -> Any:
        query = {
            _QUERY[k]: ("true" if v else "false") if isinstance(v, bool) else v
            for k, v in params.items()
            if v is not None
        }
        headers = {**self._api.default_headers, "Accept": "application/json"}
        token = self._api.configuration.auth_settings().get("BearerToken")  # may rotate
        if token and token.get("value"):
            headers[token["key"]] = token["value"]
        url = self._api.configuration.host + self.path
        resp = self._api.rest_client.pool_manager.request(
            "GET",
            f"{url}?{urlencode(query)}" if query else url,
            headers=headers,
            timeout=urllib3.Timeout(connect=_request_timeout[0], read=_request_timeout[1]),
            preload_content=False,
        )
        if not 200 <= resp.status < 300:
            body = resp.data
            resp.release_conn()
            raise ApiException(status=resp.status, reason=f"{resp.reason}: {body[:200]!r}")
        return resp


class Reflector:
    """List then watch one resource kind, feeding `replace` and `event` callbacks."""

    def __init__(
        self,
        kind: str,
        list_fn: Callable[..., Any],
        replace: Callable[[list[dict[str, Any]]], None],
        event: Callable[[str, dict[str, Any]], None],
        max_backoff: float = 30.0,
    ) -> None:
        self.kind = kind
        self._list_fn = list_fn
        self._replace = replace
        self._event = event
        self._max_backoff = max_backoff
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.relists = 0
        self.reconnects = 0
        self._stop = threading.Event()
        self._resp: Any = None
        self._thread = threading.Thread(target=self._run, name=f"reflector-{kind}", daemon=True)
        self._life = Lifecycle(f"reflector-{kind}")

    def start(self) -> None:
        self._life.start(self._thread.start)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()  # first: a list in progress gives up at once
        self._life.stop(lambda: self._halt(timeout), timeout)

    def _halt(self, timeout: float) -> None:
        interrupt(self._resp)
        join(self._thread, timeout)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
                failures = 0
            except ApiException as exc:
                if exc.status == 410:
                    log.info("%s watch: resourceVersion too old, listing again", self.kind)
                    self.resource_version = None
                    continue
                failures += 1
                self._pause(failures, f"HTTP {exc.status} {exc.reason}")
            except Exception as exc:  # noqa: BLE001 - any transport error: reconnect
                if self._stop.is_set():
                    return
                failures += 1
                self._pause(failures, f"{type(exc).__name__}: {exc}")

    def _pause(self, failures: int, why: str) -> None:
        self.reconnects += 1
        delay = min(0.2 * 2 ** min(failures - 1, 10), self._max_backoff)
        delay *= random.uniform(0.8, 1.2)
        log.warning("%s watch failed (%s); retrying in %.1fs", self.kind, why, delay)
        self._stop.wait(delay)

    def _list(self) -> None:
        items: list[dict[str, Any]] = []
        token = None
        while True:
            kwargs: dict[str, Any] = {"limit": LIST_PAGE}
            if token:
                kwargs["_continue"] = token
            resp = self._list_fn(
                _preload_content=False, _request_timeout=(CONNECT_TIMEOUT, LIST_TIMEOUT), **kwargs
            )
            # No collector passes meanwhile: decoded JSON holds no cycles, yet every few
            # hundred new dicts it ran, ever more often over the growing cache (50,000 pods:
            # 5.6 s to decode with it, 0.9 s without).
            with gc_paused():
                doc = decode(resp.data)
                # page by page, so the next page reuses the memory of these managedFields
                items.extend(slim(obj) for obj in doc.get("items") or [])
            meta = doc.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                break
        # What the cache now holds lives long and holds no cycles: out of the collector's
        # sight, so its full passes stop walking every pod and node the cache keeps.
        with gc_paused(freeze=True):
            self._replace(items)
        self.resource_version = meta.get("resourceVersion")
        self.relists += 1
        self.synced.set()

    def _watch(self) -> None:
        resp = self._list_fn(
            watch=True,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_SECONDS,
            _preload_content=False,
            _request_timeout=(CONNECT_TIMEOUT, WATCH_SECONDS + 30),
        )
        self._resp = resp
        try:
            for line in stream_lines(resp):
                if self._stop.is_set():
                    return
                ev = decode(line)
                kind, obj = ev.get("type"), ev.get("object") or {}
                if kind == "ERROR":
                    raise ApiException(status=obj.get("code"), reason=obj.get("message"))
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if kind != "BOOKMARK":
                    self._event(kind, slim(obj))
                if version:
                    self.resource_version = version
        finally:
            self._resp = None
            resp.release_conn()


def _node_signature(node: NodeInfo) -> tuple[Any, ...]:
    """What filters look at: a change here may make a parked pod schedulable."""
    return (
        node.ready,
        node.unschedulable,
        tuple(sorted(node.allocatable.items())),
        tuple(sorted(node.labels.items())),
        json.dumps(node.taints, sort_keys=True),
    )


def _name_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return "(no metadata)"
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _placed_changed(known: PodInfo, meta: dict[str, Any]) -> bool:
    """Whether a placed pod's update changes what the constraint plugins read of it."""
    was_terminating = bool((known.raw.get("metadata") or {}).get("deletionTimestamp"))
    return (meta.get("labels") or {}) != known.labels or was_terminating != bool(
        meta.get("deletionTimestamp")
    )


# Kinds a cache watches only when its owner asks (the scheduler's plugins never read them).
OPTIONAL_PATHS = {DEPLOYMENTS: "/apis/apps/v1/deployments"}


class ClusterCache:
    def __init__(
        self,
        api: client.ApiClient,
        scheduler_names: Iterable[str],
        listener: Listener,
        more_kinds: Iterable[str] = (),
    ) -> None:
        """`more_kinds`: objects beyond the plugins' to list and watch (OPTIONAL_PATHS)."""
        self.lock = threading.RLock()
        self._life = Lifecycle("cache")
        self.nodes: dict[str, NodeInfo] = {}
        self._node_list: list[NodeInfo] | None = None  # nodes' values, until a node changes
        self.scheduler_names = frozenset(scheduler_names)
        self._listener = listener
        self._placed: dict[str, str] = {}  # uid -> node, bound or assumed
        self._assumed: dict[str, str] = {}  # uid -> node, not yet confirmed by the watch
        self._assumed_at: dict[str, float] = {}  # uid -> monotonic time of the assumption
        self._orphans: dict[str, dict[str, PodInfo]] = {}  # pods on a node we do not know
        self._pending: set[str] = set()  # uids handed to the listener as pending
        self._signatures: dict[str, tuple[Any, ...]] = {}
        self.index = ClusterIndex()
        self.index.nodes = self.nodes  # its per-domain counts read the nodes' labels
        self.skipped = 0  # malformed pods and nodes logged and left out
        self.preassigned = 0  # pods of ours that arrived with spec.nodeName already set
        self.gated = 0  # pending pods of ours held back by schedulingGates, as last seen
        self._gated: set[str] = set()
        self.node_reflector = Reflector(
            "nodes", RawList(api, "/api/v1/nodes"), self._replace_nodes, self._node_event
        )
        self.pod_reflector = Reflector(
            "pods", RawList(api, "/api/v1/pods"), self._replace_pods, self._pod_event
        )
        # The objects the constraint plugins read by name. Their lists are not waited for at
        # start: a plugin that needs a kind not yet synced keeps its pod waiting instead.
        object_paths = {
            NAMESPACES: "/api/v1/namespaces",
            PVCS: "/api/v1/persistentvolumeclaims",
            PVS: "/api/v1/persistentvolumes",
            STORAGE_CLASSES: "/apis/storage.k8s.io/v1/storageclasses",
            CSI_NODES: "/apis/storage.k8s.io/v1/csinodes",
            SERVICES: "/api/v1/services",
            REPLICATION_CONTROLLERS: "/api/v1/replicationcontrollers",
            REPLICA_SETS: "/apis/apps/v1/replicasets",
            STATEFUL_SETS: "/apis/apps/v1/statefulsets",
            PDBS: "/apis/policy/v1/poddisruptionbudgets",
            **{kind: OPTIONAL_PATHS[kind] for kind in more_kinds},
        }
        self.object_reflectors = [
            Reflector(
                kind,
                RawList(api, path),
                lambda items, kind=kind: self._replace_objects(kind, items),
                lambda event, obj, kind=kind: self._object_event(kind, event, obj),
            )
            for kind, path in object_paths.items()
        ]

    # --- lifecycle ----------------------------------------------------------------------
    def start(self, abort: threading.Event | None = None) -> None:
        """Start the watches, pods once nodes are listed; returns early when `abort` (or a
        stop) comes meanwhile."""
        self._life.start(lambda: self._start(abort or self._life.stopping))

    def _start(self, abort: threading.Event) -> None:
        for reflector in self.object_reflectors:
            reflector.start()
        self.node_reflector.start()
        # Pods after nodes; in slices, so that a stop meanwhile is not held up by a slow list.
        deadline = time.monotonic() + LIST_TIMEOUT
        while not self.node_reflector.synced.wait(0.1):
            if abort.is_set() or self._life.stopping.is_set():
                return
            if time.monotonic() > deadline:
                break
        self.pod_reflector.start()

    def wait_synced(self, timeout: float) -> bool:
        return self.node_reflector.synced.wait(timeout) and self.pod_reflector.synced.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self._life.stop(lambda: self._stop_reflectors(timeout), timeout)

    def _stop_reflectors(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        self.pod_reflector.stop(timeout)
        self.node_reflector.stop(max(0.0, deadline - time.monotonic()))
        for reflector in self.object_reflectors:
            reflector.stop(max(0.0, deadline - time.monotonic()))

    # --- the cycle's side ---------------------------------------------------------------
    def assume(self, pod: PodInfo, node_name: str) -> bool:
        """Count `pod` on `node_name` now; False when the node vanished meanwhile."""
        with self.lock:
            node = self.nodes.get(node_name)
            if node is None:
                return False
            node.add_pod(pod)
            self.index.add_pod(pod, node_name)
            self._placed[pod.uid] = node_name
            self._assumed[pod.uid] = node_name
            self._assumed_at[pod.uid] = time.monotonic()
            self._pending.discard(pod.uid)
            return True

    def forget(self, pod: PodInfo) -> None:
        """Undo `assume` (the bind failed); a pod the watch already confirmed stays."""
        with self.lock:
            node_name = self._unassume(pod.uid)
            if node_name is None:
                return
            self._unplace(pod.uid)
            self._pending.add(pod.uid)

    def node_list(self) -> list[NodeInfo]:
        """The nodes in the dict's order, as one list kept until a node is added, replaced or
        deleted: a cycle at 5,000 nodes no longer copies them. Under `lock`; never modified."""
        if self._node_list is None:
            self._node_list = list(self.nodes.values())
        return self._node_list

    def is_assumed(self, uid: str) -> bool:
        with self.lock:
            return uid in self._assumed

    def node_of(self, uid: str) -> str | None:
        with self.lock:
            return self._placed.get(uid)

    def stats(self) -> dict[str, int]:
        with self.lock:
            return {
                "nodes": len(self.nodes),
                "placed_pods": len(self._placed),
                "assumed_pods": len(self._assumed),
                "relists": self.node_reflector.relists + self.pod_reflector.relists,
                "gated_pods": self.gated,
                "preassigned_pods": self.preassigned,
                "skipped_objects": self.skipped,
                "reconnects": self.node_reflector.reconnects + self.pod_reflector.reconnects,
            }

    # --- nodes --------------------------------------------------------------------------
    def _replace_nodes(self, items: list[dict[str, Any]]) -> None:
        with self.lock:
            seen = set()
            for obj in items:
                seen.add((obj.get("metadata") or {}).get("name"))
                self._upsert_node(obj)
            for name in list(self.nodes):
                if name not in seen:
                    self._delete_node(name)
        self._listener.cluster_changed()

    def _node_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        with self.lock:
            if kind == "DELETED":
                self._delete_node(name)
                return
            changed = self._upsert_node(obj)
        if changed:
            self._listener.cluster_changed()

    def _upsert_node(self, obj: dict[str, Any]) -> bool:
        try:
            fresh = resources.node_info(obj)
        except ValueError as exc:
            # One bad node must not fail the watch (it would re-list and fail again).
            self.skipped += 1
            log.warning("node %s ignored: %s", _name_of(obj), exc)
            return False
        old = self.nodes.get(fresh.name)
        if old is not None:
            fresh.take_pods_from(old)
        else:
            for pod in self._orphans.pop(fresh.name, {}).values():
                fresh.add_pod(pod)
        self.nodes[fresh.name] = fresh
        self._node_list = None
        if (
            old is None
            or old.labels != fresh.labels
            or old.taints != fresh.taints
            or old.unschedulable != fresh.unschedulable
            or old.ready != fresh.ready
        ):
            self.index.nodes_changed()
        signature = _node_signature(fresh)
        changed = self._signatures.get(fresh.name) != signature
        self._signatures[fresh.name] = signature
        return changed

    def _delete_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        self._node_list = None
        if node is not None:
            self.index.nodes_changed()
        self._signatures.pop(name, None)
        if node is not None and node.pods:
            # Its pods still exist in the API; keep them in case the node comes back.
            self._orphans[name] = dict(node.pods)

    # --- other objects ------------------------------------------------------------------
    def _replace_objects(self, kind: str, items: list[dict[str, Any]]) -> None:
        with self.lock:
            self.index.replace(kind, items)
        self._listener.cluster_changed()

    def _object_event(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        with self.lock:
            if event == "DELETED":
                self.index.drop(kind, key)
            else:
                self.index.put(kind, key, obj)
        # A new PVC, a bound PV or a relabelled namespace may let a parked pod fit.
        if kind not in SELECTOR_KINDS:
            self._listener.cluster_changed()

    # --- pods ---------------------------------------------------------------------------
    def _replace_pods(self, items: list[dict[str, Any]]) -> None:
        seen = set()
        for obj in items:
            seen.add((obj.get("metadata") or {}).get("uid"))
            self._pod_event("LISTED", obj)
        with self.lock:
            # An assumption younger than ASSUME_GRACE may be a bind still in flight; an older one
            # missing from a fresh list belongs to a pod deleted while the watch was down.
            now = time.monotonic()
            gone = [
                uid
                for uid in self._placed
                if uid not in seen
                and (uid not in self._assumed or now - self._assumed_at[uid] > ASSUME_GRACE)
            ]
            for uid in gone:
                self._unassume(uid)
            gone_pending = [uid for uid in self._pending if uid not in seen]
            for uid in [uid for uid in self._gated if uid not in seen]:
                self._ungate(uid)
            for uid in gone:
                self._unplace(uid)
            self._pending.difference_update(gone_pending)
        for uid in gone + gone_pending:
            self._listener.pod_gone(uid)
        if gone:
            self._listener.cluster_changed()

    def _pod_event(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        uid = meta.get("uid", "")
        node_name = spec.get("nodeName") or ""
        phase = (obj.get("status") or {}).get("phase")
        if kind == "DELETED" or phase in TERMINAL_PHASES:
            with self.lock:
                was_placed = self._unplace(uid)
                self._unassume(uid)
                self._pending.discard(uid)
                self._ungate(uid)
            self._listener.pod_gone(uid)
            if was_placed:
                self._listener.cluster_changed()
            return
        if node_name:
            if kind == "ADDED" and spec.get("schedulerName") in self.scheduler_names:
                # Created with spec.nodeName set: upstream's NodeName case, not ours to bind.
                self.preassigned += 1
            if self._placed.get(uid) == node_name:
                if uid not in self._assumed:
                    known = self.index.pods.get(uid)
                    if known is None or not _placed_changed(known, meta):
                        return  # already counted; a status update changes no request
                    # relabelled or terminating: the constraint plugins must see it
                with self.lock:
                    if self._assumed.get(uid) == node_name:
                        # Our own binding confirmed: the assumed copy is already counted.
                        self._unassume(uid)
                        return
            pod = self._parse(obj)  # outside the lock: the cycle may be holding it
            if pod is None:
                return
            with self.lock:
                was_pending = uid in self._pending
                self._pending.discard(uid)
                self._unassume(uid)
                if self._placed.get(uid) not in (None, node_name):
                    self._unplace(uid)
                self._place(pod, node_name)
            if was_pending or pod.scheduler_name in self.scheduler_names:
                self._listener.pod_bound(pod)
            return
        if spec.get("schedulerName", "default-scheduler") not in self.scheduler_names:
            return  # someone else's pod: never touched
        if meta.get("deletionTimestamp"):
            return
        if uid in self._assumed:
            return  # our bind is in flight; the watch has not caught up yet
        if spec.get("schedulingGates"):
            # Upstream's SchedulingGates: the pod waits, silently, until its last gate is
            # removed; that update comes through here again without gates.
            with self.lock:
                self._gated.add(uid)
                self.gated = len(self._gated)
            return
        pod = self._parse(obj)
        if pod is None:
            return
        with self.lock:
            if uid in self._assumed:
                return
            self._ungate(uid)
            self._pending.add(uid)
        self._listener.pod_pending(pod)

    def _parse(self, obj: dict[str, Any]) -> PodInfo | None:
        try:
            return resources.pod_info(obj)
        except ValueError as exc:
            self.skipped += 1
            log.warning("pod %s ignored: %s", _name_of(obj), exc)
            return None

    def _ungate(self, uid: str) -> None:
        if uid in self._gated:
            self._gated.discard(uid)
            self.gated = len(self._gated)

    def _unassume(self, uid: str) -> str | None:
        self._assumed_at.pop(uid, None)
        return self._assumed.pop(uid, None)

    def _place(self, pod: PodInfo, node_name: str) -> None:
        self._placed[pod.uid] = node_name
        self.index.add_pod(pod, node_name)
        node = self.nodes.get(node_name)
        if node is not None:
            node.add_pod(pod)
        else:
            self._orphans.setdefault(node_name, {})[pod.uid] = pod

    def _unplace(self, uid: str) -> bool:
        node_name = self._placed.pop(uid, None)
        if node_name is None:
            return False
        self.index.remove_pod(uid)
        node = self.nodes.get(node_name)
        if node is not None:
            pod = node.pods.get(uid)
            if pod is not None:
                node.remove_pod(pod)
        else:
            orphans = self._orphans.get(node_name)
            if orphans is not None:
                orphans.pop(uid, None)
                if not orphans:
                    del self._orphans[node_name]
        return True


def take_snapshot(cache: Any, loads: dict[str, Any], recent: Any, now: float) -> Snapshot:
    """What a cycle sees, read under the cache's lock (held by the caller), never copied."""
    return Snapshot(
        nodes=cache.nodes,
        loads=loads,
        now=now,
        recent_cpu_m=recent.cpu_by_node(loads, now),
        cluster=cache.index,
    )
