"""Serving: gunicorn workers answer the API; the poller runs once per replica, not per worker.

The poller always runs in a worker, never in gunicorn's master: the master forks, and a fork
beside threads doing network I/O can copy a lock held (watcher/seat.py). With Redis, the worker
holding the replica's poller seat runs it and every worker reads the snapshot from Redis. With
the in-memory store the poller and the API must share one process, so there is one worker (with
threads) and the poller runs inside it.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

from shared import logs
from shared import rundir as rundirs
from shared.lifecycle import SignalLatch
from watcher import providers
from watcher import store as stores
from watcher.config import Config
from watcher.errors import ConfigError
from watcher.nodenames import KubeNodes, NodeNamer
from watcher.poller import Poller
from watcher.seat import PollerSeat, seated_at

log = logging.getLogger(__name__)


def kube_client(config: Config) -> Any:
    """A Kubernetes API client from --kubeconfig or the in-cluster service account, else None."""
    if not config.kubeconfig and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    from kubernetes import client
    from kubernetes import config as kube_config

    if config.kubeconfig:
        return kube_config.new_client_from_config(config_file=config.kubeconfig)
    kube_config.load_incluster_config()
    return client.ApiClient()


def make_poller(config: Config, store: stores.Store, holder: str) -> Poller:
    api = kube_client(config)
    kube = None
    if api is not None and config.map_node_addresses:
        kube = KubeNodes(api, config.kube_refresh, config.provider_timeout)
    provider = providers.create(config, api)
    poller = Poller(config, provider, store, NodeNamer(kube), holder)
    poller.pods = make_pod_poller(config, provider, store, api)
    owners = getattr(poller.pods, "owners", None)  # the pod poller's, shared
    poller.gpus = make_gpu_poller(config, provider, store, poller.namer, owners)
    return poller


def make_gpu_poller(
    config: Config, provider: Any, store: stores.Store, namer: Any, owners: Any = None
) -> Any:
    """GPU windows from dcgm-exporter's series (watcher/gpus.py), or None when turned off or
    when the metrics come from metrics-server (which has no GPU figures)."""
    if not config.gpu_metrics or config.provider != "prometheus":
        return None
    from watcher.gpus import GpuPoller, PrometheusGpus

    source = PrometheusGpus(provider, config.gpu_queries(), config.gpu_node_label, namer)
    return GpuPoller(
        source,
        store,
        config.window,
        config.expiry_seconds,
        config.tolerance,
        config.horizon_bounds,
        owners,
    )


def make_pod_poller(config: Config, provider: Any, store: stores.Store, api: Any) -> Any:
    """Pod usage and workload profiles (watcher/podpoller.py), or None when turned off."""
    if not config.pod_usage:
        return None
    from watcher.owners import PodOwners
    from watcher.podusage import MetricsServerPods, PrometheusPods

    if config.provider == "prometheus":
        source: Any = PrometheusPods(provider, config.pod_queries())
    else:
        source = MetricsServerPods(provider)
    owners = None
    if api is not None:
        owners = PodOwners(
            api, config.kube_refresh, config.provider_timeout, early=4 * config.poll_interval
        )
    return pod_poller(config, source, owners, store)


def pod_poller(config: Config, source: Any, owners: Any, store: stores.Store) -> Any:
    """A pod poller of `source` with the config's windows, history and buckets."""
    from watcher.podpoller import PodPoller

    return PodPoller(
        source,
        owners,
        store,
        config.profile_window,
        config.poll_interval,
        config.max_profiles,
        node_window=config.window,
        half_life=config.pod_history_half_life,
        bucket=config.peak_bucket_seconds,
    )


class ApiWorker(ThreadWorker):
    """gunicorn's gthread worker, but SIGINT and SIGQUIT stop it as SIGTERM does (the master
    still kills it after the grace). gunicorn's own quit raises SystemExit wherever the worker
    happens to be; one that landed in a weakref callback while the worker booted was printed as
    a traceback and lost, and the worker went on to serve."""

    def handle_quit(self, sig: int, frame: Any) -> None:
        self.cfg.worker_int(self)
        self.handle_exit(sig, frame)


