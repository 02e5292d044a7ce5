"""The time-aligned policies of bench/placement/policies.py on hand-made arrays: a node's peak
with a pod added, bucket by bucket, against the sum of each pod's most."""

from __future__ import annotations

import numpy as np

from bench.placement import policies
from bench.placement.pool import Known

HOUR = 60.0  # wall seconds a trace hour lasts: a trace step (5 minutes) is 5 s
STEPS = 288  # trace steps in the day before


def _known(
    history: np.ndarray,
    node_of: list[int],
    workload: list[int],
    now: int = 0,
    pods: np.ndarray | None = None,
    bound_at: list[float] | None = None,
) -> Known:
    """Two idle 2000m nodes (nothing unexplained), pods of the given workloads bound where
    `node_of` says (-1: the pod to place), 30 s of samples before the window."""
    n_pods, pre = len(node_of), 30
    return Known(
        now=now,
        pre=pre,
        hour=HOUR,
        capacity=np.array([2000.0, 2000.0]),
        memory=np.array([8e9, 8e9]),
        nodes=np.zeros((2, pre + now)),
        pods=np.zeros((n_pods, pre + now)) if pods is None else pods,
        node_of=np.array(node_of),
        bound_at=np.array(bound_at if bound_at is not None else [float(now)] * n_pods),
        requests=np.full((n_pods, 2), 100.0),
        workload=np.array(workload),
        history=history,
    )


def _peaks(at: dict[int, tuple[int, float]]) -> np.ndarray:
    """Per workload, 100m all day before but `value` at trace step `step` (from the day's end)."""
    history = np.full((len(at), STEPS), 100.0)
    for w, (step, value) in at.items():
        history[w, STEPS - step] = value
    return history


def _predicted(known: Known, j: int, **kwargs: object) -> np.ndarray:
    score, _ = policies.aligned_peak(known, j, fit=False, whole=False, **kwargs)
    return -score * known.capacity  # the predicted peak, millicores


def test_peaks_that_do_not_coincide_do_not_add() -> None:
    # workload 0 peaks at 800m 5 minutes before the window, workload 1 an hour earlier: with
    # one on the node, the other added peaks at 900m bucket by bucket, 1600m as a sum of maxima
    known = _known(_peaks({0: (1, 800.0), 1: (13, 800.0)}), [0, -1], [0, 1])
    aligned = _predicted(known, 1, hours=2, minutes=5)
    assert aligned.tolist() == [900.0, 800.0]  # node 1: the pod alone
    summed = _predicted(known, 1, hours=2, minutes=5, coincide=False)
    assert summed.tolist() == [1600.0, 800.0]


def test_peaks_that_coincide_add_as_the_sum_does() -> None:
    known = _known(_peaks({0: (1, 800.0), 1: (1, 800.0)}), [0, -1], [0, 1])
    assert _predicted(known, 1, hours=2, minutes=5)[0] == 1600.0
    assert _predicted(known, 1, hours=2, minutes=5, coincide=False)[0] == 1600.0


def test_a_replica_counts_as_its_workload_moving_together() -> None:
    # two replicas of workload 0 on node 0: its peak counted twice, in its own bucket
    known = _known(_peaks({0: (1, 800.0), 1: (13, 800.0)}), [0, 0, -1], [0, 0, 1])
    assert _predicted(known, 2, hours=2, minutes=5)[0] == 1700.0  # 800 + 800 + 100


def test_it_places_where_peaks_do_not_coincide() -> None:
    # node 0 holds workload 0 (peaks at 800m an hour before the new pod's workload 1), node 1
    # workload 2 (peaks at 600m with it): the sum of maxima picks node 1 (1400 < 1600), the
    # aligned sum node 0 (900 < 1400)
    known = _known(_peaks({0: (13, 800.0), 1: (1, 800.0), 2: (1, 600.0)}), [0, 1, -1], [0, 2, 1])
    best = {c: int(np.argmax(policies.aligned_peak(known, 2, hours=2, minutes=5,
                                                   coincide=c, fit=False)[0]))
            for c in (True, False)}  # fmt: skip
    assert best == {True: 0, False: 1}


def test_coarser_buckets_lose_the_alignment() -> None:
    # the two peaks 15 minutes apart: apart in 5-minute buckets, together in an hour's
    known = _known(_peaks({0: (1, 800.0), 1: (4, 800.0)}), [0, -1], [0, 1])
    assert _predicted(known, 1, hours=2, minutes=5)[0] == 900.0
    assert _predicted(known, 1, hours=2, minutes=60)[0] == 1600.0


