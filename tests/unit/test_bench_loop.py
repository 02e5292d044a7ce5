"""bench.loop_inprocess: the whole loop in-process places every pod, and recording decisions
changes no placement."""

from bench import loop_inprocess


def _run(record: bool) -> tuple[int, str]:
    cycle, queue, binder = loop_inprocess.build(40, 120, record)
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