class WatcherApplication(BaseApplication):
    def __init__(self, config: Config, rundir: str, latch: SignalLatch | None = None) -> None:
        self.config = config
        self.latch = latch
        self.memory = not config.redis_url
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.rundir = Path(rundir)
        self.poller: Poller | None = None  # this worker's, if it runs the replica's poller
        self.seat: PollerSeat | None = None  # Redis: whether this worker runs the poller
        # Not at module level: prometheus_client picks its multiprocess mode when first imported,
        # which must come after serve() has set PROMETHEUS_MULTIPROC_DIR.
        from watcher import selfmetrics

        # The poller's figures for every worker's /metrics (Redis: they are other processes)
        self.figures = selfmetrics.PollerFile(self.rundir / "poller.json")
        self._stop_export = threading.Event()
        super().__init__()

    def load_config(self) -> None:
        host, port = self.config.listen_address
        settings = {
            "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            "workers": 1 if self.memory else self.config.workers,
            "worker_class": ApiWorker,
            "threads": self.config.threads,
            "timeout": 30,
            "graceful_timeout": 5,
            "keepalive": 5,
            "accesslog": None,
            "loglevel": "warning",
            # JSON logs: gunicorn's own lines too (its access log stays off).
            "logconfig_dict": logs.gunicorn_config(self.config.log_level, self.config.log_format),
            "when_ready": self._when_ready,
            "child_exit": self._child_exit,
            "worker_exit": self._worker_exit,
            "post_worker_init": self._post_worker_init,
        }
        # gunicorn 25.1+ opens a control socket (for `gunicornc`) under $HOME by default; the
        # watcher has no use for it, and in the image (read-only, HOME=/nonexistent) it logged
        # "Control server error: Read-only file system" at every start.
        if "control_socket_disable" in self.cfg.settings:
            settings["control_socket_disable"] = True
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self):  # noqa: ANN201 (a WSGI app) -- runs in each worker
        from watcher.api import create_app

        store = stores.create(self.config)
        if self.memory:
            self.poller = poller = make_poller(self.config, store, self.holder)
            poller.start()
            started = time.time()
            return create_app(self.config, store, self.holder, poller, seated=lambda: started)
        lock = self.rundir / "poller.lock"
        self.seat = PollerSeat(lock, self._run_poller)
        self.seat.start()
        return create_app(self.config, store, self.holder, figures=self.figures.read,
                          seated=lambda: seated_at(lock))  # fmt: skip

    def _run_poller(self) -> None:
        # Its own store (own connections): the API's threads never wait behind a poll.
        poller = make_poller(self.config, stores.create(self.config), self.holder)
        try:
            poller.start()
        except Exception:
            poller.stop()  # what did start (a scheduler thread) goes with the seat
            raise
        self.poller = poller
        self.figures.export(poller, self._stop_export)

    def _when_ready(self, server: Any) -> None:
        if self.latch is not None and self.latch.received is not None:
            # A signal came before gunicorn's handlers existed: hand it to them, start nothing.
            self.latch.replay()
            return
        log.warning("ballast watcher listening on %s (%s store)", self.config.listen,
                    "memory" if self.memory else "redis")  # fmt: skip

    def _post_worker_init(self, worker: Any) -> None:
        # A worker that boots while the store is away has nothing to serve (503) until it
        # comes back; this line tells an operator (and the tests) when each worker started.
        log.info("API worker %d serving", worker.pid)

    def _worker_exit(self, server: Any, worker: Any) -> None:
        # In the worker: its poller's jobs must end before the interpreter does, and the lease
        # is handed back before the seat, so the next worker's poller takes over at once.
        if self.seat is not None:
            self.seat.stop()
        self._stop_export.set()
        if self.poller is not None:
            self.poller.stop()
        if self.seat is not None:
            self.seat.release()

    def _child_exit(self, server: Any, worker: Any) -> None:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(worker.pid)


def check(config: Config) -> None:
    """Fail before forking workers on what would otherwise fail in every one of them."""
    stores.create(config).close()  # a malformed Redis URL raises StoreError here
    if config.provider == "metrics-server" and kube_client(config) is None:
        raise ConfigError("the metrics-server provider needs --kubeconfig or to run in a cluster")
    if not config.redis_url and config.workers > 1:
        log.info("no Redis: one worker serves the in-memory store (workers=%d ignored)",
                 config.workers)  # fmt: skip


def serve(config: Config, latch: SignalLatch | None = None) -> int:
    logs.configure(config.log_level, config.log_format)
    check(config)
    rundir = rundirs.create("watcher")
    if config.redis_url and config.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Request metrics of all workers are merged through files in this directory.
        os.mkdir(multiproc := os.path.join(rundir, "metrics"))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = multiproc
    master = os.getpid()
    try:
        WatcherApplication(config, rundir, latch).run()
    finally:
        # gunicorn's forked workers leave through this frame too when they exit: only the
        # master may remove the folder, or a restarted worker loses its metrics files (500).
        if os.getpid() == master:
            shutil.rmtree(rundir, ignore_errors=True)
    return 0
