"""Upstream kube-scheduler judges Ballast's filters on generated scenarios (issue 8's judge).

Per seed, 200+ generated pods over 24 kwok nodes in 3 zones, one pod at a time: upstream's
feasible set (read by a recording extender) and its reasons must equal Ballast's verdict on the
same cluster state, and every placement a real Ballast Runtime makes must pass the independent
checker. Any mismatch is printed with the pod and a command that replays the seed:
`python -m tests.differential --seed N --pods M`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from sandbox.cluster.controlplane import ControlPlane
from tests.differential.ballast_side import BallastView
from tests.differential.report import summary
from tests.differential.runner import Environment, run_seed
from tests.differential.upstream import RecordingExtender, start_judge, stop_judge
from tests.integration.scheduler_support import running

SEEDS = (11, 23, 37)
PODS = 210


@pytest.fixture(scope="module")
def judged(sandbox: ControlPlane, kube_api: client.ApiClient) -> Iterator[Environment]:
    """kube-scheduler (one process for the module) with the recording extender, and Ballast's
    view of the same apiserver."""
    extender = RecordingExtender()
    extender.start()
    view = BallastView(kube_api)
    try:
        start_judge(sandbox, extender)
        view.start()
        yield Environment(kube_api, extender, view, lambda: running(kube_api))
    finally:
        view.stop()
        stop_judge(sandbox)
        extender.stop()


@pytest.mark.parametrize("seed", SEEDS)
def test_ballast_agrees_with_kube_scheduler(judged: Environment, seed: int) -> None:
    result = run_seed(judged, seed, PODS)
    times = ", ".join(f"{k} {v:.1f} s" for k, v in result.seconds.items())
    print(f"seed {seed}: upstream bound {result.upstream_bound}/{PODS}, ballast bound "
          f"{result.ballast_bound}/{PODS}; {times}")  # fmt: skip
    # Both sides must have had real work: placements and refusals.
    assert 0 < result.upstream_bound < PODS
    report = "\n".join(m.render() for m in result.mismatches)
    assert not result.mismatches, f"{summary(result.mismatches)}\n{report}"
