"""The leader's pod carries `ballast.dev/leader: "true"`, every other replica's `"false"`, so a
Service can select the leader alone (the chart's extender Service): the extender's `bind` and
its record of recently bound pods live on the leader only.

A replica labels its pod "false" at start (a container restarted after losing the Lease keeps
its pod, and the pod its old label), then "true" once it leads; losing the Lease ends the
process, and the next start says "false" again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kubernetes import client
from kubernetes.client.rest import ApiException

log = logging.getLogger(__name__)

LABEL = "ballast.dev/leader"
TIMEOUT = 10.0  # seconds per PATCH


class LeaderLabel:
    def __init__(self, api: client.ApiClient, namespace: str, pod: str) -> None:
        self._core = client.CoreV1Api(api)
        self.namespace = namespace
        self.pod = pod
        self.value: str | None = None  # what the pod was last labelled with

    def set(self, leading: bool) -> bool:
        """Labels the pod; False (and a warning) when the apiserver refuses or is away."""
        value = "true" if leading else "false"
        body = {"metadata": {"labels": {LABEL: value}}}
        try:
            self._core.patch_namespaced_pod(
                self.pod, self.namespace, body, _request_timeout=TIMEOUT
            )
        except (ApiException, OSError) as exc:  # urllib3's errors are OSErrors
            log.warning("labelling pod %s/%s %s=%s: %s", self.namespace, self.pod, LABEL, value,
                        getattr(exc, "reason", exc))  # fmt: skip
            return False
        self.value = value
        return True

    def follow(
        self, became_leader: threading.Event, stop: threading.Event, retry: float = 2.0
    ) -> None:
        """Runs on a thread: "false" now, "true" once `became_leader` is set, retrying each
        until it sticks or `stop` is set."""
        self._until(lambda: self.set(False), stop, retry)
        while not stop.is_set():
            if became_leader.wait(timeout=0.5):
                self._until(lambda: self.set(True), stop, retry)
                return

    @staticmethod
    def _until(attempt: Callable[[], bool], stop: threading.Event, retry: float) -> None:
        while not stop.is_set() and not attempt():
            stop.wait(retry)
