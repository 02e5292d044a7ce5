"""The trace loader (both formats) and player, on small files the tests write."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from sandbox.load.simulator import NodeCapacity, PodUse, SimulatorConfig, node_loads
from sandbox.load.trace import STEP_SECONDS, TraceError, load
from sandbox.load.trace_player import (
    PlayerConfig,
    TracePlayer,
    day_start,
    deployment_of,
    replicas,
    select,
)

T0 = 1375308176
SUBSET_HEADER = (
    "vm_id,timestamp_s,step,cpu_cores,cpu_capacity_mhz,cpu_usage_mhz,mem_capacity_kb,mem_usage_kb"
)
ARCHIVE_HEADER = (
    "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\t"
    "CPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\t"
    "Disk read throughput [KB/s];\tDisk write throughput [KB/s];\t"
    "Network received throughput [KB/s];\tNetwork transmitted throughput [KB/s]"
)
# vm -> per step: (seconds after T0, cores, capacity MHz, usage MHz, memory KB, memory used KB)
ROWS = {
    "1": [(0, 2, 6000.0, 3000.0, 8192, 1024), (300, 2, 6000.0, 600.0, 8192, 2048),
          (900, 2, 6000.0, 6000.0, 8192, 9000)],  # step 2 missing; memory above capacity
    "2": [(2, 4, 8000.0, 200.0, 4096, 100), (301, 4, 8000.0, 400.0, 4096, 200),
          (598, 4, 8000.0, 8000.0, 4096, 300), (901, 8, 16000.0, 16000.0, 8192, 400)],
}  # fmt: skip


def write_subset(path: Path, rows=ROWS) -> Path:
    lines = [SUBSET_HEADER]
    for vm, samples in rows.items():
        for dt, cores, cap, use, mem, mem_use in samples:
            step = round(dt / 300)
            lines.append(f"{vm},{T0 + dt},{step},{cores},{cap},{use},{mem},{mem_use}")
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    return path


def write_archive(folder: Path, rows=ROWS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for vm, samples in rows.items():
        lines = [ARCHIVE_HEADER]
        for dt, cores, cap, use, mem, mem_use in samples:
            fields = [T0 + dt, cores, cap, use, 100 * use / cap, float(mem), float(mem_use)]
            lines.append(";\t".join(str(x) for x in fields + [0.0, 1.0, 2.0, 3.0]))
        path = folder / f"{vm}.csv.gz" if vm == "1" else folder / f"{vm}.csv"
        if vm == "1":
            with gzip.open(path, "wt") as f:
                f.write("\n".join(lines) + "\n")
        else:
            path.write_text("\r\n".join(lines) + "\r\n")  # CRLF line ends read the same
    return folder


@pytest.fixture(params=["subset", "subset-folder", "archive", "archive-file"])
def trace(request, tmp_path):
    if request.param == "subset":
        return load(write_subset(tmp_path / "vm_usage_x.csv.gz"))
    if request.param == "subset-folder":
        write_subset(tmp_path / "vm_usage_x.csv.gz")
        return load(tmp_path)
    if request.param == "archive":
        return load(write_archive(tmp_path / "2013-8"))
    write_archive(tmp_path / "2013-8")
    single = load(tmp_path / "2013-8" / "2.csv")
    assert list(single.vms) == ["2"]
    return load(tmp_path / "2013-8")


def test_both_formats_read_to_the_same_grid(trace):
    assert trace.start == T0 and trace.steps == 4
    one, two = trace.vms["1"], trace.vms["2"]
    # use in cores = usage MHz / (capacity MHz / cores)
    assert one.cpu_used.tolist() == pytest.approx([1.0, 0.2, 0.2, 2.0])  # step 2 repeats step 1
    assert one.memory_used_kb.tolist() == [1024, 2048, 2048, 8192]  # clipped to the capacity
    assert two.cpu_used.tolist() == pytest.approx([0.1, 0.2, 4.0, 8.0])
    assert two.cores.tolist() == [4, 4, 4, 8]
    assert two.request_cores == 4  # the most common, not the last
    assert two.request_memory_kb == 4096


def test_a_vm_starting_late_takes_its_first_sample_before(tmp_path):
    rows = {"1": ROWS["1"], "3": [(600, 1, 2000.0, 500.0, 1024, 10)]}
    trace = load(write_subset(tmp_path / "vm_usage_x.csv.gz", rows))
    assert trace.vms["3"].cpu_used.tolist() == pytest.approx([0.25] * 4)


@pytest.mark.parametrize(
    "line, error",
    [
        ("1,x,0,2,6000,10,1,1", "not a number"),
        ("1,1375308176,0,0,6000,10,1,1", "no provisioned CPU"),
        ("1,1375308176,0,2,6000,-1,1,1", "negative"),
        ("1,1375308176,0,2,6000,,1,1", "empty field"),
        ("1,1375308176,0,2,6000,nan,1,1", "not finite"),
    ],
)
def test_bad_subset_rows_name_file_and_line(tmp_path, line, error):
    path = tmp_path / "vm_usage_bad.csv"
    path.write_text(f"{SUBSET_HEADER}\n1,1375308176,0,2,6000,10,1,1\n{line}\n")
    with pytest.raises(TraceError, match=rf"vm_usage_bad.csv:3: .*{error}"):
        load(path)


def test_bad_archive_files_say_what(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "5.csv").write_text("time;\tcores\n1;\t2\n")
    with pytest.raises(TraceError, match="5.csv:1: expected a header"):
        load(tmp_path / "a")
    (tmp_path / "a" / "5.csv").write_text(f"{ARCHIVE_HEADER}\n1375308176;\t2;\t6000\n")
    with pytest.raises(TraceError, match="5.csv:2: 3 fields"):
        load(tmp_path / "a")
    with pytest.raises(TraceError, match="no such file"):
        load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match="neither"):
        load(tmp_path / "empty")


def player(trace, **kw) -> TracePlayer:
    base = {"noise": 0.0, "step_seconds": 2.0, "cpu_m_per_core": 100.0, "overcommit": 1.0}
    config = PlayerConfig(**{**base, **kw})
    return TracePlayer(trace, {"vm1": "1", "vm2": "2"}, config, first_step=1)


def test_player_replays_scaled_compressed_and_interpolated(trace):
    p = player(trace, cpu_m_per_core=100.0, memory_scale=0.5, overcommit=1.0)
    key = "ns/vm2-5d8f7c9b6-x2x4q"
    assert deployment_of(key) == "vm2"
    assert p.config.compression == STEP_SECONDS / 2.0
    # Before start: the first step, whatever the time.
    assert p.use(key, 1e9) == pytest.approx((20.0, 200 * 1024 * 0.5))
    p.start(1000.0)
    assert p.use(key, 1000.0) == pytest.approx((20.0, 200 * 1024 * 0.5))
    assert p.use(key, 1001.0)[0] == pytest.approx((0.2 + 4.0) / 2 * 100)  # half way to step 2
    assert p.use(key, 1002.0)[0] == pytest.approx(400.0)
    assert p.use(key, 5000.0)[0] == pytest.approx(800.0)  # past the end: the last step
    assert p.requests("2") == (400, 4096 * 1024 // 2)
    overcommitted = player(trace, cpu_m_per_core=100.0, memory_scale=0.5, overcommit=4.0)
    assert overcommitted.requests("2") == (100, 4096 * 1024 // 2)
    overcommitted.start(1000.0)
    assert overcommitted.use(key, 1001.0) == p.use(key, 1001.0)  # use does not shrink
    assert p.use("ns/other-5d8f7c9b6-x2x4q", 1001.0) is None
    assert p.use("ns/bare", 1001.0) is None


def test_replicas_share_the_series_with_their_own_noise(trace):
    p = player(trace, noise=0.1)
    p.start(0.0)
    a = [p.use("ns/vm2-h-aaaaa", 2.0 * s)[0] for s in range(3)]
    b = [p.use("ns/vm2-h-bbbbb", 2.0 * s)[0] for s in range(3)]
    base = [20.0, 400.0, 800.0]
    assert a != b
    for x, y, z in zip(a, b, base, strict=True):
        assert 0.9 * z <= x <= 1.1 * z and 0.9 * z <= y <= 1.1 * z
    # The same key and time: the same use (a benchmark recomputes an evicted pod's).
    again = player(trace, noise=0.1)
    again.start(0.0)
    assert again.use("ns/vm2-h-aaaaa", 2.0)[0] == a[1]


def test_simulator_takes_traced_pods_from_the_player(trace):
    p = player(trace)
    p.start(0.0)
    config = SimulatorConfig(
        seed=1, ramp_seconds=0, wobble=0, factor_min=1.0, factor_max=1.0,
        background={"n": (10.0, 10.0)}, trace=p,
    )  # fmt: skip
    nodes = {"n": NodeCapacity(1000, 1024**3)}
    pods = [PodUse("ns/vm2-h-aaaaa", "n", 400, 0, 0.0), PodUse("ns/bare", "n", 100, 0, 0.0)]
    cpu, _ = node_loads(nodes, pods, 2.0, config, clamp=False)["n"]
    assert cpu == pytest.approx(10.0 + 40.0 + 10.0)  # background + the trace's 400 m + 1x 100 m


def test_select_fills_the_budget_with_seeded_replicas(trace):
    config = PlayerConfig(cpu_m_per_core=400.0, overcommit=4.0)
    chosen = select(trace, 1000.0, config, seed=3)
    cost = sum(n * trace.vms[vm].request_cores * 100 for vm, n in chosen)
    assert 0 < cost <= 1000
    assert all(n == replicas(vm, 3) for vm, n in chosen)
    assert {replicas(str(v), 1) for v in range(30)} == {1, 2, 3}
    assert sorted(vm for vm, _ in select(trace, 1e9, config, seed=3)) == ["1", "2"]


def test_false_evictions_judged_by_the_node_with_the_pod_added_back(trace):
    from bench.rebalance import trace as rt

    p = player(trace)  # vm2 replays 20 m, then 400 m and 800 m (steps 1..3, 2 s each)
    p.start(0.0)
    node_m = 1000.0
    # Node 0 without the pod: 70 % throughout. With vm2's pod back it was 72 % at first
    # (never hot: false), 110 % and more two seconds on (hot throughout: justified).
    samples = [(float(t), [70.0, 10.0]) for t in range(0, 200)]
    early = {"time": 0.0, "from": "ballast-0", "pod": "vm2-h-aaaaa"}
    late = {"time": 2.0, "from": "ballast-0", "pod": "vm2-h-aaaaa"}
    bare = {"time": 2.0, "from": "ballast-0", "pod": "bare"}  # uses nothing the player knows
    assert rt.false_evictions(samples, [early], p, "ns", node_m) == 1
    assert rt.false_evictions(samples, [late], p, "ns", node_m) == 0
    assert rt.false_evictions(samples, [late, early, bare], p, "ns", node_m) == 2
    # On a 2-CPU node (the pod 20-40 %, the node over 80 % with it until it cools): falling
    # under the threshold later than one window does not make it false, earlier does.
    cooling = [(float(t), [70.0 if t < 2 + rt.WINDOW + 1 else 0.0]) for t in range(0, 200)]
    assert rt.false_evictions(cooling, [late], p, "ns", 2000.0) == 0
    cooling = [(float(t), [70.0 if t < 2 + rt.WINDOW - 1 else 0.0]) for t in range(0, 200)]
    assert rt.false_evictions(cooling, [late], p, "ns", 2000.0) == 1


def test_trace_windows_skip_the_first_day_and_bodies_name_the_vm(trace):
    from bench.rebalance import trace as rt
    from sandbox.load.trace import Trace

    week = Trace(trace.start, 7 * 288, trace.vms, "x")
    assert [day_start(week, s) for s in (1, 2, 6, 7)] == [288, 576, 1728, 288]
    body = rt.deployment("2", 3, "ballast", player(trace))
    assert body["metadata"]["name"] == "vm2" and body["spec"]["replicas"] == 3
    assert body["spec"]["selector"] == {"matchLabels": {"app": "vm2"}}
    container = body["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "400m", "memory": str(4096 * 1024 // 16)}
    assert rt.pdb("2")["spec"]["selector"] == {"matchLabels": {"app": "vm2"}}


def test_placement_trace_replicas_arrive_in_consecutive_waves(trace):
    from bench.placement import trace as pt
    from sandbox.load.trace import Trace

    week = Trace(trace.start, 7 * 288, trace.vms, "x")
    nodes, pods, waves, chosen = pt.plan(week, seed=1)
    assert len(nodes) == pt.NODES and len(pods) == len(waves) == sum(n for _, n in chosen)
    assert sum(p.cpu_m for p in pods) <= pt.FILL * pt.NODES * pt.NODE_CPU * 1000
    for shape in (pt.FULL, pt.QUICK):  # --quick's window: the same pods, fewer waves
        assert pt.plan(week, 1, shape)[:2] == (nodes, pods)
        _, _, waves, again = pt.plan(week, 1, shape)
        assert again == chosen
        for v, (_, n) in enumerate(chosen):
            mine = [w for p, w in zip(pods, waves, strict=True) if p.deployment == v]
            assert len(mine) == n and mine == list(range(mine[0], mine[0] + n))
            assert 0 <= mine[0] and mine[-1] < shape.waves
    with pytest.raises(ValueError, match="at least 3 waves"):
        pt.Shape(waves=2, gap=20.0, after=40.0)  # a three-replica workload would not fit
    series = [[95.0, 50.0], [101.0, 91.0]]
    got = pt.measure_over_time(series)
    assert got["node_seconds_over_100"] == 1 and got["node_seconds_over_90"] == 3
    assert got["max_cpu_over_time"] == [95.0, 101.0]
