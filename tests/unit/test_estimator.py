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


def rev(
    cpu_p95: float, samples: int = 50, distinct: int = 5, mem: float = 100 * MI, last: float = 0.0
) -> object:
    return RevisionProfile(
        samples, distinct, last, Percentiles(cpu_p95 / 2, cpu_p95, cpu_p95 * 1.2),
        Percentiles(mem / 2, mem, mem * 1.5),
    )  # fmt: skip


def profiles(built: float = 0.0, held: float = 0.0, **revisions: object) -> WorkloadProfiles:
    """Revisions newest first, as the watcher lists them."""
    w = WorkloadProfile("Deployment", dict(revisions), next(iter(revisions), ""))
    return WorkloadProfiles({KEY: w}, built, held)


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


def test_an_idle_profile_predicts_its_floor() -> None:
    pod = replica("h2", cpu="500m")  # Koordinator's rule: 425m; the caller's here: 750m
    e = estimate(pod, profiles(h2=rev(5.0)), fallback=(750, 0))
    assert (e.cpu_m, e.source, e.floored) == (375, PROFILE, True)  # 0.5 x 750m, not 5m
    assert e.memory == 100 * MI  # memory is what the profile says
    assert "(CPU at the floor)" in e.describe()
    e = estimate(pod, profiles(h2=rev(5.0)))
    assert (e.cpu_m, e.floored) == (213, True)  # 0.5 x Koordinator's 425m, rounded
    e = estimate(pod, profiles(h2=rev(400.0)), fallback=(750, 0))
    assert (e.cpu_m, e.floored) == (400, False)  # above the floor: the profile itself
    e = estimate(pod, profiles(h2=rev(900.0, samples=3), h1=rev(5.0)), fallback=(750, 0))
    assert (e.cpu_m, e.source, e.floored) == (375, PROFILE_PREVIOUS, True)
    no_floor = EstimatorArgs(profile_floor=0.0)
    assert estimate(pod, profiles(h2=rev(5.0)), no_floor, fallback=(750, 0)).cpu_m == 5


def test_a_scale_out_of_an_idle_workload_spreads() -> None:
    # Eight replicas of a workload whose replicas measure 5m (request 500m: the rule's 750m is
    # 18.75 % of a node), placed one after the other by TargetLoadPacking, each counted on its
    # node as recently bound (as the cycle does). At ~0 each, all go to the node nearest the
    # 40 % target; at the floor (0.5 x 750m) they fill nodes up to the target and move on, and
    # when they wake up to the rule's figure no node passes 80 % (docs/profiles.md: 80 - B).
    background = (10, 20, 25, 30, 32, 35)

    def placed(args: EstimatorArgs) -> dict[int, int]:
        nodes = [make_node(f"n{i}", cpu="4") for i in range(len(background))]
        loads = {n.name: {"cpu": stats(avg=b)} for n, b in zip(nodes, background, strict=True)}
        snap = snapshot(nodes, loads, recent={})
        snap.workloads = profiles(h2=rev(5.0))
        plugin = target_load_packing.Plugin(target_load_packing.Args(estimator=args))
        count: dict[int, int] = {}
        for _ in range(8):
            pod = replica("h2", cpu="500m")
            scores = plugin.score_all(CycleState(), pod, nodes, snap)
            best = max(range(len(nodes)), key=lambda i: (scores[i], -i))
            count[best] = count.get(best, 0) + 1
            use = estimate(pod, snap.workloads, args, (750, 0)).cpu_m
            snap.recent_cpu_m[nodes[best].name] = snap.recent_cpu_m.get(nodes[best].name, 0) + use
        return count

    def woken(count: dict[int, int]) -> float:
        return max(background[i] + n * 18.75 for i, n in count.items())

    assert placed(EstimatorArgs(profile_floor=0.0)) == {5: 8}  # 35 + 8 x 18.75: 185 %
    floored = placed(EstimatorArgs())  # {0: 3, 1: 2, 2: 1, 3: 1, 4: 1}
    assert len(floored) >= 5 and woken(floored) <= 80, floored
    by_requests = placed(EstimatorArgs(use_profiles=False))  # two on n0 and n1, one elsewhere
    assert len(by_requests) == 6 and woken(by_requests) <= 80, by_requests


