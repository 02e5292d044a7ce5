"""The watcher's HTTP API (docs/api.md): load-watcher's /watcher and Ballast's /api/v1."""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask, Response, g, request, send_from_directory
from werkzeug.exceptions import HTTPException

from shared import wire
from watcher import decisions_proxy, health, openapi, podstats, selfmetrics, workloadhistory
from watcher import gpus as gpu_view
from watcher.config import Config
from watcher.errors import StoreError
from watcher.store import Store
from watcher.views import SnapshotReader, View
from watcher.window import Window

log = logging.getLogger(__name__)
DASHBOARD = Path(__file__).parent / "dashboard"
OPEN_PATHS = ("/healthz", "/readyz", "/metrics", "/openapi.json")
GZIP_MIN = 1024
# The API reads no request body; this much is tolerated from clients that send one anyway.
MAX_BODY = 1024


class Body:
    """A rendered answer with its ETag; the gzipped form is made once, on first demand."""

    def __init__(self, data: bytes, mimetype: str = "application/json") -> None:
        self.data = data
        self.mimetype = mimetype
        self.etag = '"' + hashlib.blake2b(data, digest_size=12).hexdigest() + '"'
        self._gz: bytes | None = None

    def gzipped(self) -> bytes:
        if self._gz is None:
            self._gz = gzip.compress(self.data, compresslevel=5)
        return self._gz


class BodyCache:
    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[tuple, Body] = OrderedDict()

    def get(self, key: tuple, render) -> Body:  # noqa: ANN001 (() -> bytes)
        body = self._items.get(key)
        if body is None:
            body = Body(render())
            self._items[key] = body
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return body


class WorkloadsReader:
    """The stored profiles document, re-read at most every `every` seconds (0: each time, for
    the in-process store whose read is free). While the store is unreachable the last copy is
    served, `store_error` saying why, as the node snapshot is: the schedulers fetch profiles
    every few seconds, and a store failover must not turn those fetches into 503s."""

    def __init__(
        self, store: Store, every: float, read: Callable[[], bytes | None] | None = None
    ) -> None:
        self.store = store
        self.every = every
        self.read = read or store.workloads_doc  # the GPU document is read the same way
        self.store_error: str | None = None
        self._at = -math.inf
        self._raw: bytes | None = None
        self._parsed: tuple[Body, dict[str, Any]] | tuple[None, None] = (None, None)
        self._lock = threading.Lock()

    def keep_fresh(self, interval: float) -> threading.Thread:
        """Re-read every `interval` seconds on a daemon thread, requests or not, so that a
        worker that served no profile request before the store went away still has a copy."""

        def loop() -> None:
            while True:
                time.sleep(interval)
                self.refresh()

        self.refresh()  # before the worker serves, as the snapshot's first read
        thread = threading.Thread(target=loop, name="workloads-refresh", daemon=True)
        thread.start()
        return thread

    def refresh(self) -> None:
        try:
            self.get()
        except StoreError:
            pass  # no copy yet; the next round tries again

    def get(self) -> tuple[Body, dict[str, Any]] | tuple[None, None]:
        with self._lock:
            if time.monotonic() - self._at < self.every:
                return self._parsed
            try:
                raw = self.read()
            except StoreError as exc:
                if self._raw is None:
                    raise
                self._at = time.monotonic()
                self.store_error = str(exc)
                return self._parsed
            self.store_error = None
            self._at = time.monotonic()
            if raw != self._raw:
                self._raw = raw
                self._parsed = (Body(raw), json.loads(raw)) if raw else (None, None)
            return self._parsed


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def error(status: int, message: str) -> Response:
    return Response(dumps({"error": message}), status=status, mimetype="application/json")


