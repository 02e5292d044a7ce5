"""The rebalance benchmark's decision records (bench/rebalance/decisions.py): each record kept
once across reads of the rebalancer's ring, a turned-over ring counted, the summary's counts,
first distinct decisions and sightings of hot nodes, the console's line; and eviction_nodes'
node indexes."""

from __future__ import annotations

from bench.rebalance import decisions
from bench.rebalance import run as rebalance
from scheduler.rebalancer.status import Decision, DecisionLog, StatusServer, Telemetry

CHANGE = 1000.0


def record(
    t: float,
    action: str = "skip",
    reason: str = "no-target",
    node: str = "ballast-3",
    pod: str = "rb-ballast/w1-abc-x",
    detail: str = "",
    target: str = "",
) -> dict:
    return {"time": t, "action": action, "node": node, "pod": pod, "reason": reason,
            "detail": detail, "target": target}  # fmt: skip


def test_node_index_is_the_pools_index_and_minus_one_for_none():
    assert rebalance.node_index("ballast-saturated-n1-3") == 3
    assert rebalance.node_index("none-0") == 0
    assert rebalance.node_index("") == -1


def test_overlapping_reads_keep_each_record_once_in_order():
    log = decisions.Log()
    ring = [record(CHANGE + i) for i in range(4)]
    log.add(ring[:3], size=3)  # the first read of a full ring: what came before may be lost
    log.add(ring[1:4], size=3)  # the ring moved on by one, its oldest seen before: no gap
    assert [r["time"] for r in log.records] == [CHANGE + i for i in range(4)]
    assert log.gaps == 1


def test_a_ring_turned_over_between_reads_is_a_gap():
    log = decisions.Log()
    log.add([record(CHANGE), record(CHANGE + 1)], size=3)  # not full: nothing lost
    log.add([record(CHANGE + 5), record(CHANGE + 6), record(CHANGE + 7)], size=3)
    assert log.gaps == 1 and len(log.records) == 5


def test_a_failed_read_is_counted_with_its_error_and_loses_nothing():
    log = decisions.Log()
    log.add([record(CHANGE)])
    log.failure("ConnectionError: " + "x" * 500)
    assert log.failed == 1 and len(log.records) == 1
    assert log.error.startswith("ConnectionError") and len(log.error) == decisions.ERROR_CHARS


def test_summary_counts_before_and_after_the_change_and_collapses_repeats():
    log = decisions.Log()
    log.add([
        record(CHANGE - 4, reason="scheduler-would-return-it"),
        record(CHANGE + 2),
        record(CHANGE + 4),  # the same skip in the next round
        record(CHANGE + 4, reason="scheduler-would-return-it", pod="rb-ballast/w2-def-y"),
        record(CHANGE + 6),
        record(CHANGE + 8, action="evict", reason="cpu-hot", pod="rb-ballast/w2-def-y",
               detail="ballast-3 cpu 104.0% > high 80.0%; " + "n" * 300, target="ballast-5"),
        record(CHANGE + 9, action="rest-ended", reason="hot-again", pod=""),
    ])  # fmt: skip
    s = decisions.summarise(log, CHANGE, rebalance.node_index)
    assert s["before_change"] == {"skip": {"scheduler-would-return-it": 1}}
    assert s["after_change"] == {
        "skip": {"no-target": 3, "scheduler-would-return-it": 1},
        "evict": {"cpu-hot": 1},
        "rest-ended": {"hot-again": 1},
    }
    first = s["first_after_change"]
    assert [(d["action"], d["reason"], d["n"]) for d in first] == [
        ("skip", "no-target", 3),
        ("skip", "scheduler-would-return-it", 1),
        ("evict", "cpu-hot", 1),
        ("rest-ended", "hot-again", 1),
    ]
    assert first[0]["t"] == 2.0 and first[0]["last"] == 6.0
    evicted = first[2]
    assert evicted["node"] == 3 and evicted["target"] == 5 and evicted["pod"] == "w2-def-y"
    assert len(evicted["note"]) == decisions.NOTE_CHARS
    assert first[0]["target"] == -1 and first[3]["pod"] == ""
    assert "failed_reads" not in s and "gaps" not in s


def test_summary_keeps_the_first_distinct_decisions_only():
    log = decisions.Log()
    log.add([record(CHANGE + i, pod=f"rb-ballast/w{i}-a-b") for i in range(10)])
    first = decisions.summarise(log, CHANGE, rebalance.node_index, first=4)["first_after_change"]
    assert [d["pod"] for d in first] == ["w0-a-b", "w1-a-b", "w2-a-b", "w3-a-b"]