def test_a_profile_too_old_is_not_used() -> None:
    pod = replica("h2", cpu="200m")
    now = 10_000.0
    fresh, old = rev(900.0, last=now - 599), rev(900.0, last=now - 601)
    assert estimate(pod, profiles(now, h2=fresh)).source == PROFILE
    assert estimate(pod, profiles(now, h2=old)).source == REQUESTS
    # what the scheduler has held the document counts too
    assert estimate(pod, profiles(now - 2, held=2.0, h2=old)).source == REQUESTS
    assert estimate(pod, profiles(now - 2, held=1.0, h2=fresh)).source == PROFILE
    # an old own revision falls back on an older one only if that one is recent enough
    e = estimate(pod, profiles(now, h2=old, h1=rev(600.0, last=now - 10)))
    assert (e.cpu_m, e.source) == (600, PROFILE_PREVIOUS)
    assert estimate(pod, profiles(now, h2=old, h1=old)).source == REQUESTS
    assert estimate(pod, profiles(now, h2=old), EstimatorArgs(max_profile_age=0)).cpu_m == 900
    # a document without its time: the age is unknown, the profile is used
    assert estimate(pod, profiles(h2=old)).source == PROFILE


def test_the_previous_revision_is_only_an_older_one() -> None:
    # The watcher lists revisions newest first: h2 (the rollout's), then h1.
    newer_measured = profiles(h2=rev(2000.0), h1=rev(300.0, samples=3))
    old_pod, new_pod = replica("h1", cpu="200m"), replica("h2", cpu="200m")
    assert estimate(old_pod, newer_measured).source == REQUESTS  # never h2's figures
    older_measured = profiles(h2=rev(2000.0, samples=3), h1=rev(300.0))
    e = estimate(new_pod, older_measured)
    assert (e.cpu_m, e.source, e.workload) == (300, PROFILE_PREVIOUS, f"{KEY}@h1")
    # A revision the watcher does not list yet is newer than all it lists: the newest usable.
    e = estimate(replica("h3", cpu="200m"), profiles(h2=rev(2000.0), h1=rev(300.0)))
    assert (e.cpu_m, e.workload) == (2000, f"{KEY}@h2")


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
    args = parse_estimator_args(
        Fields({"usageEstimate": {"profileFloor": 0.25, "maxProfileAgeSeconds": 0}}, "args")
    )
    assert args.profile_floor == 0.25 and args.max_profile_age == 0
    for bad in ({"profileFloor": 1.5}, {"profileFloor": -0.1}, {"maxProfileAgeSeconds": -1}):
        with pytest.raises(Exception, match=next(iter(bad))):
            parse_estimator_args(Fields({"usageEstimate": bad}, "args"))
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
    # and a light profile lets a pod onto a node its requests would keep off (at 76 %: 76 +
    # 7.5 with the request rule's 300m; 76 + 3.75 with the profile's 10m under its floor, 150m)
    snap = snapshot([node], {"n1": {"cpu": stats(avg=76.0)}})
    snap.workloads = profiles(h2=rev(3000.0))
    assert not plugin.filter(CycleState(), pod, node, snap).ok
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
    h2 = {"samples": 12, "distinctPods": 3, "last": 5.0, "cpu": good, "memory": good}
    doc = {"built": 5.0, "workloads": {KEY: {"current": "h2", "revisions": {"h2": h2}}}}
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
        assert 0 <= c.profiles().held < 30 and c.profiles().built == 5.0
        assert estimate(replica("h2"), c.profiles()).source == PROFILE
        fetched = c._fetched_at
        assert c.refresh() and seen[1] == '"v1"' and len(c.profiles()) == 1  # 304: kept
        # ... but aging: the same document, held 601 s more, is past the estimator's limit
        assert c._fetched_at == fetched
        c._fetched_at -= 601
        assert c.profiles().held > 600
        assert estimate(replica("h2"), c.profiles()).source == REQUESTS
        assert c.refresh() and c.failures == 1 and len(c.profiles()) == 1  # garbage: kept
        assert not c.refresh() and len(c.profiles()) == 0  # 404: the watcher has none
        c.max_age, c._profiles = -1.0, parse_profiles(doc)
        assert len(c.profiles()) == 0  # not refreshed for too long
        c.stop()
    finally:
        server.shutdown()
        server.server_close()
