"""The demo's workload, its per-node table and its rebalancing report (the run itself is
`make demo`)."""

from __future__ import annotations

import math

from sandbox.demo import render_scale_up, render_table, workload
from sandbox.demo.rebalance import (
    Eviction,
    Rebalancing,
    match_replacements,
    moves,
    rebalancer_config,
    skip_counts,
    source_cpu,
)
from shared.quantities import cpu_millis


def test_workload_matches_what_the_demo_promises():
    deployments = [g.deployment() for g in workload.GROUPS]
    assert 36 <= sum(d["spec"]["replicas"] for d in deployments) <= 44
    assert len({d["metadata"]["name"] for d in deployments}) == len(deployments)
    for d in deployments:  # the selector picks exactly the template's pods
        assert (
            d["spec"]["selector"]["matchLabels"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        )
    pods = [d["spec"]["template"] for d in deployments]
    ballast = [p for p in pods if p["spec"].get("schedulerName") == workload.SCHEDULER_NAME]
    assert len(ballast) > len(pods) / 2
    assert any("resources" not in p["spec"]["containers"][0] for p in ballast)
    assert any("schedulerName" not in p["spec"] for p in pods)
    biggest = max(cpu_millis(n.cpu) for n in workload.NODES)

    def cpu(pod: dict) -> int:
        requests = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
        return cpu_millis(requests.get("cpu", 0))

    unfit = [p["metadata"]["labels"]["app"] for p in ballast if cpu(p) > biggest]
    assert unfit == [workload.UNPLACEABLE]
    pdb = workload.pdb_body()
    guarded = next(g for g in workload.GROUPS if g.name == workload.PDB[0])
    assert pdb["spec"]["selector"]["matchLabels"] == {"app": guarded.name}
    assert 0 < pdb["spec"]["minAvailable"] < guarded.replicas  # some disruptions allowed
    assert workload.SCALE_UP[0] in {g.name for g in workload.GROUPS if g.scheduler}
    assert len(workload.NODES) == 8 and len({n.cpu for n in workload.NODES}) >= 3
    assert set(workload.BUSY_NODES) <= {n.name for n in workload.NODES}


def test_scale_up_lists_nodes_idlest_first_with_their_new_replicas():
    nodes = workload.NODES[:3]
    loads = {
        "small-1": {"metrics": {"cpu": {"latest": 70.0}}},
        "small-2": {"metrics": {"cpu": {"latest": 12.5}}},
    }
    lines = render_scale_up(nodes, loads, {"small-2": 3}).splitlines()
    assert [line.split() for line in lines] == [
        ["small-2", "2c/4Gi", "CPU", "12.5", "%", "+3"],
        ["small-1", "2c/4Gi", "CPU", "70.0", "%", "-"],
        ["medium-1", "4c/16Gi", "CPU", "-", "%", "-"],
    ]


def test_table_rows_per_node_with_load_staleness_and_scores():
    nodes = workload.NODES[:3]
    loads = {
        "small-1": {"state": "fresh", "age": 1.4, "metrics": {
            "cpu": {"latest": 61.25, "avg": 50.0, "std": 4.0}, "memory": {"avg": 33.3}}},
        "small-2": {"state": "stale", "age": 40.0, "metrics": {"cpu": {"latest": 5.0}}},
    }  # fmt: skip
    text = render_table(nodes, {"small-1": 4}, loads, {"small-1": [71, 64, 80]})
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["NODE", "SIZE", "PODS"]
    assert lines[1].split() == ["small-1", "2c/4Gi", "4", "61.2", "50.0", "4.0", "33.3",
                                "fresh", "1s", "64-80"]  # fmt: skip
    assert lines[2].split() == ["small-2", "2c/4Gi", "0", "5.0", "-", "-", "-", "stale", "40s", "-"]
    assert lines[3].split() == ["medium-1", "4c/16Gi", "0", "-", "-", "-", "-", "no", "data", "-"]


def test_moves_are_each_pod_once_oldest_first():
    decisions = [
        {"action": "skip", "pod": "demo/a", "node": "n1", "reason": "no-target"},
        {"action": "would-evict", "pod": "demo/b", "node": "n1", "reason": "dry-run"},
        {"action": "evict", "pod": "demo/c", "node": "n2", "reason": "cpu-hot"},
        {"action": "would-evict", "pod": "demo/d", "node": "n2", "reason": "dry-run"},
        {"action": "would-evict", "pod": "demo/b", "node": "n1", "reason": "dry-run"},
    ]
    assert [d["pod"] for d in moves(decisions, "would-evict")] == ["demo/b", "demo/d"]
    assert [d["pod"] for d in moves(decisions, "evict")] == ["demo/c"]


def test_skips_are_counted_once_per_pod_and_reason_most_first():
    def skip(node: str, pod: str, reason: str) -> dict:
        return {"action": "skip", "node": node, "pod": pod, "reason": reason}

    decisions = [
        skip("n1", "demo/a", "opted-out"),
        skip("n1", "demo/a", "opted-out"),  # the next round says it again
        skip("n1", "demo/b", "opted-out"),
        skip("n2", "", "no-target"),
        {"action": "evict", "node": "n1", "pod": "demo/c", "reason": "cpu-hot"},
    ]
    assert skip_counts(decisions) == "opted-out x2, no-target x1"
    assert skip_counts([]) == ""


def test_each_eviction_gets_a_new_bound_pod_of_its_app_once():
    evictions = [
        Eviction("demo/api-1", "medium-2", "xlarge-1", "api"),
        Eviction("demo/web-1", "small-2", "large-1", "web"),
        Eviction("demo/web-2", "small-2", "large-1", "web"),
    ]
    before = {"api-1", "web-1", "web-2", "web-3"}
    pods = {
        "web-3": ("web", "small-1"),  # there before: not a replacement
        "api-9": ("api", "xlarge-1"),
        "web-8": ("web", ""),  # not bound yet
        "web-9": ("web", "small-2"),
    }
    match_replacements(evictions, before, pods)
    assert [(e.replacement, e.node) for e in evictions] == [
        ("api-9", "xlarge-1"),
        ("web-9", "small-2"),
        ("", ""),
    ]
    pods["web-8"] = ("web", "large-1")
    match_replacements(evictions, before, pods)
    assert [(e.replacement, e.node) for e in evictions][1:] == [
        ("web-9", "small-2"),
        ("web-8", "large-1"),
    ]


def test_the_loop_closes_when_every_node_acted_on_was_followed_and_nothing_bounced_back():
    def loop(evictions: list, relief: dict) -> bool:
        r = Rebalancing(*(None,) * 6, say=print)
        r.evictions, r.relief = evictions, relief
        return r.closed()

    moved = Eviction("demo/api-1", "medium-2", "xlarge-1", "api", 95.0, "api-9", "xlarge-1")
    back = Eviction("demo/api-2", "medium-2", "xlarge-1", "api", 95.0, "api-8", "medium-2")
    unbound = Eviction("demo/api-3", "medium-2", "xlarge-1", "api")
    assert loop([moved], {"medium-2": (95.0, 71.0, 20.0)})
    assert not loop([], {})  # nothing acted on
    # Still hot, followed: what stayed on it and why is printed (the judge refused the moves).
    assert loop([moved], {"medium-2": (95.0, 83.0, 90.0)})
    assert not loop([moved], {})  # not followed
    other = Eviction("demo/web-1", "small-1", "xlarge-1", "web", 91.0, "web-9", "large-1")
    assert loop([moved, other], {"medium-2": (95.0, 83.0, 90.0), "small-1": (91.0, 70.0, 30.0)})
    assert not loop([moved, other], {"medium-2": (95.0, 83.0, 9.0)})  # small-1 not followed
    assert not loop([moved, back], {"medium-2": (95.0, 71.0, 20.0)})
    assert not loop([moved, unbound], {"medium-2": (95.0, 71.0, 20.0)})


def test_the_demo_rebalancer_is_the_schedulers_file_plus_its_section():
    from scheduler.rebalancer import settings

    scheduler = {"watcherAddress": "http://w", "profiles": [{"schedulerName": "ballast"}]}
    for dry in (True, False):
        cfg = settings.parse(rebalancer_config(scheduler, dry_run=dry))
        assert cfg.rebalancer.dry_run is dry
        assert cfg.rebalancer.profile == "ballast"
        assert cfg.rebalancer.min_replicas == 2  # the safe defaults kept
        assert cfg.rebalancer.consecutive == 3
    assert "rebalancer" not in scheduler


def test_the_batch_workload_opts_out_of_rebalancing():
    stays = [g for g in workload.GROUPS if g.stays]
    assert [g.name for g in stays] == ["batch"]
    template = stays[0].deployment()["spec"]["template"]
    assert template["metadata"]["annotations"] == {"ballast.dev/rebalance": "false"}
    others = [g.deployment()["spec"]["template"] for g in workload.GROUPS if not g.stays]
    assert all("annotations" not in t["metadata"] for t in others)


def test_the_hot_nodes_cpu_is_read_from_the_moves_note():
    note = "medium-2 cpu 91.2% > high 80.0%; demo/api-1 predicted 26.5%; fits xlarge-1 (1% -> 2%)"
    assert source_cpu({"node": "medium-2", "detail": note}) == 91.2
    assert math.isnan(source_cpu({"node": "small-2", "detail": note}))