def create_app(
    config: Config,
    store: Store,
    holder: str,
    poller: Any = None,
    figures: Callable[[], dict[str, Any] | None] | None = None,
    seated: Callable[[], float | None] = lambda: None,
) -> Flask:
    """`poller` is given when it runs in this process (memory store), for its live status;
    `figures` reads what this replica's poller did when it runs in another process; `seated`,
    when the replica's poller seat was taken (None: not held), for /healthz."""
    app = Flask("watcher")
    reader = SnapshotReader(store, config.snapshot_check if store.kind == "redis" else 0.0)
    if store.kind == "redis":
        reader.keep_fresh(max(1.0, config.snapshot_check))
    cache = BodyCache()
    interval = config.poll_interval
    wedged_after = health.wedge_limit(interval, config.provider_timeout)
    if poller is not None:
        figures = lambda: selfmetrics.poller_figures(poller)  # noqa: E731
    collector = selfmetrics.ReplicaCollector(reader, figures or (lambda: None))
    origins = set(config.cors_origins)
    app.extensions["ballast_reader"] = reader
    spec = dumps(
        openapi.document(
            [m.key for m in config.metric_specs()],
            guarded=bool(config.api_token),
            open_paths=tuple(config.api_open_paths),
        )
    )

    def send(body: Body, status: int = 200) -> Response:
        if request.if_none_match.contains_weak(body.etag.strip('"')):
            resp = Response(status=304)
        elif "gzip" in request.headers.get("Accept-Encoding", "") and len(body.data) > GZIP_MIN:
            resp = Response(body.gzipped(), status=status, mimetype=body.mimetype)
            resp.headers["Content-Encoding"] = "gzip"
        else:
            resp = Response(body.data, status=status, mimetype=body.mimetype)
        resp.headers["ETag"] = body.etag
        resp.headers["Vary"] = "Accept-Encoding"
        if reader.store_error:
            resp.headers["X-Ballast-Store"] = "unavailable; serving the last snapshot"
        view = reader.view
        if view is not None and request.path.startswith(("/watcher", "/api/v1/nodes")):
            if mark := health.stale_mark(view, time.time(), interval):
                resp.headers["X-Ballast-Stale"] = mark
        return resp

    def current() -> View | None:
        return reader.get()

    def no_data() -> Response:
        why = reader.store_error or current_poll_error() or "no successful poll yet"
        status = 503 if reader.store_error and reader.view is None else 500
        return error(status, f"no metrics yet: {why}")

    def current_poll_error() -> str | None:
        view = reader.view
        return view.last_poll.get("error") if view is not None else None

    @app.before_request
    def before() -> Response | None:
        g.started = time.perf_counter()
        if (request.content_length or 0) > MAX_BODY or "chunked" in request.headers.get(
            "Transfer-Encoding", ""
        ).lower():
            resp = error(413, f"request body over {MAX_BODY} bytes; this API reads none")
            resp.headers["Connection"] = "close"  # the unread body must not be parsed as a request
            return resp
        if request.method == "OPTIONS" and request.url_rule is not None:
            resp = Response(status=204)  # CORS preflight, answered before the token check
            resp.headers["Allow"] = ", ".join(sorted(request.url_rule.methods or ()))
            return resp
        if config.api_token and not _open(request.path, config.api_open_paths):
            header = request.headers.get("Authorization", "")
            scheme, _, given = header.partition(" ")
            if scheme.lower() != "bearer":  # schemes are case-insensitive (RFC 9110 11.1)
                given = ""
            if not hmac.compare_digest(given.encode(), config.api_token.encode()):
                resp = error(401, "missing or wrong bearer token")
                resp.headers["WWW-Authenticate"] = 'Bearer realm="ballast-watcher"'
                return resp
        return None

    @app.after_request
    def after(resp: Response) -> Response:
        origin = request.headers.get("Origin")
        if origin and ("*" in origins or origin in origins):
            resp.headers["Access-Control-Allow-Origin"] = "*" if "*" in origins else origin
            resp.headers["Access-Control-Allow-Headers"] = "Authorization, If-None-Match"
            resp.headers["Access-Control-Allow-Methods"] = "GET, OPTIONS"
            resp.headers["Access-Control-Expose-Headers"] = "ETag"
            resp.vary.add("Origin")
        rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
        selfmetrics.REQUEST_SECONDS.labels(rule).observe(time.perf_counter() - g.started)
        return resp

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        resp = error(exc.code or 500, exc.description or exc.name)
        for name, value in exc.get_headers():
            if name.lower() != "content-type":
                resp.headers[name] = value  # Allow on 405, as RFC 9110 requires
        return resp

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unexpected error answering %s", request.path)
        return error(500, f"internal error: {type(exc).__name__}")

    # -- load-watcher compatible --------------------------------------------------------------
    @app.get("/watcher")
    def watcher() -> Response:
        asked = request.args.get("operators")
        try:
            operators = wire.parse_operators(asked) if asked is not None else None
        except wire.WireFormatError as exc:
            return error(400, str(exc))
        view = current()
        if view is None or not view.has_data:
            return no_data()
        now = time.time()
        host = request.args.get("host") or None
        if host is None:
            key = ("watcher", view.version, view.expired_count(now), operators)
            return send(cache.get(key, lambda: dumps(view.envelope(now, None, operators))))
        doc = view.envelope(now, host, operators)
        if doc is None:
            return Response(
                f"metrics for node {host} not found\n", status=404, mimetype="text/plain"
            )
        return send(Body(dumps(doc)))

    @app.get("/watcher/health")
    def watcher_health() -> Response:
        view = current()
        healthy = view is not None and bool(view.last_poll.get("ok"))
        return Response(status=200 if healthy else 503)

    # -- /api/v1 ------------------------------------------------------------------------------
    @app.get("/api/v1/nodes")
    def nodes() -> Response:
        view = current()
        if view is None:
            return no_data()
        now = time.time()
        key = ("nodes", view.version, int(now * 2))  # ages move; half a second is close enough
        return send(cache.get(key, lambda: view.nodes_json(now)))

    @app.get("/api/v1/nodes/<node>")
    def node(node: str) -> Response:
        view = current()
        if view is None:
            return no_data()
        doc = view.node(node, time.time())
        if doc is None:
            return error(404, f"no metrics for node {node!r}")
        return send(Body(dumps(doc)))

    @app.get("/api/v1/nodes/<node>/samples")
    def samples(node: str) -> Response:
        view = current()
        if view is None:
            return no_data()
        metric = request.args.get("metric", "cpu")
        if metric not in view.metrics:
            return error(400, f"unknown metric {metric!r}; known: {', '.join(view.metrics)}")
        if node not in view.nodes:
            return error(404, f"no metrics for node {node!r}")
        window = Window(view.window)
        try:
            for frame in store.load_frames(time.time() - view.window):
                window.add(frame)
        except StoreError as exc:
            return error(503, str(exc))
        data = [[t, round(v, 3)] for t, v in window.samples(metric, node)]
        return send(Body(dumps({"node": node, "metric": metric, "samples": data})))

    workloads = WorkloadsReader(store, config.snapshot_check if store.kind == "redis" else 0.0)
    if store.kind == "redis":
        workloads.keep_fresh(max(1.0, config.snapshot_check))

    def flagged(resp: Response, reader: WorkloadsReader = workloads) -> Response:
        if reader.store_error:
            resp.headers["X-Ballast-Store"] = "unavailable; serving the last copy"
        return resp

    @app.get("/api/v1/workloads")
    def workload_list() -> Response:
        try:
            body, doc = workloads.get()
        except StoreError as exc:
            return error(503, str(exc))
        if doc is None:
            return error(404, "no workload profiles yet: pod usage is off or not polled yet")
        namespace = request.args.get("namespace")
        if not namespace:
            return flagged(send(body))
        items = doc.get("workloads") or {}
        picked = {k: w for k, w in items.items() if w.get("namespace") == namespace}
        return flagged(send(Body(dumps({**doc, "workloads": picked}))))

    @app.get("/api/v1/workloads/<namespace>/<kind>/<name>")
    def workload(namespace: str, kind: str, name: str) -> Response:
        try:
            _, doc = workloads.get()
        except StoreError as exc:
            return error(503, str(exc))
        found = ((doc or {}).get("workloads") or {}).get(f"{namespace}/{kind}/{name}")
        if found is None:
            return error(404, f"no profile for {kind} {namespace}/{name}")
        return flagged(send(Body(dumps(found))))

    pod_stats = WorkloadsReader(
        store, config.snapshot_check if store.kind == "redis" else 0.0, store.pods_doc
    )
    if store.kind == "redis":
        pod_stats.keep_fresh(max(1.0, config.snapshot_check))

    @app.get("/api/v1/pods")
    def pod_list() -> Response:
        try:
            body, doc = pod_stats.get()
        except StoreError as exc:
            return error(503, str(exc))
        if doc is None:
            return error(404, "no pod statistics yet: pod usage is off or not polled yet")
        namespace = request.args.get("namespace")
        if namespace:
            found = podstats.in_namespace(doc, namespace)
            history = doc.get("workloadHistory")
            if isinstance(history, dict):
                found["workloadHistory"] = workloadhistory.in_namespace(history, namespace)
            body = Body(dumps(found))
        return flagged(send(body), pod_stats)

    gpus = WorkloadsReader(
        store, config.snapshot_check if store.kind == "redis" else 0.0, store.gpus_doc
    )

    def gpu_answer(node: str | None) -> Response:
        try:
            _, doc = gpus.get()
        except StoreError as exc:
            return error(503, str(exc))
        if doc is None:
            return error(404, "no GPU data: GPU metrics off or not polled yet")
        if node is not None and node not in (doc.get("nodes") or {}):
            return error(404, f"no GPU data for node {node!r}")
        resp = send(Body(dumps(gpu_view.with_state(doc, time.time(), node))))
        if gpus.store_error:
            resp.headers["X-Ballast-Store"] = "unavailable; serving the last copy"
        return resp

    @app.get("/api/v1/gpus")
    def gpu_list() -> Response:
        return gpu_answer(None)

    @app.get("/api/v1/nodes/<node>/gpus")
    def node_gpus(node: str) -> Response:
        return gpu_answer(node)

    @app.get("/api/v1/status")
    def status() -> Response:
        return Response(dumps(status_doc()), mimetype="application/json")

    def status_doc() -> dict[str, Any]:
        view = current()
        try:
            leader = store.leader()
            store_ok, store_err = reader.store_error is None, reader.store_error
        except StoreError as exc:
            leader, store_ok, store_err = None, False, str(exc)
        leading = poller.leading if poller is not None else leader == holder
        doc: dict[str, Any] = {
            "source": config.source,
            "store": {"kind": store.kind, "ok": store_ok, "error": store_err},
            "poller": {"self": holder, "leader": leader, "leading": leading},
            "provider": None,
            "snapshot": None,
        }
        if view is not None:
            last = view.last_poll
            doc["provider"] = {"ok": bool(last.get("ok")), "error": last.get("error")}
            doc["lastPoll"] = last
            doc["lastSuccess"] = view.doc.get("lastSuccess")
            doc["counters"] = view.doc.get("counters")
            doc["snapshot"] = {"version": view.version, "built": view.doc["built"]}
            doc["nodes"] = view.states(time.time())
            doc["dataAge"] = round(health.data_age(view, time.time()), 3)
        ready, reasons = health.readiness(view, reader.store_error, time.time(), interval)
        doc["serving"] = {"ready": ready, "reasons": reasons}
        return doc

    # -- the scheduler's decisions, for the dashboard (watcher/decisions_proxy.py) ---------------
    @app.get("/api/v1/scheduler/decisions")
    def decisions() -> Response:
        status, body = decisions_proxy.forward(config, None, request.query_string)
        return Response(body, status=status, mimetype="application/json")

    @app.get("/api/v1/scheduler/decisions/<namespace>/<pod>")
    def decision(namespace: str, pod: str) -> Response:
        status, body = decisions_proxy.forward(config, (namespace, pod), request.query_string)
        return Response(body, status=status, mimetype="application/json")

    # -- the rebalancer's rounds and decisions, for the dashboard (the same proxy) --------------
    @app.get("/api/v1/rebalancer/status")
    def rebalancer_status() -> Response:
        return rebalancer("/status")

    @app.get("/api/v1/rebalancer/decisions")
    def rebalancer_decisions() -> Response:
        return rebalancer("/decisions")

    def rebalancer(path: str) -> Response:
        target = decisions_proxy.rebalancer(config)
        status, body = decisions_proxy.fetch(target, path, request.query_string)
        return Response(body, status=status, mimetype="application/json")

    # -- operations ---------------------------------------------------------------------------
    @app.get("/healthz")
    def healthz() -> Response:
        ticked = health.figures_tick(figures() if figures is not None else None)
        alive, why = health.liveness(seated(), ticked, time.time(), wedged_after)
        body = {"ok": True} if alive else {"ok": False, "reason": why}
        return Response(dumps(body), status=200 if alive else 503, mimetype="application/json")

    @app.get("/readyz")
    def readyz() -> Response:
        ready, reasons = health.readiness(current(), reader.store_error, time.time(), interval)
        body = {"ready": ready, "reasons": reasons}
        return Response(dumps(body), status=200 if ready else 503, mimetype="application/json")

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(selfmetrics.render(collector), mimetype="text/plain; version=0.0.4")

    @app.get("/openapi.json")
    def openapi_json() -> Response:
        return Response(spec, mimetype="application/json")

    @app.get("/")
    def index() -> Response:
        if (DASHBOARD / "index.html").is_file():
            return send_from_directory(DASHBOARD, "index.html")
        return Response(dumps({"see": "/openapi.json"}), mimetype="application/json")

    @app.get("/dashboard/<path:name>")
    def dashboard(name: str) -> Response:
        return send_from_directory(DASHBOARD, name)

    return app


def _open(path: str, extra: list[str]) -> bool:
    """Paths served without a token: probes, self-metrics, and the configured extras (each with
    what lies below it)."""
    if path == "/" or path in OPEN_PATHS:
        return True
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in extra)
