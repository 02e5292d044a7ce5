"""The demo's workload and its per-node table (the run itself is `make demo`)."""

from __future__ import annotations

from sandbox import demo_workload as workload
from sandbox.demo import render_table
from shared.quantities import cpu_millis


def test_workload_matches_what_the_demo_promises():
    pods = [p for g in workload.GROUPS for p in g.pods()]
    assert 36 <= len(pods) == workload.total_pods() <= 44
    assert len({p["metadata"]["name"] for p in pods}) == len(pods)
    ballast = [p for p in pods if p["spec"].get("schedulerName") == workload.SCHEDULER_NAME]
    assert len(ballast) > len(pods) / 2
    assert any("resources" not in p["spec"]["containers"][0] for p in ballast)
    assert any("schedulerName" not in p["spec"] for p in pods)
    biggest = max(cpu_millis(n.cpu) for n in workload.NODES)

    def cpu(pod: dict) -> int:
        requests = pod["spec"]["containers"][0].get("resources", {}).get("requests", {})
        return cpu_millis(requests.get("cpu", 0))

    unfit = [p for p in ballast if cpu(p) > biggest]
    assert [p["metadata"]["name"] for p in unfit] == ["huge-0"]
    assert len(workload.NODES) == 8 and len({n.cpu for n in workload.NODES}) >= 3
    assert set(workload.BUSY_NODES) <= {n.name for n in workload.NODES}


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
