"""bench.loop_ab's pure parts (reading the in-process benches' line, the variants, the summary),
and --gpu-load in bench.loop_inprocess and bench.perf_inprocess: GpuLoad in the profile takes
the same decisions for pods without GPUs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench import loop_ab, loop_inprocess, perf_inprocess


def test_reads_the_loops_line_and_refuses_output_without_it():
    out = "5000 nodes, 1000 pods: 12.345 ms CPU per pod, digest 0123abcd0123abcd\n"
    assert loop_ab.parse_line(out) == (12.345, "0123abcd0123abcd")
    perf = "topology: 5000 nodes, 5000 init, 2000 measured: 0.364 ms CPU per pod, 0 preempted, "
    assert loop_ab.parse_line(perf + "digest fe916061d616f1aa") == (0.364, "fe916061d616f1aa")
    with pytest.raises(ValueError, match="ms CPU per pod"):
        loop_ab.parse_line("Traceback ...")


def test_variants_name_a_tree_and_extra_arguments():
    name, tree, extra = loop_ab.parse_variant("head+gpu=/tmp/x:--gpu-load,--no-record")
    assert (name, tree, extra) == ("head+gpu", Path("/tmp/x"), ["--gpu-load", "--no-record"])
    assert loop_ab.parse_variant("before=/tmp/b")[2] == []
    for bad in ("/tmp/b", "=/tmp/b", "x="):
        with pytest.raises(argparse.ArgumentTypeError):
            loop_ab.parse_variant(bad)


def test_summary_is_medians_against_the_baseline():
    doc = loop_ab.summarize({"before": [10.0, 12.0, 11.0], "head": [11.0, 13.0, 12.1]}, "before")
    assert doc["before"]["median"] == 11.0 and doc["before"]["vs_before"] == 1.0
    assert doc["head"]["median"] == 12.1 and doc["head"]["vs_before"] == 1.1
    assert (doc["head"]["min"], doc["head"]["max"]) == (11.0, 13.0)


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
    loop = perf_inprocess.build("topology", 30, 30, gpu_load)
    names = [type(p).__module__ for p in loop.profile.filters]
    assert any(n.endswith("gpu_load") for n in names) == gpu_load
    for pod in perf_inprocess.measured_pods("topology", 60):
        loop.cycle(pod)
    return loop.trail.hexdigest()


def test_gpu_load_changes_no_decision_in_the_topology_shape_either():
    assert _perf_digest(True) == _perf_digest(False)
