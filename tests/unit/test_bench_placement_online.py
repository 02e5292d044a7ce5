"""bench.placement.online's replay and counting on a hand-made pool (no trace, no cluster)."""

from __future__ import annotations

import numpy as np

from bench.placement import online, policies
from bench.placement.pool import Known, Pool, ramped


def _pool(background: float = 500.0, ramp: float = 0.0) -> Pool:
    """Two 1000m nodes, 4 measured seconds after 2 before; pod 0 (600m) arrives at 0, pod 1
    (100m) at 1, of two workloads."""
    seconds, pre = 4, 2
    return Pool(
        capacity=np.array([1000.0, 1000.0]),
        memory=np.array([4e9, 4e9]),
        background=np.full((2, pre + seconds), background),
        use=np.array([[600.0] * (pre + seconds), [100.0] * (pre + seconds)]),
        requests=np.array([[100.0, 1e6], [100.0, 1e6]]),
        arrival=np.array([0.0, 1.0]),
        workload=np.array([0, 1]),
        history=np.zeros((2, 24)),
        seconds=seconds,
        pre=pre,
        ramp=ramp,
        hour=60.0,
    )


def _first_node(known: Known, j: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([1.0, 0.0]), np.ones(2, dtype=bool)


def test_counts_node_seconds_over_100_on_the_measured_grid() -> None:
    # node 0: 500 + 600 from second 0, + 100 from second 1: over 100 % in all 4 seconds;
    # node 1 stays at 500
    out = online.replay(_pool(), _first_node)
    assert out.over_100 == 4
    assert out.node_of.tolist() == [0, 0]
    assert out.pending == 0 and out.pending_seconds == 0.0
    assert round(out.hottest, 6) == 120.0


def test_exactly_100_percent_is_not_over() -> None:
    # 400 + 600 = 1000m on node 0 for seconds 0 (pod 1 not there yet): 100 %, not over;
    # from second 1, 1100m: over in seconds 1, 2 and 3
    assert online.replay(_pool(background=400.0), _first_node).over_100 == 3


def test_a_pod_no_node_takes_waits_and_counts_pending_seconds() -> None:
    def refuse_second(known: Known, j: int) -> tuple[np.ndarray, np.ndarray]:
        return np.array([0.0, 1.0]), np.ones(2, dtype=bool) if j == 0 else np.zeros(2, bool)

    out = online.replay(_pool(), refuse_second)
    assert out.node_of.tolist() == [1, -1]
    assert out.pending == 1
    assert out.pending_seconds == 3.0  # arrived at 1, still waiting at the end (4)
    assert out.over_100 == 4  # node 1: 500 + 600


def test_policies_see_only_the_past() -> None:
    seen: list[tuple[int, int, int, list[int]]] = []

    def record(known: Known, j: int) -> tuple[np.ndarray, np.ndarray]:
        bound = np.flatnonzero(known.node_of >= 0).tolist()
        seen.append((j, known.now, known.nodes.shape[1], bound))
        return np.zeros(2), np.ones(2, dtype=bool)

    online.replay(_pool(), record)
    # pod 0 at second 0: the 2 samples before the window, nothing bound; pod 1 at second 1:
    # one more sample, pod 0 bound
    assert seen == [(0, 0, 2, []), (1, 1, 3, [0])]


def test_ramp_as_the_simulator_ramps() -> None:
    # bound at second 1 with a 2 s ramp: 0 until 1, half at 2, full from 3
    use = np.full(6, 100.0)
    assert ramped(use, 1.0, 2, 2.0).tolist() == [0.0, 0.0, 0.0, 0.0, 50.0, 100.0]


def test_the_requests_term_keeps_room_for_requests() -> None:
    # two idle pods requesting 600m and 200m, node 1 busy (700m of use): by the predicted peak
    # alone both go to the idle node 0, which their requests fill to 80 %; with the requests
    # share beside the peak, the second goes to node 1 (70 % busy, 20 % requested)
    pool = _pool()
    pool = Pool(**{**pool.__dict__, "use": np.zeros_like(pool.use),
                   "background": np.array([[0.0] * 6, [700.0] * 6]),
                   "requests": np.array([[600.0, 1e6], [200.0, 1e6]])})  # fmt: skip
    assert online.replay(pool, policies.POLICIES["recent-3"]).node_of.tolist() == [0, 0]
    assert online.replay(pool, policies.POLICIES["recent-3-fit"]).node_of.tolist() == [0, 1]


def test_policies_are_chosen_by_name_or_pattern_in_their_order() -> None:
    every = ["lvrb", "recent-3", "aligned-3h-5m", "aligned-3h-5m-phase-2.5", "clairvoyant"]
    names, unknown = online.chosen("clairvoyant,aligned-*,lvrb,nope*", every)
    assert names == ["lvrb", "aligned-3h-5m", "aligned-3h-5m-phase-2.5", "clairvoyant"]
    assert unknown == ["nope*"]