def test_the_look_back_ends_the_history_it_reads() -> None:
    # workload 1's 800m is 3 hours back: outside a 2-hour look-back, inside a 3.5-hour one
    known = _known(_peaks({0: (1, 800.0), 1: (36, 800.0)}), [0, -1], [0, 1])
    assert _predicted(known, 1, hours=2, minutes=15)[0] == 900.0
    assert _predicted(known, 1, hours=2, minutes=15, coincide=False)[0] == 900.0
    assert _predicted(known, 1, hours=3.5, minutes=15, coincide=False)[0] == 1600.0


def test_bound_replicas_samples_follow_the_history() -> None:
    # 20 s into the window (the current 5-second bucket empty yet), a 35-minute look-back: two
    # trace steps of the day before, four buckets of the window. Pod 0 (workload 0) bound at 0
    # uses 1000m since; workload 1 used 800m then 100m before the window and has no replica
    # running: its window buckets are its most (800m) or, carried, its latest (100m)
    now, pre = 20, 30
    pods = np.zeros((2, pre + now))
    pods[0, pre:] = 1000.0
    history = np.full((2, STEPS), 200.0)
    history[1, STEPS - 2], history[1, STEPS - 1] = 800.0, 100.0
    known = _known(history, [0, -1], [0, 1], now=now, pods=pods, bound_at=[0.0, np.nan])
    series = policies.workload_series(known, hours=35 / 60, minutes=5)
    assert series.tolist() == [[200.0, 200.0, 1000.0, 1000.0, 1000.0, 1000.0],
                               [800.0, 100.0, 800.0, 800.0, 800.0, 800.0]]  # fmt: skip
    last = policies.workload_series(known, hours=35 / 60, minutes=5, fill="last")
    assert last[1].tolist() == [800.0, 100.0, 100.0, 100.0, 100.0, 100.0]
    assert _predicted(known, 1, hours=35 / 60, minutes=5)[0] == 1800.0
    assert _predicted(known, 1, hours=35 / 60, minutes=5, fill="last")[0] == 1100.0


def test_an_empty_current_bucket_is_left_out() -> None:
    # at the window's start the current bucket has no sample: the hours before are the
    # look-back, an empty bucket does not stand for every workload at its most
    known = _known(_peaks({0: (1, 800.0), 1: (13, 800.0)}), [0, -1], [0, 1])
    assert policies.workload_series(known, hours=2, minutes=60).shape == (2, 1)
    assert policies.workload_series(known, hours=1, minutes=60).tolist() == [[0.0], [0.0]]


def test_phase_moves_the_buckets_edges() -> None:
    # the peaks in the last and the third-last trace step: apart in 5-minute buckets in step,
    # in one 15-minute bucket in step, in two when it is 5 minutes out of step
    known = _known(_peaks({0: (1, 800.0), 1: (3, 800.0)}), [0, -1], [0, 1])
    assert _predicted(known, 1, hours=2, minutes=15)[0] == 1600.0
    assert _predicted(known, 1, hours=2, minutes=15, phase=5.0)[0] == 900.0


def test_n_sigma_adds_the_sums_deviation() -> None:
    # workload 0 at 800m the hour before the window, 100m before; workload 1 at 100m: the
    # node's sum is 200m in 11 five-minute buckets, 900m in 12. Its mean plus one deviation is
    # its max (900m), plus two more
    history = np.full((2, STEPS), 100.0)
    history[0, STEPS - 12 :] = 800.0
    known = _known(history, [0, -1], [0, 1])
    sums = policies.workload_series(known, hours=2, minutes=5).sum(axis=0)
    assert sums.tolist() == [200.0] * 11 + [900.0] * 12
    one, two = (_predicted(known, 1, hours=2, minutes=5, sigma=k)[0] for k in (1, 2))
    assert np.isclose(one, max(900.0, sums.mean() + sums.std()))
    assert np.isclose(two, sums.mean() + 2 * sums.std()) and two > 1200.0


def test_the_day_before_reads_the_coming_hours() -> None:
    # 30 s (half a trace hour) into the window: the day before's steps 6..29 for 2 hours
    history = np.zeros((1, STEPS))
    history[0, 5], history[0, 6], history[0, 29], history[0, 30] = 9.0, 1.0, 2.0, 9.0
    known = _known(history, [-1], [0], now=30, bound_at=[np.nan])
    assert policies.day_before_series(known, hours=2, minutes=60).tolist() == [[1.0, 2.0]]
