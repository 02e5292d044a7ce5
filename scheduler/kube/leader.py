"""Leader election on a coordination.k8s.io/v1 Lease, so that replicas never both bind.

The rules of client-go's leaderelection, in brief: a candidate takes the Lease when it is free
or when its holder has not renewed it for `lease_duration` (measured on this replica's clock from
when it last saw the record change, so clock skew between replicas does not matter). Writes use
the Lease's resourceVersion, so two candidates racing for it cannot both win. The leader renews
every `retry_period`; if it cannot renew within `renew_deadline` it stops leading at once.
`renew_deadline` < `lease_duration` leaves a gap in which nobody leads, never two.

`is_leader()` also checks the time of the last successful renewal, so a stuck elector thread
cannot leave a stale "yes" behind, and the holder last read, so a Lease seen in another's hands
ends the leadership at once (client-go's IsLeader reads the observed record too). A renewal's
time is taken when its attempt starts: the write lands after that, so no other candidate can
count the Lease free before that time plus `lease_duration`.

`confirm(margin)` renews on the spot, for a caller about to make a write only the leader may
make (the rebalancer's evictions): it says how long, at least, the Lease is still ours.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from scheduler.kube.events import micro_time
from shared.lifecycle import Lifecycle, join

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = (3.0, 5.0)
RELEASE_TIMEOUT = (1.0, 2.0)


class LeaderElector:
    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retryPeriod < renewDeadline < leaseDuration")
        self._coord = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_lost = on_lost
        self._renewed_at: float | None = None  # monotonic time of our last successful write
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._stop = threading.Event()
        self.became_leader = threading.Event()
        self.transitions = 0
        self._thread = threading.Thread(target=self._run, name="leader-elector", daemon=True)
        self._life = Lifecycle("leader-elector")
        self._released = False
        # One attempt at a time: the loop's renewals and confirm()'s, on the same Lease version.
        self._attempt = threading.Lock()

    def start(self) -> None:
        self._life.start(self._thread.start)

    def stop(self, release: bool = True, timeout: float | None = None) -> bool:
        """Stop renewing; when leading and `release`, hand the Lease back. True if released."""
        self._stop.set()
        wait = self.retry_period + 6 if timeout is None else timeout
        self._life.stop(lambda: self._halt(release, wait), wait)
        return self._released

    def _halt(self, release: bool, timeout: float) -> None:
        join(self._thread, timeout)
        if release and self.is_leader():
            # A renewal still in flight may bump the resourceVersion under us: read again.
            self._released = self._release()
        self._renewed_at = None
        self.became_leader.clear()

    def holder(self) -> str:
        """The Lease holder's identity as last read ("" before the first read)."""
        observed = self._observed
        return observed[0] if observed else ""

    def is_leader(self) -> bool:
        renewed, observed = self._renewed_at, self._observed
        if observed is not None and observed[0] != self.identity:
            return False
        return renewed is not None and time.monotonic() - renewed < self.renew_deadline

    def confirm(self, margin: float) -> float:
        """Renew the Lease now; the seconds left before the renew deadline once `margin` is
        kept back, or 0.0 when not leading, not renewed, or with less than `margin` left. A
        Lease found in another's hands ends the leadership here (on_lost is called)."""
        if self._stop.is_set():
            return 0.0
        with self._attempt:
            if not self.is_leader():
                return 0.0
            started = time.monotonic()
            if not self._attempt_once(started):
                return 0.0
            return max(0.0, self.renew_deadline - (time.monotonic() - started) - margin)

    def _attempt_once(self, started: float) -> bool:
        """One acquire-or-renew (the caller holds the attempt lock); True when it succeeded."""
        was_leader = self.is_leader()
        try:
            ok = self._try_acquire_or_renew()
        except Exception as exc:  # noqa: BLE001 - API down: keep trying, lose on deadline
            log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            ok = False
        if ok:
            self._renewed_at = started
            if not was_leader:
                self.transitions += 1
                log.info("%s is now the leader (lease %s)", self.identity, self.name)
                self.became_leader.set()
        elif self._renewed_at is not None and not self.is_leader():
            self._lost()
        return ok

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._attempt:
                self._attempt_once(time.monotonic())
            self._stop.wait(self.retry_period)

    def _lost(self) -> None:
        self._renewed_at = None
        self.became_leader.clear()
        log.warning("%s lost the lease %s", self.identity, self.name)
        if self._on_lost is not None:
            self._on_lost()

    def _spec(self, transitions: int, acquired: str | None) -> dict[str, Any]:
        now = micro_time()
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, int(round(self.lease_duration))),
            "acquireTime": acquired or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _read(self, timeout: tuple[float, float]) -> dict[str, Any]:
        """The Lease as the API server sent it, decoded JSON."""
        resp = self._coord.read_namespaced_lease(
            self.name, self.namespace, _preload_content=False, _request_timeout=timeout
        )
        return json.loads(resp.data)

    def _try_acquire_or_renew(self) -> bool:
        try:
            lease = self._read(REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(0, None),
            }
            return self._write(self._coord.create_namespaced_lease, self.namespace, body)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime") or "")
        now = time.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        held_by_other = holder and holder != self.identity
        if held_by_other and now - self._observed_at < duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        acquired = spec.get("acquireTime")
        if holder != self.identity:
            transitions += 1
            acquired = None
        lease["spec"] = self._spec(transitions, acquired)
        return self._write(self._coord.replace_namespaced_lease, self.name, self.namespace, lease)

    def _write(self, fn: Callable[..., Any], *args: Any) -> bool:
        try:
            resp = fn(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 409:
                return False  # someone else wrote first: their version wins
            raise
        lease = json.loads(resp.data)
        spec = lease.get("spec") or {}
        self._observed = (spec.get("holderIdentity") or "", spec.get("renewTime") or "")
        self._observed_at = time.monotonic()
        return True

    def _release(self) -> bool:
        """Hand the lease back on a clean shutdown so a standby takes over at once.

        As client-go does: no holder, a one-second duration, so every candidate may take it.
        Short timeouts: on the way out a hung API server must not hold the process."""
        for _ in range(2):  # a renewal still in flight may bump the version under us: once more
            try:
                lease = self._read(RELEASE_TIMEOUT)
                spec = lease.get("spec") or {}
                if spec.get("holderIdentity") != self.identity:
                    return False
                spec["holderIdentity"] = ""
                spec["leaseDurationSeconds"] = 1
                spec["renewTime"] = micro_time()
                self._coord.replace_namespaced_lease(
                    self.name,
                    self.namespace,
                    lease,
                    _preload_content=False,
                    _request_timeout=RELEASE_TIMEOUT,
                )
            except ApiException as exc:
                if exc.status == 409:
                    continue
                log.info("lease %s not released: HTTP %s", self.name, exc.status)
                return False
            except Exception as exc:  # noqa: BLE001 - best effort on the way out
                log.info("lease %s not released: %s", self.name, exc)
                return False
            log.info("%s released the lease %s", self.identity, self.name)
            return True
        return False
