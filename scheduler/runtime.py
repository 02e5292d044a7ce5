"""Wires the scheduler's parts together and runs the scheduling loop.

cache (watches) --pending pods--> queue --pop--> cycle --assume--> cache
                                                   '--bind--> binder --outcome--> cycle
metrics client (thread) --loads--> cycle;  leader elector gates the loop;  /metrics reads all.

Every replica keeps its cache warm; only the leader pops pods.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from scheduler.backend.cache import ClusterCache
from scheduler.backend.decisions import DEFAULT_ATTEMPTS, DEFAULT_PODS, DEFAULT_TOP, DecisionStore
from scheduler.backend.gpus_client import GpusClient
from scheduler.backend.metrics_client import BearerToken, MetricsClient
from scheduler.backend.pods_client import PodsClient
from scheduler.backend.profiles_client import ProfilesClient
from scheduler.backend.queue import SchedulingQueue
from scheduler.backend.recent import MAX_AGE, PROVIDER_LAG, RecentlyBound
from scheduler.config.loader import SchedulerConfig
from scheduler.cycle import Cycle, Profile
from scheduler.framework import PodInfo
from scheduler.framework.errors import ConfigError
from scheduler.kube.binder import Binder
from scheduler.kube.events import EventRecorder
from scheduler.kube.evictor import Evictor
from scheduler.kube.leader import LeaderElector
from scheduler.kube.leaderlabel import LeaderLabel
from scheduler.serve.decisions import DecisionsAPI
from scheduler.serve.extender import Extender, ExtenderServer
from scheduler.serve.status import StatusServer, Telemetry
from shared import listen
from shared.idle_gc import IdleCollection
from shared.lifecycle import Lifecycle, join

log = logging.getLogger(__name__)

# Seconds a clean stop may spend finishing binds and events; orchestrators (kubelet, the demo)
# escalate to SIGKILL after their own grace period, which is longer.
STOP_GRACE = 3.0


@dataclass
class RuntimeOptions:
    """Knobs of the runtime itself (the plugins' knobs are in the config's pluginConfig)."""

    watcher_interval: float = 5.0  # seconds between watcher fetches
    watcher_timeout: float = 2.0
    watcher_max_backoff: float = 30.0
    upstream_horizon: float = 120.0  # freshness of a plain load-watcher snapshot
    provider_lag: float = PROVIDER_LAG  # a sample reaches the watcher this long after
    recent_max_age: float = MAX_AGE  # a bound pod counts on its node at most this long
    # The watcher's per-pod statistics (PeakFit): fetched every this many seconds (0: six watcher
    # intervals, 30 s by default), dropped when not refreshed for `pod_usage_max_age`.
    pod_usage_interval: float = 0.0
    pod_usage_max_age: float = 600.0
    initial_backoff: float | None = None  # None: the config's podInitialBackoffSeconds
    max_backoff: float | None = None  # None: the config's podMaxBackoffSeconds
    unschedulable_flush: float = 60.0
    sync_timeout: float = 60.0
    metrics_listen: str | None = None  # "HOST:PORT"; None: no HTTP server
    extender_listen: str | None = None  # "HOST:PORT": also serve kube-scheduler's extender API
    extender_profile: str = ""  # the profile the extender uses (default: the first)
    extender_token: str = ""  # when set, extender requests must carry it (docs/deploy.md)
    decisions: int = DEFAULT_PODS  # pods whose last attempts are recorded (0: off)
    decision_attempts: int = DEFAULT_ATTEMPTS
    decision_top: int = DEFAULT_TOP  # nodes per attempt with the full score breakdown
    # When set, /api/v1/decisions needs it as a bearer token; a callable is asked every request.
    api_token: str | Callable[[], str] = ""
    identity: str = ""
    # (namespace, pod name): label the pod ballast.dev/leader "true" while leading, "false"
    # before (kube/leaderlabel.py); the chart's extender Service selects "true".
    leader_label: tuple[str, str] | None = None


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _reads(profiles: dict[str, Any], what: str) -> bool:
    """Whether a plugin of some profile says it reads `what` (`reads_gpus`, `reads_pod_usage`):
    the watcher's document is then fetched, else never asked for."""
    return any(
        getattr(plugin, what, False)
        for profile in profiles.values()
        for plugin in [*profile.filters, *(p for p, _ in profile.scores)]
    )


class _Feed:
    """The cache's listener: pending pods into the queue, gone pods out of it."""

    def __init__(self, queue: SchedulingQueue, recent: RecentlyBound) -> None:
        self.queue = queue
        self.recent = recent

    def pod_pending(self, pod: PodInfo) -> None:
        self.queue.add(pod)

    def pod_bound(self, pod: PodInfo) -> None:
        self.queue.remove(pod.uid)

    def pod_gone(self, uid: str) -> None:
        self.queue.remove(uid)
        self.recent.forget(uid)

    def cluster_changed(self) -> None:
        self.queue.cluster_changed()


