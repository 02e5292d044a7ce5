"""bench.scheduler.loop: the whole loop in-process places every pod, and recording decisions
changes no placement; its preemptor phase places every preemptor on the node it preempted on,
each victim gone from the cache. With --gpu-load (here and in bench.scheduler.inprocess), GpuLoad
in the profile takes the same decisions for pods without GPUs."""

from bench.scheduler import inprocess
from bench.scheduler import loop as loop_inprocess


def _run(record: bool) -> tuple[int, str]:
    cycle, queue, binder, _ = loop_inprocess.build(40, 120, record)
    done = 0
    while (pod := queue.pop(timeout=0)) is not None:
        cycle.schedule_one(pod)
        done += 1
    placed = sum(len(node.pods) for node in cycle.cache.node_list())
    assert placed == done
    return done, binder.trail.hexdigest()


def test_every_pod_placed_and_recording_changes_nothing() -> None:
    done, with_record = _run(True)
    assert done == 120
    assert _run(False) == (120, with_record)


def test_every_preemptor_bound_where_it_preempted() -> None:
    cycle, queue, binder, docs = loop_inprocess.build(20, 0, True, preempt=True)
    attempts = loop_inprocess.run_preemptors(cycle, queue, docs, 10)
    assert len(attempts) == 10 and all(a >= 2 for a in attempts)  # a preemption, then the bind
    nodes = {n.name: n for n in cycle.cache.node_list()}
    for i in range(10):
        uid = f"uid-high-{i:05d}"
        on = [name for name, node in nodes.items() if uid in node.pods]
        assert len(on) == 1
        # three 900m pods made room for 3 CPU: the node keeps one of them and the 100m pod
        assert sorted(p.requests["cpu"] for p in nodes[on[0]].pods.values()) == [100, 900, 3000]
    assert sum(len(n.pods) for n in nodes.values()) == 5 * 20 - 3 * 10 + 10


def _digest(gpu_load: bool) -> str:
    cycle, queue, binder, _ = loop_inprocess.build(40, 120, True, gpu_load=gpu_load)
    names = [type(p).__module__ for p in cycle.profiles["ballast"].filters]
    assert any(n.endswith("gpu_load") for n in names) == gpu_load
    while (pod := queue.pop(timeout=0)) is not None:
        cycle.schedule_one(pod)
    return binder.trail.hexdigest()


def test_gpu_load_in_the_profile_changes_no_decision_for_pods_without_gpus():
    assert _digest(True) == _digest(False)


def _perf_digest(gpu_load: bool) -> str:
    loop = inprocess.build("topology", 30, 30, gpu_load)
    names = [type(p).__module__ for p in loop.profile.filters]
    assert any(n.endswith("gpu_load") for n in names) == gpu_load
    for pod in inprocess.measured_pods("topology", 60):
        loop.cycle(pod)
    return loop.trail.hexdigest()


def test_gpu_load_changes_no_decision_in_the_topology_shape_either():
    assert _perf_digest(True) == _perf_digest(False)
