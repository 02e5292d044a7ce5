"""The demo's workload and its per-node table (the run itself is `make demo`)."""

from __future__ import annotations

from sandbox import demo_workload as workload
from sandbox.demo import render_scale_up, render_table
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
