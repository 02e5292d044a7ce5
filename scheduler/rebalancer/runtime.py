"""Wires the rebalancer's parts and runs its rounds (rounds.py plans each, actor.py acts).

cache (watches) --nodes, pods, controllers--> round;  metrics client (thread) --loads--> round
round: classify -> rests, saturated nodes, hot streaks -> judge (the profiles, on the cache's
       snapshot) -> limits -> actor (actor.py: Eviction + Events);
leader elector gates the writes;  /metrics, /status, /decisions.

Every replica observes (streaks need history, so a standby that takes over can act without
waiting), only the leader evicts: the Lease is renewed right before each Eviction call and the
call must end before the renew deadline, with a margin of one retry period; a Lease seen in
another's hands ends the round at once and the process exits (as the scheduler does), so its
restart comes back as a standby with fresh state.

No failed eviction blocks a node: the actor sets a failed move's pod (or workload) aside for
the node's rest period, and the round plans the node again without it and goes on to its next
candidate, within the round's limits; a workload whose budget is at its limit (its status in
the cache says so) is passed over without asking. An intent that cannot be recorded, or a
leadership that cannot be confirmed, ends the round.

A new leader first reads back which nodes are resting from the Events any leader wrote, and
every replica reads which workloads are short a replica from their controllers' status in the
cache: a failover evicts nothing twice.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from scheduler.backend.cache import ClusterCache
from scheduler.backend.gpus_client import GpusClient
from scheduler.backend.metrics_client import BearerToken, MetricsClient
from scheduler.backend.profiles_client import ProfilesClient
from scheduler.backend.recent import MAX_AGE, PROVIDER_LAG
from scheduler.framework import PodInfo
from scheduler.framework.clusterindex import DEPLOYMENTS
from scheduler.framework.profile import Profile
from scheduler.kube.leader import LeaderElector
from scheduler.rebalancer import evictions, gpuhot, limits, rest
from scheduler.rebalancer.actor import (
    Actor,
    Memory,
)
from scheduler.rebalancer.classify import (
    HotStreaks,
)
from scheduler.rebalancer.replacements import Replacements
from scheduler.rebalancer.rounds import Judging, Rounds
from scheduler.rebalancer.saturation import Saturation
from scheduler.rebalancer.settings import RebalancerConfig
from scheduler.rebalancer.status import (
    DecisionLog,
    StatusServer,
    Telemetry,
)
from scheduler.rebalancer.victims import Estimator
from shared import listen
from shared.lifecycle import Lifecycle, join

log = logging.getLogger(__name__)

STOP_GRACE = 3.0


@dataclass
class Options:
    listen: str | None = None  # "HOST:PORT" of /metrics, /status, /decisions; None: off
    watcher_interval: float = 5.0
    watcher_timeout: float = 2.0
    watcher_max_backoff: float = 30.0
    # Seconds a sample takes to reach the watcher (--provider-lag, the scheduler's flag): a node
    # rests this much past its window, its rest ends early only on samples this much newer than
    # the victim's going, and a bound pod counts on its node until a sample this much newer.
    provider_lag: float = PROVIDER_LAG
    # Seconds a bound pod counts on its node at most (--recent-max-age, the scheduler's flag):
    # in the judge's model of the scheduler, and for our moves' bound replacements.
    recent_max_age: float = MAX_AGE
    sync_timeout: float = 60.0
    identity: str = ""
    api_token_file: str = ""  # when set, /status and /decisions need its token (re-read)


class _Departures:
    """The cache's listener: the rebalancer places no pod; it notes when pods go, so a rest's
    evidence counts from a victim's going, not from the round that finds it gone (rest.py)."""

    def __init__(self, gone: Callable[[str], None]) -> None:
        self.gone = gone

    def pod_pending(self, pod: PodInfo) -> None:
        pass

    def pod_bound(self, pod: PodInfo) -> None:
        pass

    def pod_gone(self, uid: str) -> None:
        self.gone(uid)

    def cluster_changed(self) -> None:
        pass


