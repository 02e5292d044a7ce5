"""bench.placement.gpu's pure parts: the plan, the pod body, the measures and the goals."""

from __future__ import annotations

from bench.placement import gpu as pg
from sandbox.load import gpusim


def test_plan_is_seeded_and_mixes_training_with_inference():
    a, b = pg.plan(1), pg.plan(1)
    assert a == b and a != pg.plan(2)
    training = [p for p in a if p.training]
    assert len(training) == round(pg.TRAINING_SHARE * len(a))
    assert all(14 * 1024 <= p.memory_mib <= 28 * 1024 for p in training)
    assert all(p.memory_mib <= 9 * 1024 for p in a if not p.training)


def test_pod_body_asks_a_replica_and_declares_its_use():
    body = pg.pod_body("ballast-gpu", 3, pg.GpuPodPlan(True, 80.0, 20480.0))
    assert gpusim.pod_gpu(body) == gpusim.PodGpu(1, True, 20480.0, 80.0)
    assert body["spec"]["schedulerName"] == "ballast-gpu"


def test_measure_counts_hot_full_and_failed_gpus():
    big, small = pg.GpuPodPlan(True, 90.0, 30 * 1024.0), pg.GpuPodPlan(False, 20.0, 8 * 1024.0)
    on_gpu = {
        ("n0", 0): [(2.0, big), (1.0, small), (3.0, small)],  # 46 GiB: the last one fails
        ("n0", 1): [(1.0, small)],
    }
    got = pg.measure(on_gpu, pods=6, placed=4)
    assert got == {
        "hottest_gpu": 130.0,
        "gpus_over_95_memory": 1,
        "pods_not_started": 1,
        "pending": 2,
    }
    # bind order decides which pod fails: the big one, when it comes last
    on_gpu[("n0", 0)] = [(3.0, big), (1.0, small), (2.0, small)]
    assert pg.measure(on_gpu, 6, 4)["pods_not_started"] == 1


def test_goals_against_kube_scheduler():
    summary = {
        "ballast-gpu": {"hottest_gpu": 90, "gpus_over_95_memory": 1, "pods_not_started": 0},
        "kube-scheduler": {"hottest_gpu": 200, "gpus_over_95_memory": 2, "pods_not_started": 3},
    }
    assert pg.goals(summary) == {
        "no_pod_without_memory": True,
        "hottest_gpu_half": True,
        "gpus_over_95_half": True,
    }
    summary["ballast-gpu"]["gpus_over_95_memory"] = 2
    assert pg.goals(summary)["gpus_over_95_half"] is False
