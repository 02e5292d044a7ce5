"""Upstream kube-scheduler as the judge, and the recording extender that reads its verdicts.

kube-scheduler calls an extender's filter verb with the nodes that passed its own filters
(never when none did), so a filter-only, node-cache-capable extender that answers "all pass"
records upstream's exact feasible set per pod and changes nothing. For a pod no node fits, the
reason text is the PodScheduled=False condition's message up to its first sentence's end (what
PostFilter plugins append after it, `no new claims to deallocate, preemption: ...`, is dropped).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from sandbox.cluster import processes
from sandbox.cluster.controlplane import ControlPlane
from sandbox.cluster.kube_scheduler import start_kube_scheduler
from scheduler.serve import httpserve
from scheduler.serve.httpserve import BackgroundServer

FILTER_VERB = "filter"


class RecordingExtender(BackgroundServer):
    """POST /filter: records the node names by pod uid and lets them all pass."""

    def __init__(self) -> None:
        self.calls: dict[str, list[str]] = {}
        self.lock = threading.Lock()
        recorder = self

        class Handler(httpserve.Handler):
            log_prefix = "recording-extender"

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("Content-Length") or 0)
                args = json.loads(self.rfile.read(length) or b"{}")
                names = _get(args, "NodeNames") or []
                uid = (_get(args, "Pod") or {}).get("metadata", {}).get("uid", "")
                with recorder.lock:
                    recorder.calls[uid] = list(names)
                self.send_json(200, {"NodeNames": names, "FailedNodes": {}, "Error": ""})

        super().__init__("127.0.0.1", 0, Handler)

    def feasible(self, uid: str) -> list[str] | None:
        with self.lock:
            return self.calls.get(uid)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _get(args: dict[str, Any], name: str) -> Any:
    # kube-scheduler sends json tags in lower case ("pod", "nodenames"); accept both.
    return args.get(name, args.get(name.lower()))


def start_judge(plane: ControlPlane, extender: RecordingExtender) -> int:
    """kube-scheduler with its default profile plus the recording extender; returns its port."""
    overrides = {
        "extenders": [
            {
                "urlPrefix": extender.url,
                "filterVerb": FILTER_VERB,
                "nodeCacheCapable": True,
                "enableHTTPS": False,
                "httpTimeout": "10s",
            }
        ],
        # Every node is filtered on clusters this small anyway; say so for the record.
        "percentageOfNodesToScore": 100,
    }
    return start_kube_scheduler(plane, overrides)


@dataclass
class Outcome:
    """Where a pod went, or why it did not: node "" and the reason text."""

    node: str
    message: str = ""


def outcome_of(pod: dict[str, Any]) -> Outcome | None:
    """The scheduler's verdict as the pod object shows it; None while it is still undecided."""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    if node:
        return Outcome(node)
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            if cond.get("reason") in ("Unschedulable", "SchedulerError"):
                return Outcome("", strip_postfilter(cond.get("message") or ""))
    return None


def strip_postfilter(message: str) -> str:
    """The filter verdict only: upstream appends what its PostFilter plugins found after the
    first sentence (`... no new claims to deallocate, preemption: 0/N nodes are ...`)."""
    start = message.find(" nodes are available")
    end = message.find(". ", max(start, 0))
    return message[: end + 1] if end >= 0 else message.strip()


def stop_judge(plane: ControlPlane, timeout: float = 10.0) -> None:
    """Stops the kube-scheduler this sandbox recorded (and only it)."""
    for rec in processes.recorded(plane.pid_dir):
        if rec.name == "kube-scheduler":
            processes.stop(rec, timeout)