class Rebalancer:
    def __init__(
        self,
        cfg: RebalancerConfig,
        api: client.ApiClient,
        profiles: dict[str, Profile],
        options: Options | None = None,
    ) -> None:
        self.cfg = cfg
        self.settings = s = cfg.rebalancer
        self.options = opts = options or Options()
        self.identity = opts.identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.profile = profiles[s.profile]
        sched = cfg.scheduler
        # Deployments too: their opt-out annotation, up the owner chain, without a GET per pod.
        self.cache = ClusterCache(api, (), _Departures(self.departed), more_kinds=(DEPLOYMENTS,))
        self.metrics = MetricsClient(
            sched.watcher_address,
            interval=opts.watcher_interval,
            timeout=opts.watcher_timeout,
            max_backoff=opts.watcher_max_backoff,
            token=BearerToken(sched.watcher_token, sched.watcher_token_file),
        )
        # What each workload's replicas use: the victims' predictions, as the scheduler's.
        self.profiles_client = ProfilesClient(
            sched.watcher_address,
            timeout=opts.watcher_timeout,
            headers=BearerToken(sched.watcher_token, sched.watcher_token_file).headers,
        )
        self.estimator = Estimator.for_profile(self.profile, self.profiles_client.profiles)
        # What the rounds remember: our moves' effects (the replacements booked on their
        # targets until bound, then where they went until a sample shows them: replacements.py),
        # rests, streaks, failures set aside.
        self.memory = mem = Memory(
            bucket=limits.TokenBucket(s.evictions_per_minute, s.max_per_round),
            cooldowns=rest.Cooldowns(opts.provider_lag),
            aside=limits.SetAside(),
            in_flight=limits.InFlight(),
            replacements=Replacements(opts.provider_lag, opts.recent_max_age),
            streaks=HotStreaks(),
            gpu_streaks=HotStreaks(),
            saturation=Saturation(),
        )
        # GPU-hot nodes (gpuhot.py), only when the judging profile uses GpuLoad: their own
        # streaks, on the GPUs' sample times, and the watcher's GPU windows fetched for them.
        self.gpu_names = gpuhot.gpu_resource_names(self.profile)
        self.gpus_client = GpusClient(
            sched.watcher_address if self.gpu_names is not None else None,
            interval=opts.watcher_interval,
            timeout=opts.watcher_timeout,
            idle=max(1.0, 2 * opts.watcher_interval),
            headers=BearerToken(sched.watcher_token, sched.watcher_token_file).headers,
        )
        self.telemetry = Telemetry()
        self.decisions = DecisionLog()
        le = sched.leader_election
        self.elector: LeaderElector | None = None
        if le.leader_elect:
            self.elector = LeaderElector(
                api,
                le.resource_namespace,
                s.lease_name,
                self.identity,
                le.lease_duration,
                le.renew_deadline,
                le.retry_period,
                on_lost=self._lost_lease,
            )
        self.lost_lease = threading.Event()
        self._life = Lifecycle("rebalancer")
        self.actor = Actor(
            s,
            evictions.Writer(api, self.identity),
            mem,
            self.estimator,
            self.telemetry,
            self.decisions,
            self._confirm,
            self.enabled,
            self._life.stopping,
            opts.provider_lag,
        )
        self.rounds = Rounds(
            s,
            self.cache,
            self.metrics,
            self.gpus_client,
            self.gpu_names,
            mem,
            Judging(
                self.profile,
                {name: profiles[name] for name in s.schedulers if name in profiles},
                self.estimator,
                sched.percentage_of_nodes_to_score,
                opts.provider_lag,
                opts.recent_max_age,
            ),
            self.actor,
            self.telemetry,
            self.leading,
            lambda: self.elector.transitions if self.elector is not None else 0,
            self.lost_lease,
        )
        self.server: StatusServer | None = None
        if opts.listen:
            host, port = listen.split(opts.listen)
            self.server = StatusServer(
                host,
                port,
                self.telemetry,
                self.decisions,
                self.status,
                self.health,
                BearerToken(path=opts.api_token_file, what="API token").value,
            )
        self._loop = threading.Thread(target=self._run, name="rebalancer", daemon=True)
        # Set when the watcher client fetched a newer sample (roundOnNewSamples): a round then.
        self.new_samples = threading.Event()
        if s.round_on_new_samples:
            self.metrics.on_new = self.new_samples.set

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._life.start(self._start)

    def _start(self) -> None:
        if self.server is not None:
            self.server.start()
        self.metrics.start()
        self.profiles_client.start()
        self.gpus_client.start()
        if self.elector is not None:
            self.elector.start()
        self.cache.start()
        self._loop.start()
        log.info(
            "rebalancer %s judging with profile %s", self.identity, self.profile.scheduler_name
        )

    def stop(self, grace: float = STOP_GRACE) -> None:
        self._life.stop(lambda: self._stop(grace), grace)

    def _stop(self, grace: float) -> None:
        deadline = time.monotonic() + grace

        def left() -> float:
            return max(0.0, deadline - time.monotonic())

        self.new_samples.set()  # a loop waiting for the watcher's next answer sees the stop
        join(self._loop, left())  # a round in progress finishes its current write
        if self.elector is not None:
            self.elector.stop(release=True, timeout=left())
        self.metrics.stop()
        self.profiles_client.stop()
        self.gpus_client.stop()
        self.cache.stop(timeout=left())
        if self.server is not None:
            self.server.stop()

    def _run(self) -> None:
        stopping = self._life.stopping
        while not stopping.is_set() and not self.cache.wait_synced(0.2):
            pass
        while not stopping.is_set():
            self.new_samples.clear()  # an answer arriving during the round: another round
            try:
                self.round()
            except Exception:  # noqa: BLE001 - one bad round must not end the rebalancer
                log.exception("rebalancing round failed")
            self.pause()

    def pause(self) -> bool:
        """Wait for the next round: `interval`, or with roundOnNewSamples until the watcher
        client fetches a newer sample, if sooner; True when one ended it."""
        if self.settings.round_on_new_samples:
            return self.new_samples.wait(self.settings.interval)
        self._life.stopping.wait(self.settings.interval)
        return False

    def departed(self, uid: str) -> None:
        """The cache saw a pod go (its watch thread calls this): when, on the rounds' clock."""
        self.memory.cooldowns.gone(uid, self.rounds.clock())

    def leading(self) -> bool:
        return not self.lost_lease.is_set() and (self.elector is None or self.elector.is_leader())

    def _lost_lease(self) -> None:
        # As the scheduler: stop at once; the CLI exits so that the restart starts clean.
        log.error("%s lost the rebalancer's lease: no eviction from here on", self.identity)
        self.lost_lease.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the lease to be lost; True when it was."""
        return self.lost_lease.wait(timeout)

    def _confirm(self) -> float:
        """Seconds an eviction call may take from now, the Lease confirmed ours that long."""
        if self.elector is None:
            return sum(evictions.REQUEST_TIMEOUT)
        if self.lost_lease.is_set():
            return 0.0
        return self.elector.confirm(margin=self.elector.retry_period)

    def health(self) -> tuple[bool, str]:
        if not self._loop.is_alive():
            return False, "rebalancing loop not running"
        if not self.cache.wait_synced(0):
            return False, "cache not synced"
        return True, f"ok ({'leader' if self.leading() else 'standby'})"

    def status(self) -> dict[str, Any]:
        s = self.settings
        return {
            "identity": self.identity,
            "leading": self.leading(),
            "dryRun": s.dry_run,
            "enabled": self.enabled(),
            "profile": self.profile.scheduler_name,
            "consecutive": s.consecutive,
            "lastRound": self.last,
        }

    def enabled(self) -> bool:
        s = self.settings
        return s.enabled and not (s.kill_switch_file and os.path.exists(s.kill_switch_file))

    # --- one round ----------------------------------------------------------------------

    def round(self) -> dict[str, Any]:
        """Observe, and when leading, plan and evict; returns the round's summary."""
        return self.rounds.run()

    @property
    def last(self) -> dict[str, Any]:
        return self.rounds.last