def test_why_line_names_each_actions_reasons_most_first():
    log = decisions.Log()
    log.add([record(CHANGE + i) for i in range(14)]
            + [record(CHANGE + i, reason="scheduler-would-return-it") for i in range(3)]
            + [record(CHANGE + 20, action="evict", reason="cpu-hot")])  # fmt: skip
    line = decisions.why(decisions.summarise(log, CHANGE, rebalance.node_index))
    assert line == (
        "evicted: cpu-hot 1; skipped: no-target 14, scheduler-would-return-it 3; no node seen hot"
    )


def test_why_line_says_when_nothing_was_decided_or_read():
    log = decisions.Log(reads=2)
    log.add([record(CHANGE - 1)])
    log.failure("ReadTimeout: no answer")
    line = decisions.why(decisions.summarise(log, CHANGE, rebalance.node_index))
    assert line.startswith("no decision after the change; no node seen hot")
    assert line.endswith("1 of 2 reads failed: ReadTimeout: no answer")
    assert decisions.why(None) == ""


def test_reader_reads_the_rebalancers_own_endpoint_and_records_a_dead_one():
    ring = DecisionLog(size=5)
    status = {"leading": True, "lastRound": last_round(CHANGE + 1, hot={"ballast-1": 2})}
    server = StatusServer("127.0.0.1", 0, Telemetry(), ring, lambda: status, lambda: (True, "ok"))
    server.start()
    dead = StatusServer("127.0.0.1", 0, Telemetry(), ring, dict, lambda: (True, "ok"))
    dead_port = dead.port
    dead.stop()  # bound, never served, closed: its port refuses
    try:
        reader = decisions.Reader({"ballast": server.port, "ballast-aa": dead_port}, poll=60.0)
        for i in range(3):
            ring.add(Decision(CHANGE + i, "skip", "ballast-1", "rb-ballast/w0-a-b", "no-target"))
        reader.read_all()
        for i in range(3, 6):
            ring.add(Decision(CHANGE + i, "skip", "ballast-1", "rb-ballast/w0-a-b", "no-target"))
        reader.stop()  # the last read
    finally:
        server.stop()
    log = reader.logs["ballast"]
    assert [r["time"] for r in log.records] == [CHANGE + i for i in range(6)]
    assert log.reads == 2 and log.failed == 0
    assert decisions.sightings(log.rounds, CHANGE, rebalance.node_index) == {
        "1": {"hot": 1.0, "streak": 2}
    }
    failed = reader.logs["ballast-aa"]
    assert failed.reads == 2 and failed.failed == 2 and failed.records == []
    assert failed.error.startswith("/decisions: ConnectionError") and "/status: " in failed.error


def last_round(t: float, hot=(), confirmed=(), saturated=(), resting=None, leading=True) -> dict:
    """/status's lastRound as scheduler/rebalancer/rounds.py writes it."""
    return {"time": t, "leading": leading, "hot": dict(hot), "confirmed": list(confirmed),
            "saturated": {n: 3 for n in saturated}, "resting": dict(resting or {}),
            "high": 80.0, "low": 50.0}  # fmt: skip


def test_sightings_say_when_a_node_was_first_seen_hot_confirmed_and_resting():
    log = decisions.Log()
    log.saw({})  # before the first round: nothing to see
    log.saw(last_round(CHANGE - 2, hot={"ballast-3": 1}))  # before the change: not counted
    log.saw(last_round(CHANGE + 4, hot={"ballast-3": 1}))
    log.saw(last_round(CHANGE + 4, hot={"ballast-3": 1}))  # the same round read again
    log.saw(last_round(CHANGE + 10, hot={"ballast-3": 3, "ballast-5": 1},
                       confirmed=["ballast-3"], saturated=["ballast-3"]))  # fmt: skip
    # Node 3's rest from an eviction; node 6's recorded rest ended before the round.
    log.saw(last_round(CHANGE + 14, hot={"ballast-3": 4},
                       resting={"ballast-3": CHANGE + 60, "ballast-6": CHANGE}))  # fmt: skip
    s = decisions.summarise(log, CHANGE, rebalance.node_index)
    assert s["sightings"] == {
        "3": {"hot": 4.0, "streak": 4, "confirmed": 10.0, "saturated": 10.0, "resting": 14.0},
        "5": {"hot": 10.0, "streak": 1},
    }
    assert "standby_rounds" not in s
    assert decisions.why(s) == (
        "no decision after the change; seen: node 3 hot 4 s (streak 4), saturated 10 s, "
        "confirmed 10 s, resting 14 s, node 5 hot 10 s (streak 1), confirmed never"
    )


def test_rounds_read_as_standby_are_counted():
    log = decisions.Log()
    log.saw(last_round(CHANGE + 2, leading=False))
    log.saw(last_round(CHANGE + 4))
    s = decisions.summarise(log, CHANGE, rebalance.node_index)
    assert s["standby_rounds"] == 1 and decisions.why(s).endswith("1 rounds read as standby")
