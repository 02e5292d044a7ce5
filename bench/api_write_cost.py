"""CPU of one API call through scheduler/kube/kubeapi.py, by kind, on a fresh sandbox.

`python -m bench.api_write_cost [--pods 60]`: per pod, the writes a preemption makes to a victim
(the DisruptionTarget status patch, a Preempted event, the delete) and a GET, each timed by the
calling thread's CPU (user + system, `time.thread_time`); prints the median and mean per kind,
the first 5 pods left out (connections warming up).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from bench.common import start_sandbox
from sandbox.cluster.namespaces import ensure_namespace
from scheduler.kube import kubeapi
from scheduler.kube.evictor import STRATEGIC_PATCH, disruption_patch

NAMESPACE = "write-cost"
WARM = 5


def _pod(name: str) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "900m"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"schedulerName": "nobody", "containers": [container]},
    }


def _event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.e", "namespace": NAMESPACE},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "bench",
        "reportingInstance": "bench",
        "action": "Preempting",
        "reason": "Preempted",
        "note": "bench",
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": NAMESPACE},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=60)
    args = parser.parse_args(argv)
    _, plane, api = start_sandbox("ballast-write-cost-")
    try:
        ensure_namespace(api, NAMESPACE)
        pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
        events = f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events"
        for i in range(args.pods):
            kubeapi.request(api, "POST", pods, _pod(f"p{i}"))
        calls = {
            "status patch": lambda n: ("PATCH", f"{pods}/{n}/status", disruption_patch("bench")),
            "event post": lambda n: ("POST", events, _event(n)),
            "get": lambda n: ("GET", f"{pods}/{n}", None),
            "delete": lambda n: ("DELETE", f"{pods}/{n}", {"kind": "DeleteOptions"}),
        }
        spent: dict[str, list[float]] = {kind: [] for kind in calls}
        for i in range(args.pods):
            for kind, call in calls.items():
                method, path, body = call(f"p{i}")
                kind_type = STRATEGIC_PATCH if method == "PATCH" else ""
                t0 = time.thread_time()
                answer = kubeapi.request(api, method, path, body, content_type=kind_type)
                spent[kind].append(time.thread_time() - t0)
                if not answer.ok:
                    raise RuntimeError(f"{kind} answered {answer.status}: {answer.message()}")
        for kind, times in spent.items():
            kept = times[WARM:] or times
            print(
                f"{kind:13} median {1000 * statistics.median(kept):.3f} ms, "
                f"mean {1000 * statistics.mean(kept):.3f} ms of CPU ({len(kept)} calls)"
            )
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
