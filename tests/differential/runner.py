"""One seed, start to finish: the cluster, the judge's phase, the validity phase, clean-up.

Phase 1 (differential): each pod is created with a scheduling gate and schedulerName
default-scheduler; the pod as the apiserver stored it (defaults and merged fields applied) gets
Ballast's verdict from the in-process cache and profile; then the gate is removed and
kube-scheduler decides, its feasible set read by the recording extender. One pod at a time, so
both judge the same cluster: the pods placed so far, nothing pending. A pod upstream cannot
place is deleted at once, so that a later retry cannot change the state under the next pod.

Phase 2 (validity): the same pods, in fresh namespaces on the same nodes, through a real
in-process Ballast Runtime, one at a time; every placement is checked by the independent
checker against the pods placed before it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from sandbox.cluster.namespaces import delete_namespace, ensure_namespace
from sandbox.cluster.nodes import create_nodes, delete_nodes, wait_ready
from tests.differential import checker, scenario
from tests.differential.ballast_side import BallastView
from tests.differential.report import Mismatch, compare
from tests.differential.upstream import Outcome, RecordingExtender, outcome_of

log = logging.getLogger(__name__)

T = (5.0, 15.0)  # connect, read timeouts of every API call
VERDICT_TIMEOUT = 30.0
POLL = 0.01


@dataclass
class SeedResult:
    seed: int
    pods: int
    mismatches: list[Mismatch] = field(default_factory=list)
    upstream_bound: int = 0
    ballast_bound: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


class Api:
    """The raw JSON calls the runner makes, each with a timeout."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.storage = client.StorageV1Api(api)

    def create_pod(self, ns: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self.core.create_namespaced_pod(ns, body, _preload_content=False, _request_timeout=T)
        return json.loads(resp.data)

    def read_pod(self, ns: str, name: str) -> dict[str, Any]:
        resp = self.core.read_namespaced_pod(name, ns, _preload_content=False, _request_timeout=T)
        return json.loads(resp.data)

    def ungate(self, ns: str, name: str) -> None:
        patch = [{"op": "remove", "path": "/spec/schedulingGates"}]
        self.core.patch_namespaced_pod(name, ns, patch, _request_timeout=T)

    def delete_pod(self, ns: str, name: str) -> None:
        try:
            self.core.delete_namespaced_pod(name, ns, grace_period_seconds=0, _request_timeout=T)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def wait_outcome(self, ns: str, name: str) -> Outcome | None:
        deadline = time.monotonic() + VERDICT_TIMEOUT
        while time.monotonic() < deadline:
            found = outcome_of(self.read_pod(ns, name))
            if found is not None:
                return found
            time.sleep(POLL)
        return None

    def ensure_storage_class(self) -> None:
        try:
            self.storage.create_storage_class(scenario.storage_class(), _request_timeout=T)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def create_volumes(self, claims: list[scenario.Claim], prefix: str) -> tuple[dict, dict]:
        """Creates the run's PVs and PVCs; returns them as the apiserver stored them."""
        pvs, pvcs = scenario.volume_objects(claims, prefix)
        stored_pvs, stored_pvcs = {}, {}
        # Claims first, so a bound claim's PV names its uid in claimRef as the PV controller
        # (kube-controller-manager runs in the sandbox) leaves it; a claimRef without the uid
        # races the controller, which may mark the claim Lost.
        for ns, pvc in pvcs:
            resp = self.core.create_namespaced_persistent_volume_claim(
                ns, pvc, _preload_content=False, _request_timeout=T
            )
            stored_pvcs[(ns, pvc["metadata"]["name"])] = json.loads(resp.data)
        for pv in pvs:
            ref = pv["spec"].get("claimRef")
            if ref:
                ref["uid"] = stored_pvcs[(ref["namespace"], ref["name"])]["metadata"]["uid"]
            resp = self.core.create_persistent_volume(
                pv, _preload_content=False, _request_timeout=T
            )
            stored_pvs[pv["metadata"]["name"]] = json.loads(resp.data)
        # The PVs came after the claims: wait until the PV controller has bound every claim to
        # its PV (it saw both), so neither scheduler meets a claim whose PV it has not seen.
        bound = [key for key, pvc in stored_pvcs.items() if pvc["spec"].get("volumeName")]
        deadline = time.monotonic() + VERDICT_TIMEOUT
        while not all(self._claim_bound(ns, name) for ns, name in bound):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the PV controller did not bind the claims {bound}")
            time.sleep(POLL)
        return stored_pvs, stored_pvcs

    def _claim_bound(self, ns: str, name: str) -> bool:
        claim = self.core.read_namespaced_persistent_volume_claim(name, ns, _request_timeout=T)
        return claim.status.phase == "Bound"

    def delete_volumes(self, pvs: dict, pvcs: dict) -> None:
        core = self.core
        for ns, name in pvcs:
            _gone_ok(core.delete_namespaced_persistent_volume_claim, name, ns)
        for name in pvs:
            _gone_ok(core.delete_persistent_volume, name)

    def node_objects(self) -> dict[str, dict[str, Any]]:
        """Every node: both schedulers judge the whole cluster, so the checker does too."""
        resp = self.core.list_node(_preload_content=False, _request_timeout=T)
        return {n["metadata"]["name"]: n for n in json.loads(resp.data)["items"]}


def _gone_ok(call: Callable[..., Any], *args: str) -> None:
    try:
        call(*args, _request_timeout=T)
    except ApiException as exc:
        if exc.status != 404:
            raise


@dataclass
class Environment:
    """What stays up across seeds: the API client, the judge's extender, the Ballast view."""

    api: client.ApiClient
    extender: RecordingExtender
    view: BallastView
    runtime: Callable[[], Any]  # a context manager running an in-process Ballast scheduler


class _Run:
    """The namespaces and volumes of one phase, created and removed together."""

    def __init__(self, calls: Api, sc: scenario.Scenario, prefix: str) -> None:
        self.calls, self.sc, self.prefix = calls, sc, prefix
        self.namespaces = {
            logical: scenario.namespace_name(prefix, logical) for logical in sc.namespaces
        }
        self.pvs: dict = {}
        self.pvcs: dict = {}

    def __enter__(self) -> _Run:
        for logical, real in self.namespaces.items():
            ensure_namespace(self.calls.api, real, dict(self.sc.namespaces[logical]))
        self.pvs, self.pvcs = self.calls.create_volumes(self.sc.claims, self.prefix)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.calls.delete_volumes(self.pvs, self.pvcs)
        for real in self.namespaces.values():
            delete_namespace(self.calls.api, real)

    def objects(self) -> dict[str, list[str]]:
        return {
            "namespaces": list(self.namespaces.values()),
            "persistentvolumes": list(self.pvs),
            "persistentvolumeclaims": [f"{ns}/{name}" for ns, name in self.pvcs],
        }


def run_seed(
    env: Environment,
    seed: int,
    pods: int = 200,
    nodes: int = 24,
    validity: bool = True,
    say: Callable[[str], None] = lambda _: None,
) -> SeedResult:
    sc = scenario.generate(seed, pods, nodes)
    calls = Api(env.api)
    result = SeedResult(seed, pods)
    started = time.monotonic()
    names = create_nodes(env.api, sc.nodes)
    try:
        wait_ready(env.api, names)
        calls.ensure_storage_class()
        phase = _Phase(env, calls, sc, names, result, say)
        result.seconds["setup"] = time.monotonic() - started
        t0 = time.monotonic()
        with _Run(calls, sc, f"d{seed}-up") as run:
            _differential(phase, run)
        _wait_namespaces_gone(env.view, list(run.namespaces.values()))
        result.seconds["differential"] = time.monotonic() - t0
        if validity:
            t0 = time.monotonic()
            with _Run(calls, sc, f"d{seed}-bl") as run:
                _validity(phase, run)
            _wait_namespaces_gone(env.view, list(run.namespaces.values()))
            result.seconds["validity"] = time.monotonic() - t0
    finally:
        delete_nodes(env.api, names)
    result.seconds["total"] = time.monotonic() - started
    return result


@dataclass
class _Phase:
    """What both phases of one seed work with."""

    env: Environment
    calls: Api
    sc: scenario.Scenario
    node_names: list[str]
    result: SeedResult
    say: Callable[[str], None]


def _model(phase: _Phase, run: _Run) -> checker.Cluster:
    """The checker's picture of a phase's cluster, before any of its pods is placed."""
    return checker.Cluster(
        nodes=phase.calls.node_objects(),
        namespaces={real: dict(phase.sc.namespaces[lg]) for lg, real in run.namespaces.items()},
        claims=dict(run.pvcs),
        volumes=dict(run.pvs),
    )


def _differential(phase: _Phase, run: _Run) -> None:
    env, calls, sc, result = phase.env, phase.calls, phase.sc, phase.result
    placed: dict[str, str] = {}  # uid -> node, as the judge placed them
    order: list[tuple[int, str]] = []
    model = _model(phase, run)
    for i, (logical, pod, features) in enumerate(sc.pods):
        ns = run.namespaces[logical]
        body = scenario.pod_for_run(pod, run.prefix, "default-scheduler", gated=True)
        stored = calls.create_pod(ns, body)
        name, uid = stored["metadata"]["name"], stored["metadata"]["uid"]
        env.view.wait_caught_up(placed, phase.node_names, run.objects())
        ours = env.view.verdict(stored)
        calls.ungate(ns, name)
        outcome = calls.wait_outcome(ns, name)
        if outcome is None:
            result.mismatches.append(
                Mismatch(
                    seed=sc.seed,
                    index=i,
                    kind="no-verdict",
                    namespace=logical,
                    pod=pod,
                    features=features,
                    ballast_feasible=ours.feasible,
                    ballast_message=ours.message,
                    placed_before=list(order),
                    detail=[f"kube-scheduler decided nothing in {VERDICT_TIMEOUT:.0f} s"],
                )
            )
            calls.delete_pod(ns, name)
            continue
        up_nodes = env.extender.feasible(uid) or [] if outcome.node else []
        found = compare(
            sc.seed,
            i,
            logical,
            pod,
            features,
            (up_nodes, outcome.message),
            (ours.feasible, ours.message),
        )
        if outcome.node and outcome.node not in up_nodes:
            found = found or Mismatch(sc.seed, i, "feasible", logical, pod, features)
            found.detail.append(f"upstream bound it to {outcome.node}, outside its feasible set")
        # The checker's verdict on every node, for the record and to keep the checker honest:
        # wherever it disagrees with upstream, one of the two is wrong, and it is not upstream.
        checked = {n: checker.violations(model, stored, n) for n in sorted(model.nodes)}
        fine = sorted(n for n, problems in checked.items() if not problems)
        honest = None
        if fine != sorted(up_nodes):
            honest = Mismatch(sc.seed, i, "checker", logical, pod, features, sorted(up_nodes), fine)
            honest.upstream_message = outcome.message
        for m in (found, honest):
            if m is None:
                continue
            m.placed_before = list(order)
            for n in sorted(set(m.upstream_feasible) ^ set(m.ballast_feasible)):
                m.detail.append(f"checker on {n}: {'; '.join(checked[n]) or 'fits'}")
            result.mismatches.append(m)
            phase.say(m.render())
        if outcome.node:
            model.place(stored, outcome.node)
            placed[uid] = outcome.node
            order.append((i, outcome.node))
            result.upstream_bound += 1
        else:
            calls.delete_pod(ns, name)


def _validity(phase: _Phase, run: _Run) -> None:
    env, calls, sc, result = phase.env, phase.calls, phase.sc, phase.result
    cluster = _model(phase, run)
    with env.runtime():
        for i, (logical, pod, features) in enumerate(sc.pods):
            ns = run.namespaces[logical]
            body = scenario.pod_for_run(pod, run.prefix, "ballast", gated=False)
            stored = calls.create_pod(ns, body)
            outcome = calls.wait_outcome(ns, stored["metadata"]["name"])
            if outcome is None or not outcome.node:
                calls.delete_pod(ns, stored["metadata"]["name"])
                continue
            problems = checker.violations(cluster, stored, outcome.node)
            if problems:
                bad = Mismatch(sc.seed, i, "invalid", logical, pod, features)
                bad.detail = [f"ballast placed it on {outcome.node}: {p}" for p in problems]
                result.mismatches.append(bad)
                phase.say(bad.render())
            cluster.place(stored, outcome.node)
            result.ballast_bound += 1


def _wait_namespaces_gone(view: BallastView, namespaces: list[str], timeout: float = 30.0) -> None:
    """The Ballast cache must have dropped a finished phase's pods before the next one."""
    deadline = time.monotonic() + timeout
    while True:
        with view.cache.lock:
            left = sum(len(view.cache.index.in_namespace(ns)) for ns in namespaces)
        if not left:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{left} pods of {namespaces} still in the Ballast cache")
        time.sleep(0.05)
