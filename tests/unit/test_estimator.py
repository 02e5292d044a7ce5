"""The usage estimator: profile, previous revision, Koordinator's scaled requests, defaults; the
plugins that read it; the profiles client's parsing of bad answers."""

from __future__ import annotations

import pytest

from scheduler.backend.profiles_client import parse_profiles
from scheduler.framework import CycleState
from scheduler.framework.fields import Fields
from scheduler.framework.resources import pod_info
from scheduler.framework.workloads import (
    Percentiles,
    RevisionProfile,
    WorkloadProfile,
    WorkloadProfiles,
)
from scheduler.plugins import load_threshold, load_variation_risk_balancing, target_load_packing
from scheduler.plugins.helpers.estimator import (
    DEFAULT,
    PROFILE,
    PROFILE_PREVIOUS,
    REQUESTS,
    EstimatorArgs,
    estimate,
    parse_estimator_args,
    request_estimate,
)
from tests.unit.plugin_helpers import container, make_node, make_pod, snapshot, stats

MI = 1024**2
KEY = "ns/Deployment/web"


def replica(rev: str = "h2", cpu: str = "200m", memory: str = "256Mi") -> object:
    return pod_info(
        {
            "metadata": {
                "name": f"web-{rev}-x",
                "namespace": "ns",
                "uid": f"u-{rev}",
                "labels": {"pod-template-hash": rev},
                "ownerReferences": [
                    {"kind": "ReplicaSet", "name": f"web-{rev}", "controller": True, "uid": "r"}
                ],
            },
            "spec": {"containers": [container(cpu, memory)]},
        }
    )


def rev(cpu_p95: float, samples: int = 50, distinct: int = 5, mem: float = 100 * MI) -> object:
    return RevisionProfile(
        samples, distinct, 0.0, Percentiles(cpu_p95 / 2, cpu_p95, cpu_p95 * 1.2),
        Percentiles(mem / 2, mem, mem * 1.5),
    )  # fmt: skip


def profiles(**revisions: object) -> WorkloadProfiles:
    return WorkloadProfiles({KEY: WorkloadProfile("Deployment", dict(revisions), "h2")})


def test_koordinator_scaling_limits_and_defaults() -> None:
    assert request_estimate(make_pod(containers=[container("1", "1Gi")])) == request_estimate(
        make_pod(containers=[container("1000m", "1024Mi")])
    )
    e = request_estimate(make_pod(containers=[container("1", "1000Mi")]))
    assert (e.cpu_m, e.memory, e.source) == (850, 700 * MI, REQUESTS)
    # a limit above the request is the estimate itself
    e = request_estimate(make_pod(containers=[container("100m", limits={"cpu": "2"})]))
    assert e.cpu_m == 2000
    e = request_estimate(make_pod(containers=[container()]))
    assert (e.cpu_m, e.memory, e.source) == (250, 200 * MI, DEFAULT)


def test_profile_then_previous_revision_then_requests() -> None:
    pod = replica("h2")
    e = estimate(pod, profiles(h2=rev(900.0)))
    assert (e.cpu_m, e.memory, e.source, e.workload) == (900, 100 * MI, PROFILE, f"{KEY}@h2")
    e = estimate(pod, profiles(h2=rev(900.0, samples=3), h1=rev(600.0)))
    assert (e.cpu_m, e.source, e.workload) == (600, PROFILE_PREVIOUS, f"{KEY}@h1")
    e = estimate(pod, profiles(h2=rev(900.0, samples=3)))
    assert (e.cpu_m, e.source) == (170, REQUESTS)
    e = estimate(pod, profiles(h2=rev(900.0)), EstimatorArgs(statistic="p50"))
    assert e.cpu_m == 450
    assert estimate(pod, profiles(h2=rev(900.0)), EstimatorArgs(use_profiles=False)).cpu_m == 170


