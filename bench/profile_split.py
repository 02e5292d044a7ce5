"""Where a Ballast process's CPU went: py-spy's raw stacks (`bench.scheduler --profile`) split
into the parts of the runtime.

`python -m bench.profile_split STACKS[.gz] [--json OUT] [--leaves]`

py-spy leaves out threads it sees idle, but a thread blocked in a TLS read or a condition wait
still shows up; samples whose innermost frame is such a wait (WAITING) are counted apart, and
the shares are of the rest: the process's CPU, whichever thread spent it (on a loaded machine a
thread ready to run but not running is sampled too, so read shares, not seconds). A stack goes
to the first part, in the order of PARTS, whose marker is one of its frames: a binding's outcome
handler that writes an event counts as events, not bind; preemption's dry run (PostFilter) and
the evictor's writes count apart from the filter and the events; a watch event's handling counts
as cache updates, the reading and decoding of the line around it as watch decoding.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections import Counter
from pathlib import Path

from bench.provenance import write_result

# (part, frame markers): a frame matches when it contains the marker ("function (file").
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("imports", ("_find_and_load (",)),
    ("preemption dry run", ("_post_filter (scheduler/cycle.py",)),
    ("evictor", ("scheduler/kube/evictor.py",)),
    ("events", ("scheduler/kube/events.py",)),
    ("metrics client", ("scheduler/backend/metrics_client.py", "scheduler/backend/recent.py")),
    (
        "telemetry",
        ("prometheus_client/", "scheduler/serve/status.py", "scheduler/serve/httpserve.py"),
    ),
    ("cache updates", ("_pod_event (", "_node_event (", "_object_event (", "_replace_")),
    ("watch decoding", ("_watch (scheduler/backend/cache.py", "_list (scheduler/backend/cache.py")),
    ("filter", ("_filter (scheduler/cycle.py", "_nominated_fit (", "filter (scheduler/profile")),
    ("score", ("score (scheduler/framework/profile.py",)),
    ("bind", ("scheduler/kube/binder.py",)),
    ("cycle, other", ("scheduler/cycle.py",)),
    ("queue and loop", ("scheduler/backend/queue.py", "scheduler/runtime.py")),
)
OTHER = "other"
WAITING = (
    "SSLSocket.read (",
    "SSLSocket.recv_into (",
    "Condition.wait (",
    "Event.wait (",
    "select (",
    "do_poll (",
    "socket.accept (",
    "_wait_for_tstate_lock (",
    "_worker (concurrent/futures/thread.py",  # an idle pool thread, in SimpleQueue.get (C)
)
IDLE = "waiting"


def part_of(stack: str) -> str:
    frames = stack.split(";")
    if any(marker in frames[-1] for marker in WAITING):
        return IDLE
    for part, markers in PARTS:
        if any(marker in frame for frame in frames for marker in markers):
            return part
    return OTHER


def split(lines: list[str]) -> dict[str, int]:
    """Samples per part from py-spy's raw format: `frame;frame;... count` per line."""
    counts: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            counts[part_of(stack)] += int(count)
    return dict(counts)


def leaves(lines: list[str], part: str, top: int = 15) -> list[tuple[str, int]]:
    """The functions a part spends its samples in (the innermost frame of our code or
    the library's), for reading where to cut."""
    counts: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit() and part_of(stack) == part:
            counts[stack.split(";")[-1]] += int(count)
    return counts.most_common(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stacks", type=Path)
    parser.add_argument("--json", type=Path, default=None, help="write the split here too")
    parser.add_argument("--leaves", action="store_true", help="top leaf frames per part")
    args = parser.parse_args(argv)
    opener = gzip.open if args.stacks.suffix == ".gz" else open
    with opener(args.stacks, "rt", errors="replace") as f:
        lines = f.read().splitlines()
    counts = split(lines)
    waiting = counts.pop(IDLE, 0)
    total = sum(counts.values()) or 1
    print(f"{total} samples on the CPU, {waiting} waiting (left out)")
    shares = {
        part: {"samples": n, "percent": round(100 * n / total, 1)}
        for part, n in sorted(counts.items(), key=lambda kv: -kv[1])
    }
    for part, row in shares.items():
        print(f"{part:16} {row['samples']:7} {row['percent']:5.1f} %")
        if args.leaves:
            for frame, n in leaves(lines, part, 8):
                print(f"    {n:7}  {frame}")
    if args.json:
        doc = {"stacks": str(args.stacks), "samples": total, "waiting_samples": waiting}
        write_result(args.json, doc | {"parts": shares})
    return 0


if __name__ == "__main__":
    sys.exit(main())
