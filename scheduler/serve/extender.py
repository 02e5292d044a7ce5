"""HTTP extender mode: an existing kube-scheduler asks Ballast to filter, prioritize and bind.

kube-scheduler POSTs JSON to `urlPrefix/verb` (keys are Go field names, no json tags):
- filter: {"Pod", "Nodes": {"items": [...]} | null, "NodeNames": [...] | null}
  -> {"Nodes" | "NodeNames", "FailedNodes": {node: reason}, "FailedAndUnresolvableNodes", "Error"}
- prioritize: same request -> [{"Host", "Score"}], Score 0..10 (kube-scheduler multiplies by the
  extender's weight and by 10);
- bind: {"PodName", "PodNamespace", "PodUID", "Node"} -> {"Error"}.
Ballast answers from its own cache and the watcher snapshot with one profile's plugins. Configure
`bindVerb` too: binding through Ballast is how it learns where a pod went, so that a burst of
pods counts on its nodes before the watcher's window shows them.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from kubernetes import client

from scheduler.backend import decisions as outcomes
from scheduler.backend import explanation
from scheduler.backend.cache import take_snapshot
from scheduler.backend.decisions import DecisionStore
from scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    NodeInfo,
    PodInfo,
    PostFilterResult,
    Snapshot,
    resources,
)
from scheduler.framework.profile import FILTER_TALLY, Profile, ScoreParts
from scheduler.kube import kubeapi
from scheduler.kube.binder import TIMEOUT, binding_body
from scheduler.serve import httpserve
from scheduler.serve.httpserve import BackgroundServer

MAX_EXTENDER_PRIORITY = 10
_REMEMBERED = 10_000  # pods seen in filter/prioritize, for their CPU prediction at bind time


class Extender:
    def __init__(
        self,
        profile: Profile,
        cache: Any,
        loads: Callable[[], dict[str, Any]],
        recent: Any,
        api: client.ApiClient,
        predicted_cpu_m: Callable[[PodInfo], int],
        decisions: DecisionStore | None = None,
    ) -> None:
        self.profile = profile
        self.cache = cache
        self.loads = loads
        self.recent = recent
        self.api = api
        self.predicted_cpu_m = predicted_cpu_m
        self.decisions = decisions  # each answer recorded for `ballast explain`
        self.calls = {"filter": 0, "prioritize": 0, "bind": 0}
        self._seen: OrderedDict[str, PodInfo] = OrderedDict()
        self._seen_lock = threading.Lock()

    # --- verbs ----------------------------------------------------------------------------
    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        self.calls["filter"] += 1
        pod, names, given = self._request(args)
        state = CycleState()
        if self.decisions is not None:
            state[FILTER_TALLY] = {}
        with self.cache.lock:
            nodes, missing = self._nodes(names, given)
            feasible, reasons = self.profile.filter(pod, nodes, self._snapshot(), state)
        if self.decisions is not None:
            total = len(names)
            counts = explanation.node_counts(total, total, len(feasible), 0, 100, total)
            unknown = {name: ["node not in Ballast's cache"] for name in missing}
            detail = explanation.unschedulable(
                pod, counts, {**reasons, **unknown}, state, "", PostFilterResult(), 0
            )
            self._record(pod, "filter", "", detail)
        failed = {name: "; ".join(why) for name, why in reasons.items()}
        failed.update(dict.fromkeys(missing, "node not in Ballast's cache"))
        ok = [n.name for n in feasible]
        answer: dict[str, Any] = {
            "NodeNames": ok,
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": {},
            "Error": "",
        }
        if args.get("Nodes") is not None:
            keep = set(ok)
            items = (args.get("Nodes") or {}).get("items") or []
            answer["Nodes"] = {"items": [i for i in items if _name(i) in keep]}
            answer["NodeNames"] = None
        return answer

    def prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        self.calls["prioritize"] += 1
        pod, names, given = self._request(args)
        parts = ScoreParts() if self.decisions is not None else None
        with self.cache.lock:
            nodes, missing = self._nodes(names, given)
            snap = self._snapshot()
            totals = self.profile.score(pod, nodes, snap, CycleState(), parts) if nodes else {}
            if parts is not None and totals:
                best = max(totals, key=lambda n: (totals[n], n))
                counts = explanation.node_counts(
                    len(names), len(names), len(nodes), len(nodes), 100, len(names)
                )
                detail = explanation.placed(
                    pod, counts, {}, CycleState(), snap, parts, best, self.predicted_cpu_m(pod),
                    self.decisions.top,
                )  # fmt: skip
                self._record(pod, "prioritize", best, detail)
        weight = sum(w for _, w in self.profile.scores) or 1
        top = MAX_NODE_SCORE * weight
        out = [
            {"Host": n, "Score": resources.go_round(totals[n] * MAX_EXTENDER_PRIORITY / top)}
            for n in totals
        ]
        return out + [{"Host": n, "Score": 0} for n in missing]

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        self.calls["bind"] += 1
        name, namespace = args.get("PodName"), args.get("PodNamespace")
        uid, node = args.get("PodUID", ""), args.get("Node")
        if not (name and namespace and node):
            return {"Error": "bind needs PodName, PodNamespace and Node"}
        with self._seen_lock:
            pod = self._seen.get(uid)
        if pod is None:  # not seen in filter: a stand-in with what the request says
            pod = PodInfo(name, namespace, uid, "", 0, 0.0, "", "", {}, {}, {})
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        try:
            answer = kubeapi.request(self.api, "POST", path, binding_body(pod, node), TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - reported to kube-scheduler, which retries
            return {"Error": f"{type(exc).__name__}: {exc}"}
        if not answer.ok:
            return {"Error": answer.message()}
        if pod.raw:
            self.recent.record(uid, node, self.predicted_cpu_m(pod))
            if self.decisions is not None:
                counts = explanation.node_counts(1, 0, 0, 0, 100, 1)
                detail = explanation.unschedulable(
                    pod, counts, {}, CycleState(), "", PostFilterResult(), 0
                )
                self._record(pod, "bind", node, detail, outcomes.BOUND)
        return {"Error": ""}

    # --- helpers --------------------------------------------------------------------------
    def _record(
        self, pod: PodInfo, verb: str, node: str, detail: dict[str, Any], outcome: str = ""
    ) -> None:
        assert self.decisions is not None
        detail.pop("m", None)
        detail["e"] = verb
        self.decisions.add(
            pod.key,
            pod.uid,
            time.time(),
            self.profile.scheduler_name,
            outcome or outcomes.EXTENDER,
            node,
            detail,
        )

    def _request(self, args: dict[str, Any]) -> tuple[PodInfo, list[str], dict[str, Any]]:
        if not isinstance(args, dict) or not isinstance(args.get("Pod"), dict):
            raise ValueError("request: expected an object with a Pod")
        pod = resources.pod_info(args["Pod"])
        given = {_name(i): i for i in (args.get("Nodes") or {}).get("items") or []}
        names = args.get("NodeNames") or list(given)
        with self._seen_lock:
            self._seen[pod.uid] = pod
            self._seen.move_to_end(pod.uid)
            while len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)
        return pod, list(names), given

    def _nodes(self, names: list[str], given: dict[str, Any]) -> tuple[list[NodeInfo], list[str]]:
        nodes, missing = [], []
        for name in names:
            node = self.cache.nodes.get(name)
            if node is None and name in given:
                node = resources.node_info(given[name])  # no pods known on it
            if node is None:
                missing.append(name)
            else:
                nodes.append(node)
        return nodes, missing

    def _snapshot(self) -> Snapshot:
        loads = self.loads()
        now = time.time()
        return take_snapshot(self.cache, loads, self.recent, now)


def _name(item: Any) -> str:
    return ((item or {}).get("metadata") or {}).get("name", "")


# kube-scheduler sends whole Node objects unless the extender is nodeCacheCapable: about 4 KiB
# each, so 32 MiB holds some 8,000 nodes. With nodeCacheCapable (recommended) it sends names.
EXTENDER_MAX_BODY = 32 << 20


def authorized(token: str, path: str, header: str) -> bool:
    """With a token set, a request must carry it: as `Authorization: Bearer TOKEN`, or as the
    path segment before the verb (`urlPrefix: http://HOST:PORT/TOKEN`), since kube-scheduler's
    extender config can set TLS but no header."""
    if not token:
        return True
    scheme, _, given = header.partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode()):
        return True
    segments = path.split("?", 1)[0].rstrip("/").split("/")
    return len(segments) >= 2 and hmac.compare_digest(segments[-2].encode(), token.encode())


class ExtenderServer(BackgroundServer):
    def __init__(
        self,
        host: str,
        port: int,
        extender: Extender,
        token: str = "",
        max_body: int = EXTENDER_MAX_BODY,
        leading: Callable[[], bool] = lambda: True,
    ) -> None:
        """`leading()` false: a standby, which answers 503 (its record of recently bound pods
        is empty and only the leader binds); kube-scheduler retries the pod."""
        verbs: dict[str, Callable[[dict[str, Any]], Any]] = {
            "filter": extender.filter,
            "prioritize": extender.prioritize,
            "bind": extender.bind,
        }

        class Handler(httpserve.Handler):
            log_prefix = "extender"
            allowed = ("POST",)

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                if not authorized(token, self.path, self.headers.get("Authorization", "")):
                    self.close_connection = True
                    self.send_json(401, {"Error": "missing or wrong extender token"})
                    return
                if not leading():
                    self.close_connection = True
                    self.send_json(503, {"Error": "this replica is a standby; ask the leader"})
                    return
                verb = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
                handler = verbs.get(verb)
                if handler is None:
                    self.close_connection = True
                    self.send_json(404, {"Error": f"unknown verb {verb!r}"})
                    return
                body = self.read_body(max_body)
                if body is None:
                    return
                try:
                    self.send_json(200, handler(json.loads(body or b"{}")))
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    self.send_json(400, {"Error": f"bad {verb} request: {exc}"})

        super().__init__(host, port, Handler)