def test_a_profile_from_two_replicas_uses_its_max() -> None:
    e = estimate(replica("h2"), profiles(h2=rev(900.0, distinct=2)))
    assert e.cpu_m == 1080 and e.memory == 150 * MI


def test_a_pod_without_owner_or_profile_gets_the_callers_rule() -> None:
    bare = make_pod(containers=[container("200m")])
    assert estimate(bare, profiles(h2=rev(900.0)), fallback=(300, 0)).cpu_m == 300
    other = replica("h9")  # same Deployment, a revision nobody measured, no other revision
    assert estimate(other, WorkloadProfiles(), fallback=(300, 0)).source == REQUESTS


def test_args_section_parses_and_refuses() -> None:
    args = parse_estimator_args(
        Fields({"usageEstimate": {"statistic": "max", "minSamples": 3}}, "args")
    )
    assert args.statistic == "max" and args.min_samples == 3
    with pytest.raises(Exception, match="statistic"):
        parse_estimator_args(Fields({"usageEstimate": {"statistic": "p99"}}, "args"))
    with pytest.raises(Exception, match="bogus"):
        parse_estimator_args(Fields({"usageEstimate": {"bogus": 1}}, "args"))


def test_target_load_packing_scores_by_the_profile() -> None:
    node = make_node(cpu="4")
    snap = snapshot([node], {"n1": {"cpu": stats(avg=30.0)}})
    plugin = target_load_packing.Plugin()
    pod = replica("h2", cpu="200m")
    plain = plugin.score(CycleState(), pod, node, snap)
    snap.workloads = profiles(h2=rev(2000.0))
    heavy = plugin.score(CycleState(), pod, node, snap)
    assert heavy < plain  # 30 % + 2 cores is far past the 40 % target; 30 % + 300m is near it


def test_load_variation_risk_balancing_counts_the_profile() -> None:
    node = make_node(cpu="4", memory="4Gi")
    snap = snapshot([node], {"n1": {"cpu": stats(avg=30.0, std=5.0), "memory": stats(avg=20.0)}})
    plugin = load_variation_risk_balancing.Plugin()
    pod = replica("h2", cpu="200m", memory="100Mi")
    plain = plugin.score(CycleState(), pod, node, snap)
    snap.workloads = profiles(h2=rev(3000.0))
    assert plugin.score(CycleState(), pod, node, snap) < plain


def test_target_load_packing_orders_a_saturated_pass_by_the_profile() -> None:
    # orderSaturated: when every node would pass 100 % (upstream: all 0, a random tie), a
    # learned prediction ranks them by predicted use, the least overflow first
    nodes = [make_node(f"n{i}", cpu="1000m") for i in range(4)]
    loads = {n.name: {"cpu": stats(avg=a)} for n, a in zip(nodes, (70, 60, 90, 65), strict=True)}
    snap = snapshot(nodes, loads)
    snap.workloads = profiles(h2=rev(500.0))  # U = 120, 110, 140, 115
    pod = replica("h2", cpu="200m")
    plugin = target_load_packing.Plugin()
    assert plugin.score_all(CycleState(), pod, nodes, snap) == [67, 100, 0, 83]
    upstream = target_load_packing.Plugin(target_load_packing.Args(order_saturated="never"))
    assert upstream.score_all(CycleState(), pod, nodes, snap) == [0, 0, 0, 0]
    # score() on one node cannot rank: the plain formula
    assert [plugin.score(CycleState(), pod, n, snap) for n in nodes] == [0, 0, 0, 0]