class Runtime:
    def __init__(
        self,
        cfg: SchedulerConfig,
        api: client.ApiClient,
        profiles: dict[str, Profile],
        options: RuntimeOptions | None = None,
    ) -> None:
        self.cfg = cfg
        self.options = opts = options or RuntimeOptions()
        self.identity = opts.identity or default_identity()
        self.telemetry = Telemetry()
        initial, cap = opts.initial_backoff, opts.max_backoff
        self.queue = SchedulingQueue(
            cfg.pod_initial_backoff_seconds if initial is None else initial,
            cfg.pod_max_backoff_seconds if cap is None else cap,
            opts.unschedulable_flush,
        )
        self.recent = RecentlyBound(opts.provider_lag, opts.recent_max_age)
        self.cache = ClusterCache(api, profiles.keys(), _Feed(self.queue, self.recent))
        self.metrics = MetricsClient(
            cfg.watcher_address,
            interval=opts.watcher_interval,
            timeout=opts.watcher_timeout,
            max_backoff=opts.watcher_max_backoff,
            upstream_horizon=opts.upstream_horizon,
            token=BearerToken(cfg.watcher_token, cfg.watcher_token_file),
        )
        self.events = EventRecorder(api, self.identity)
        self.decisions: DecisionStore | None = None
        if opts.decisions > 0:
            self.decisions = DecisionStore(
                opts.decisions, opts.decision_attempts, opts.decision_top
            )
        self.cycle = Cycle(
            profiles,
            self.cache,
            self.queue,
            self.metrics.loads,
            self.recent,
            lambda outcome: Binder(api, cfg.parallelism, outcome, self._pre_bind),
            self.events,
            self.telemetry,
            cfg.percentage_of_nodes_to_score,
            evictor_factory=lambda finished: Evictor(api, self.identity, finished),
            decisions=self.decisions,
        )
        # What each workload's replicas use, for every prediction (plugins/helpers/estimator.py).
        self.profiles_client = ProfilesClient(
            cfg.watcher_address,
            timeout=opts.watcher_timeout,
            headers=BearerToken(cfg.watcher_token, cfg.watcher_token_file).headers,
        )
        self.cycle.workloads = self.profiles_client.profiles
        # Each GPU's window (plugins/gpu_load.py), fetched only when a profile reads them.
        self.gpus_client = GpusClient(
            cfg.watcher_address if _reads(profiles, "reads_gpus") else None,
            interval=opts.watcher_interval,
            timeout=opts.watcher_timeout,
            # A 404 is most often a watcher that has not polled GPUs yet: ask again soon.
            idle=max(1.0, 2 * opts.watcher_interval),
            headers=BearerToken(cfg.watcher_token, cfg.watcher_token_file).headers,
        )
        self.cycle.gpus = self.gpus_client.gpus
        # Each pod's usage statistics (plugins/peak_fit.py), fetched only when a profile reads
        # them; older than 10 minutes they describe pods the cluster may no longer run. Every
        # 6 node fetches (30 s by default): they move slowly, and each new document makes
        # PeakFit sum every node's pods again (about 5 us a pod, docs/peak-model.md).
        self.pods_client = PodsClient(
            cfg.watcher_address if _reads(profiles, "reads_pod_usage") else None,
            interval=opts.pod_usage_interval or 6 * opts.watcher_interval,
            timeout=opts.watcher_timeout,
            idle=max(1.0, 2 * opts.watcher_interval),
            headers=BearerToken(cfg.watcher_token, cfg.watcher_token_file).headers,
            max_age=opts.pod_usage_max_age,
        )
        self.cycle.pod_usage = self.pods_client.pod_usage
        # Bindings first, events after: no event write while pods wait for a cycle or a bind.
        binder_idle = self.cycle.binder.idle
        self.events.defer_to(lambda: self.queue.has_active() or not binder_idle.is_set())
        le = cfg.leader_election
        self.elector: LeaderElector | None = None
        if le.leader_elect:
            self.elector = LeaderElector(
                api,
                le.resource_namespace,
                le.resource_name,
                self.identity,
                le.lease_duration,
                le.renew_deadline,
                le.retry_period,
                on_lost=self._lost_lease,
            )
        self.telemetry.add_sources(
            queue=self.queue,
            metrics_client=self.metrics,
            cache=self.cache,
            recent=self.recent,
            elector=self.elector,
        )
        self.server: StatusServer | None = None
        if opts.metrics_listen:
            host, port = listen.split(opts.metrics_listen)
            explain = DecisionsAPI(self.decisions, self._leader, opts.api_token)
            self.server = StatusServer(host, port, self.telemetry, self.health, explain)
        self.extender: ExtenderServer | None = None
        if opts.extender_listen:
            name = opts.extender_profile or next(iter(profiles))
            if name not in profiles:
                raise ConfigError(f"extender profile {name!r}: no such profile")
            ext = Extender(
                profiles[name],
                self.cache,
                self.metrics.loads,
                self.recent,
                api,
                self.cycle.predicted_cpu_m,
                self.decisions,
            )
            host, port = listen.split(opts.extender_listen)
            self.extender = ExtenderServer(
                host, port, ext, token=opts.extender_token, leading=self.leading
            )
        self.leader_label: LeaderLabel | None = None
        if opts.leader_label is not None and self.elector is not None:
            self.leader_label = LeaderLabel(api, *opts.leader_label)
        self._life = Lifecycle("scheduler")
        self._stop = self._life.stopping
        self._loop = threading.Thread(target=self._run, name="scheduling-loop", daemon=True)
        self.lost_lease = threading.Event()

    def start(self) -> None:
        """Start every part, then the loop once the cache synced. Runs on a thread of its own
        in the CLI: a `stop()` meanwhile makes it return early, and waits for that."""
        self._life.start(self._start)

    def _start(self) -> None:
        if self.server is not None:
            self.server.start()
        if self.extender is not None:
            self.extender.start()
        self.events.start()
        self.metrics.start()
        self.profiles_client.start()
        self.gpus_client.start()
        self.pods_client.start()
        if self.elector is not None:
            self.elector.start()
            if self.leader_label is not None:
                follow = self.leader_label.follow
                args = (self.elector.became_leader, self._stop)
                threading.Thread(target=follow, args=args, name="leader-label", daemon=True).start()
        opts = self.options
        self.cache.start(abort=self._stop)
        # In slices, so that a stop asked for during start-up is not held up by a slow list.
        deadline = time.monotonic() + opts.sync_timeout
        while not self.cache.wait_synced(0.2):
            if self._stop.is_set():
                return
            if time.monotonic() > deadline:
                log.warning("cache not synced after %.0fs; scheduling anyway", opts.sync_timeout)
                break
        if self._stop.is_set():
            return
        self._loop.start()
        log.info("scheduler %s serving %s", self.identity, ", ".join(sorted(self.cycle.profiles)))

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop within about `grace` seconds: no new pods, in-flight binds finish or are
        abandoned (their pods stay Pending for whoever leads next), the Lease is handed back,
        then the watches and servers close. Safe before, during and after start, and twice."""
        deadline = time.monotonic() + grace
        if not self._life.stop(lambda: self._halt(deadline), grace):
            # Never started: only the listening sockets, bound at construction, to close.
            for server in (self.server, self.extender):
                if server is not None:
                    server.stop()

    def _halt(self, deadline: float) -> None:
        def left() -> float:
            return max(0.0, deadline - time.monotonic())

        self.queue.close()
        join(self._loop, left())
        if self.cycle.evictor is not None:
            self.cycle.evictor.stop()
        abandoned = self.cycle.binder.stop(timeout=left())
        if abandoned:
            log.warning("stopping: %d bindings abandoned; their pods stay Pending", abandoned)
        # After the binds: a standby taking over now cannot race one of ours.
        if self.elector is not None:
            self.elector.stop(release=True, timeout=left())
        self.metrics.stop()
        self.profiles_client.stop()
        self.gpus_client.stop()
        self.pods_client.stop()
        self.cache.stop(timeout=left())
        self.events.stop(timeout=left())
        if self.server is not None:
            self.server.stop()
        if self.extender is not None:
            self.extender.stop()
        log.info("scheduler %s stopped", self.identity)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until stopped or the lease is lost; True when the lease was lost."""
        while not self._stop.is_set():
            if self.lost_lease.wait(timeout=1.0 if timeout is None else min(timeout, 1.0)):
                return True
            if timeout is not None:
                return False
        return self.lost_lease.is_set()

    def _pre_bind(self, api: client.ApiClient, pod: PodInfo, node: str) -> str:
        profile = self.cycle.profiles.get(pod.scheduler_name)
        return profile.pre_bind(api, pod, node) if profile is not None else ""

    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def _leader(self) -> tuple[bool, str]:
        """(this replica leads, the Lease holder's identity), for the decisions API."""
        if self.elector is None:
            return True, self.identity
        return self.elector.is_leader(), self.elector.holder()

    def health(self) -> tuple[bool, str]:
        if not self._loop.is_alive():
            return False, "scheduling loop not running"
        if not self.cache.wait_synced(0):
            return False, "cache not synced"
        role = "leader" if self.leading() else "standby"
        return True, f"ok ({role})"

    def _lost_lease(self) -> None:
        # kube-scheduler exits here so that its restart starts clean; the CLI does the same.
        self.lost_lease.set()

    def _run(self) -> None:
        # Half a second without a pod after a burst: the collector's full pass goes there.
        collection = IdleCollection()
        while not self._stop.is_set():
            if not self.leading():
                if self.elector is not None:
                    self.elector.became_leader.wait(timeout=0.5)
                continue
            pod = self.queue.pop(timeout=0.5)
            if pod is None:
                collection.idle()
                continue
            if not self.leading():
                self.queue.requeue_backoff(pod)
                continue
            self.cycle.schedule_one(pod)
            collection.worked()

    def describe(self) -> dict[str, Any]:
        return {"identity": self.identity, **self.cache.stats(), **self.queue.depth()}
