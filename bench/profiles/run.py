"""`python -m bench.profiles`: what workload profiles cost at 50,000 pods, in process and in Redis.

The watcher's side: 50,000 pods in workloads of `--replicas` replicas, polled until every
profile's ring is full (the worst case for memory); the pod poller's work per poll (group by
owner, add, trim, the JSON document, and every `PERSIST_EVERY` the rings), Python heap of the
profiles and of the pod -> workload map (tracemalloc), and the bytes Redis holds for them
(`MEMORY USAGE` of both keys on a real redis-server). The scheduler's side: parsing the
document, the heap it keeps, and one estimate per pod against today's request rule.
Results: bench/results/profiles.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from bench.harness import runguard
from bench.harness.common import RESULTS_DIR, sized
from bench.harness.provenance import write_result

RESULTS = RESULTS_DIR


def _heap(build) -> tuple[Any, int]:  # noqa: ANN001 (a zero-argument callable)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    obj = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return obj, after - before


def run(pods: int, replicas: int, polls: int) -> dict[str, Any]:
    from scheduler.backend.profiles_client import parse_profiles
    from scheduler.framework.resources import pod_info, predicted_cpu_m
    from scheduler.plugins.helpers.estimator import estimate
    from shared.workloads import Workload
    from watcher.podpoller import PodPoller
    from watcher.podusage import PodFetch
    from watcher.profiles import CAPACITY
    from watcher.store import MemoryStore

    workloads = pods // replicas
    names = [(f"ns{w % 50}", f"app{w}-{i}") for w in range(workloads) for i in range(replicas)]

    def owners_map() -> dict:
        revisions = [
            Workload(f"ns{w % 50}", "Deployment", f"app{w}", "5d4f8c7b9") for w in range(workloads)
        ]
        return {key: revisions[j // replicas] for j, key in enumerate(names)}  # fmt: skip

    owners, owners_bytes = _heap(owners_map)

    class Owners:
        def __init__(self) -> None:
            self.owners = owners

        def update(self, unknown: bool = False) -> None:
            return None

        def lookup(self, namespace: str, pod: str) -> Workload | None:
            return self.owners.get((namespace, pod))

    usage = {key: (100.0 + j % 700, 2.0e8 + j % 1000 * 1e5) for j, key in enumerate(names)}
    clock = [1.0e9]

    class Source:
        def fetch(self) -> PodFetch:
            clock[0] += 15.0
            return PodFetch(time=clock[0], usage=usage, rejected=Counter())

    store = MemoryStore(300.0)
    poller = PodPoller(Source(), Owners(), store, 3600.0, 15.0, 100_000)  # type: ignore[arg-type]
    seconds = []
    for _ in range(polls):
        poller._persisted = 0.0  # every poll writes the rings: the worst case
        started = time.perf_counter()
        poller.poll()
        seconds.append(time.perf_counter() - started)
    book = poller.book
    full = sum(r.count == CAPACITY for r in book.rings.values())
    _, book_bytes = _heap(lambda: __import__("copy").deepcopy(book))
    doc, rings = store.load_workloads()
    ring_bytes = sum(len(v) + len(k) for k, v in rings.items())
    redis_bytes = _redis_usage(doc or b"", rings)

    profiles, parsed_bytes = _heap(lambda: parse_profiles(json.loads(doc or b"{}")))
    started = time.perf_counter()
    parse_profiles(json.loads(doc or b"{}"))
    parse_seconds = time.perf_counter() - started
    sample = [
        pod_info({
            "metadata": {"name": f"app{w}-new", "namespace": f"ns{w % 50}", "uid": f"u{w}",
                         "labels": {"pod-template-hash": "5d4f8c7b9"},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": f"app{w}-5d4f8c7b9",
                                              "controller": True}]},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "200m"}}}]},
        })
        for w in range(0, workloads, max(1, workloads // 2000))
    ]  # fmt: skip
    est = _per_call(lambda p: estimate(p, profiles, fallback=(predicted_cpu_m(p), 0)), sample)
    # the memo: a PodInfo parses its owner once; the cycle calls estimate 2-3 times per pod
    est_again = _per_call(lambda p: estimate(p, profiles, fallback=(predicted_cpu_m(p), 0)), sample)
    base = _per_call(predicted_cpu_m, sample)
    return {
        "pods": pods,
        "replicas_per_workload": replicas,
        "workloads": workloads,
        "polls": polls,
        "rings_full": full,
        "watcher": {
            "poll_seconds_p50": round(statistics.median(seconds), 4),
            "poll_seconds_max": round(max(seconds), 4),
            "profiles_heap_bytes": book_bytes,
            "owner_map_heap_bytes": owners_bytes,
            "heap_bytes_per_pod": round((book_bytes + owners_bytes) / pods, 1),
            "doc_bytes": len(doc or b""),
            "ring_bytes": ring_bytes,
            "redis_memory_usage_bytes": redis_bytes,
            "redis_bytes_per_pod": None if redis_bytes is None else round(redis_bytes / pods, 1),
        },
        "scheduler": {
            "profiles_heap_bytes": parsed_bytes,
            "parse_seconds": round(parse_seconds, 4),
            "estimate_us_first": round(est * 1e6, 2),
            "estimate_us_again": round(est_again * 1e6, 2),
            "request_rule_us": round(base * 1e6, 2),
        },
    }


def _per_call(fn, items: list) -> float:  # noqa: ANN001
    started = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - started) / len(items)


def _redis_usage(doc: bytes, rings: dict[str, bytes]) -> int | None:
    """MEMORY USAGE of both keys on a throwaway redis-server (None when there is none)."""
    import shutil

    if shutil.which("redis-server") is None:
        return None
    import redis

    from sandbox.demo.stack import Stack

    with tempfile.TemporaryDirectory(prefix="ballast-profiles-") as tmp:
        stack = Stack(Path(tmp))
        try:
            client = redis.Redis.from_url(stack.start_redis(), socket_timeout=30)
            client.set("w", doc)
            for start in range(0, len(rings), 5000):
                chunk = dict(list(rings.items())[start : start + 5000])
                client.hset("r", mapping=chunk)
            return int(client.memory_usage("w", samples=0) + client.memory_usage("r", samples=0))
        finally:
            stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.profiles", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 pods, profiles-quick.json")
    parser.add_argument("--pods", type=int, default=None, help="default 50,000 (quick 5,000)")
    parser.add_argument("--replicas", type=int, default=10, help="pods per workload")
    parser.add_argument("--polls", type=int, default=70, help="enough to fill every ring")
    parser.add_argument("--out", type=Path, default=None, help="bench/results/profiles.json")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    runguard.start_run(parser, args.allow_dirty)
    sized(
        args,
        {"pods": 5_000, "out": RESULTS / "profiles-quick.json"},
        {"pods": 50_000, "out": RESULTS / "profiles.json"},
    )
    result = run(args.pods, args.replicas, args.polls)
    write_result(args.out, result)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