def test_lvrb_orders_saturated_nodes_by_the_profiles_overflow() -> None:
    # mu = 1.15 and 1.25 kept unclamped for a learned prediction: the least overflow wins
    # (upstream, and a request-based prediction: 48 and 49, the deviation alone)
    node = make_node(cpu="1000m", memory="1Gi")
    pod = replica("h2", cpu="100m", memory="1Mi")
    args = load_variation_risk_balancing.Args()
    upstream = load_variation_risk_balancing.Args(order_saturated="never")
    got = {}
    for name, loads in (("low", stats(avg=85, std=4)), ("high", stats(avg=95, std=2))):
        snap = snapshot([node], {"n1": {"cpu": loads}})
        snap.workloads = profiles(h2=rev(300.0, mem=1 * MI))
        got[name] = tuple(
            load_variation_risk_balancing.Plugin(a).score(CycleState(), pod, node, snap)
            for a in (args, upstream)
        )
    assert (got["low"], got["high"]) == ((41, 48), (37, 49))


def test_a_profile_never_makes_the_load_threshold_refuse_what_requests_allow() -> None:
    node = make_node(cpu="4")
    plugin = load_threshold.Plugin(load_threshold.Args(cpu_threshold=80.0))
    pod = replica("h2", cpu="200m")  # TargetLoadPacking's rule: 300m
    snap = snapshot([node], {"n1": {"cpu": stats(avg=70.0)}})
    snap.workloads = profiles(h2=rev(3000.0))  # 70 % + 3 cores would be 145 %
    assert plugin.filter(CycleState(), pod, node, snap).ok
    # ... but a node full at the request-based figure stays full
    snap = snapshot([node], {"n1": {"cpu": stats(avg=79.0)}})
    snap.workloads = profiles(h2=rev(3000.0))
    assert not plugin.filter(CycleState(), pod, node, snap).ok
    # and a light profile lets a pod onto a node its requests would keep off
    snap.workloads = profiles(h2=rev(10.0))
    assert plugin.filter(CycleState(), pod, node, snap).ok


def test_profiles_client_keeps_good_workloads_and_drops_bad_ones() -> None:
    good = {"p50": 1, "p95": 2, "max": 3}
    doc = {
        "built": 5,
        "workloads": {
            KEY: {"current": "h2", "revisions": {
                "h2": {"samples": 12, "distinctPods": 3, "last": 4, "cpu": good, "memory": good},
                "h1": {"samples": 12, "cpu": {"p50": "NaN", "p95": 1, "max": 1}, "memory": good},
            }},
            "not-a-key": {"revisions": {}},
            "ns/Pod/x": {"current": "", "revisions": {"": {"samples": 1, "cpu": good}}},
        },
    }  # fmt: skip
    parsed = parse_profiles(doc)
    assert list(parsed.by_key) == [KEY] and list(parsed.by_key[KEY].revisions) == ["h2"]
    assert parsed.by_key[KEY].revisions["h2"].cpu_m.p95 == 2.0
    with pytest.raises(ValueError):
        parse_profiles(["nope"])


def test_profiles_client_etag_404_garbage_and_age() -> None:
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from scheduler.backend.profiles_client import ProfilesClient

    good = {"p50": 1, "p95": 2, "max": 3}
    doc = {"workloads": {KEY: {"current": "h2", "revisions": {
        "h2": {"samples": 12, "distinctPods": 3, "cpu": good, "memory": good}}}}}  # fmt: skip
    answers = [(200, json.dumps(doc)), (304, ""), (200, "not json"), (404, "{}")]
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.headers.get("If-None-Match"))
            status, body = answers.pop(0)
            self.send_response(status)
            self.send_header("ETag", '"v1"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        c = ProfilesClient(f"http://127.0.0.1:{server.server_address[1]}", timeout=2)
        assert c.refresh() and len(c.profiles()) == 1
        assert c.refresh() and seen[1] == '"v1"' and len(c.profiles()) == 1  # 304: kept
        assert c.refresh() and c.failures == 1 and len(c.profiles()) == 1  # garbage: kept
        assert not c.refresh() and len(c.profiles()) == 0  # 404: the watcher has none
        c.max_age, c._profiles = -1.0, parse_profiles(doc)
        assert len(c.profiles()) == 0  # not refreshed for too long
        c.stop()
    finally:
        server.shutdown()
        server.server_close()
