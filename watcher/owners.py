"""Pod -> workload, from the pods' metadata, refreshed at most every `refresh` seconds.

One list of all pods as PartialObjectMetadata (names, labels, ownerReferences; no spec, no
status: about a tenth of the full objects), so the join costs one request per refresh whatever
the cluster's size, and needs `list pods` only. A failed refresh keeps the previous view; a pod
created since the last refresh has no workload until the next one (its samples are counted
`no_owner`, then count normally).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from shared.workloads import Workload, workload_of

log = logging.getLogger(__name__)

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


def owners_from(items: list[dict[str, Any]]) -> dict[tuple[str, str], Workload]:
    """(namespace, pod) -> workload for every pod a known controller owns; Workload objects are
    shared between the replicas of one revision."""
    shared: dict[Workload, Workload] = {}
    out: dict[tuple[str, str], Workload] = {}
    for item in items:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict):
            continue
        workload = workload_of(meta)
        if workload is not None and meta.get("name"):
            out[(workload.namespace, meta["name"])] = shared.setdefault(workload, workload)
    return out


class PodOwners:
    def __init__(
        self, api_client: Any, refresh: float, timeout: float, early: float | None = None
    ) -> None:
        self.api = api_client
        self.refresh = refresh
        # Pods nobody knows yet (a rollout, a new Deployment) bring the refresh forward, but
        # never closer than `early` seconds to the last one.
        self.early = refresh if early is None else min(early, refresh)
        self.timeout = timeout
        self.owners: dict[tuple[str, str], Workload] = {}
        self.synced = False
        self._fetched: float | None = None
        self._lock = threading.Lock()

    def update(self, unknown: bool = False) -> None:
        """Refresh when due; `unknown`: the caller saw pods this view lacks."""
        with self._lock:
            now = time.monotonic()
            due = self.early if unknown else self.refresh
            if self._fetched is not None and now - self._fetched < due:
                return
            self._fetched = now
            try:
                items = self._list()
            except Exception as exc:  # keep the previous view; the poll goes on
                log.warning("listing pod owners failed: %s", exc)
                return
            self.owners = owners_from(items)
            self.synced = True

    def _list(self) -> list[dict[str, Any]]:
        from kubernetes import client

        resp = client.CoreV1Api(self.api).list_pod_for_all_namespaces(
            _headers={"Accept": METADATA_LIST},
            _preload_content=False,
            _request_timeout=self.timeout,
        )
        return json.loads(resp.data).get("items") or []

    def lookup(self, namespace: str, pod: str) -> Workload | None:
        return self.owners.get((namespace, pod))
