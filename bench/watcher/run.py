"""`make bench-watcher`: the watcher at 5,000 synthetic nodes through a real Prometheus.

`make bench-watcher BENCH_ARGS=--quick` for 500 nodes and shorter load tests (about 2
minutes, bench/results/watcher-quick.json); `BENCH_ARGS="--nodes 10000"` for the large size
(its own goals, results in bench/results/watcher-10000.json). One synthetic exporter (5,000
nodes x 8 CPUs), one Prometheus scraping it every 5 s, one Redis.
After a full rate() window of samples:
- bare PromQL: the watcher's own queries sent straight to Prometheus (as curl would), both
  side by side as the poller sends them, and one after the other;
- poll cycle: the poller's whole tick (queries, validation, window statistics, snapshot, one
  pipelined Redis write), alternating with the bare queries so both see the same Prometheus;
- Redis memory per node with a full 5-minute window (20 frames at the default 15 s interval);
- `ballast watcher` (2 gunicorn workers) serving that snapshot: RSS, GET /watcher (all nodes)
  and GET /watcher?host= latency p50/p99 and requests/s under concurrent keep-alive clients.
JSON in bench/results/watcher.json.

`--store victoriametrics` or `--store thanos` asks the same data of another PromQL store (the
exporter scraped by VictoriaMetrics single node, or by a Prometheus behind a Thanos sidecar and
querier): results in watcher-<nodes>-<store>.json, side by side with Prometheus's in
docs/watcher.md (bench/watcher/plot.py draws them). `--clients` sets the keep-alive clients of
GET /watcher (all nodes); the 20,000-node goals are judged with 4.

`--vs-load-watcher` serves one Prometheus (with the recording rules load-watcher hard-codes)
with both paypal/load-watcher (built from its pinned Go module on first use,
sandbox/peers/loadwatcher/)
and `ballast watcher` on its `load-watcher` query preset, polling for itself as deployed (2
gunicorn workers), and measures GET /watcher (all nodes) with `--clients` (4) keep-alive clients,
the two taking turns, plus each one's RSS and how their answers differ: results in
watcher-vs-load-watcher[-<nodes>].json, the picture in docs/images/.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from bench.harness import runguard
from bench.harness.common import (
    RESULTS_DIR,
    child_pids,
    new_figure,
    process_rss_mb,
    redraw_option,
    save,
    sized,
)
from bench.harness.provenance import write_result
from sandbox.cluster import versions
from sandbox.load.exporter import SyntheticExporter
from sandbox.peers import loadwatcher
from tests.fixtures import victoriametrics
from tests.fixtures.loadwatcher import LOAD_WATCHER_RULES, LoadWatcher, RulesPrometheus
from tests.fixtures.ports import wait_for
from tests.fixtures.prometheus import PrometheusServer
from tests.fixtures.redis import RedisServer
from tests.fixtures.thanos import Shard, thanos_querier, thanos_sidecar
from tests.fixtures.watcher import WatcherProcess
from watcher import config as configuration
from watcher.nodenames import NodeNamer
from watcher.poller import Poller
from watcher.providers.prometheus import PrometheusProvider
from watcher.redis_store import RedisStore

RESULTS = RESULTS_DIR / "watcher.json"
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
PREFIX = "bench:"
GOALS = {"poll_vs_bare": 1.5, "poll_seconds": 1.0, "watcher_p99_ms": 50.0, "host_rps": 1000.0}
# The goals at 10,000 nodes: the whole-cluster answer is twice as big, so its p99 may be
# twice as long; no goal on the poll's absolute time, only against the bare PromQL.
GOALS_10K = {"poll_vs_bare": 1.5, "watcher_p99_ms": 100.0, "host_rps": 1000.0}
# At 20,000 nodes, on each store: GET /watcher p99 with 4 clients, RSS under 1 GB.
GOALS_20K = {"poll_vs_bare": 1.5, "watcher_p99_ms": 50.0, "host_rps": 1000.0, "rss_mb": 1024.0}
STORES = ("prometheus", "victoriametrics", "thanos")


def goals(
    nodes: int,
    poll_p50: float,
    bare_p50: float,
    p99_ms: float,
    host_rps: float,
    rss: float = 0.0,
) -> dict:
    """Each goal of the node count's set, met or not."""
    g = GOALS_20K if nodes >= 20000 else GOALS_10K if nodes >= 10000 else GOALS
    out = {
        f"poll_cycle <= {g['poll_vs_bare']}x bare PromQL": poll_p50 <= g["poll_vs_bare"] * bare_p50
    }
    if "poll_seconds" in g:
        out[f"poll_cycle <= {g['poll_seconds']:g} s"] = poll_p50 <= g["poll_seconds"]
    out[f"GET /watcher p99 <= {g['watcher_p99_ms']:g} ms"] = p99_ms <= g["watcher_p99_ms"]
    out[f"?host= >= {g['host_rps']:g} requests/s"] = host_rps >= g["host_rps"]
    if "rss_mb" in g:
        out[f"watcher RSS < {g['rss_mb']:g} MB"] = rss < g["rss_mb"]
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def summary(seconds: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(seconds), 4),
        "min": round(min(seconds), 4),
        "max": round(max(seconds), 4),
    }


def bare_queries(prom_url: str, queries: list[str]) -> tuple[float, float]:
    """(wall time side by side, sum of times one after the other) of the same queries."""
    session = requests.Session()

    def one(q: str) -> float:
        start = time.perf_counter()
        resp = session.get(f"{prom_url}/api/v1/query", params={"query": q}, timeout=60)
        resp.raise_for_status()
        resp.json()
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(len(queries)) as pool:
        list(pool.map(one, queries))
    parallel = time.perf_counter() - start
    sequential = sum(one(q) for q in queries)
    return parallel, sequential


def _client(args: tuple[str, int, str, float]) -> tuple[list[float], int]:
    host, port, path, duration = args
    conn = http.client.HTTPConnection(host, port, timeout=10)
    latencies = []
    deadline = time.perf_counter() + duration
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET {path}: {resp.status}")
        latencies.append(time.perf_counter() - start)
    conn.close()
    return latencies, len(latencies)


def load_test(port: int, paths: list[str], clients: int, duration: float) -> dict[str, float]:
    """Keep-alive clients in separate processes (so the client's GIL does not cap the rate)."""
    jobs = [("127.0.0.1", port, paths[i % len(paths)], duration) for i in range(clients)]
    with multiprocessing.get_context("fork").Pool(clients) as pool:
        results = pool.map(_client, jobs)
    latencies = [x for lat, _ in results for x in lat]
    return {
        "clients": clients,
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / duration, 1),
        "p50_ms": round(pct(latencies, 50) * 1000, 2),
        "p99_ms": round(pct(latencies, 99) * 1000, 2),
    }


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (gunicorn master + workers)."""
    return round(sum(process_rss_mb(p) or 0.0 for p in [pid, *child_pids(pid)]), 1)


def start_store(kind: str, tmp: Path, target: str) -> tuple[str, list[Any], str]:
    """(query URL, processes to stop last first, version) of a store scraping `target` every
    5 s."""
    if kind == "victoriametrics":
        vm = victoriametrics.start(tmp / "vm", [target], interval="5s")
        return vm.url, [vm], f"VictoriaMetrics {versions.VICTORIAMETRICS_VERSION} single node"
    prom_version = subprocess.run(
        ["prometheus", "--version"], capture_output=True, text=True, timeout=10
    ).stdout.split(" (")[0]
    if kind == "thanos":
        shard = Shard(tmp / "prom", "bench", [target], scrape_interval="5s")
        started: list[Any] = [shard.start()]
        try:
            started.append(thanos_sidecar(tmp / "sidecar", shard))
            started.append(thanos_querier(tmp / "querier", started[1:]))
        except BaseException:
            for process in reversed(started):
                process.stop()
            raise
        url = started[-1].url
        return url, started, f"Thanos {versions.THANOS_VERSION} querier + sidecar, {prom_version}"
    prom = PrometheusServer(tmp / "prom", [target], scrape_interval="5s").start()
    return prom.url, [prom], prom_version


def series(url: str, query: str) -> int:
    resp = requests.get(f"{url}/api/v1/query", params={"query": query}, timeout=60)
    resp.raise_for_status()
    return len(resp.json()["data"]["result"])


def started_exporter(nodes: int, cpus: int, rng: random.Random) -> SyntheticExporter:
    """The synthetic exporter serving `nodes` nodes at loads drawn from `rng`."""
    exporter = SyntheticExporter(cpus=cpus)
    for i in range(nodes):
        exporter.set(f"node-{i:05d}", cpu=rng.uniform(5, 95), memory=rng.uniform(10, 90))
    return exporter.start()


def run(
    nodes: int, cpus: int, rounds: int, duration: float, kind: str = "prometheus", clients: int = 2
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="ballast-bench-watcher-"))
    load_start = round(os.getloadavg()[0], 2)
    rng = random.Random(1)
    exporter = started_exporter(nodes, cpus, rng)
    redis = RedisServer(tmp / "redis").start()
    redis_baseline = redis.client().info("memory")["used_memory"]
    url, processes, store_version = start_store(kind, tmp, exporter.target)
    watcher_proc: WatcherProcess | None = None
    try:
        cfg = configuration.load(
            env={},
            overrides={
                "prometheus_url": url,
                "redis_url": redis.url,
                "key_prefix": PREFIX,
                "warm_start": False,
                "lock_ttl": 3600.0,
                # The bare queries wait up to 60 s; so does the poll, or a loaded machine at
                # 20,000 nodes measures the timeout instead of the poll.
                "provider_timeout": 60.0,
            },
        )
        specs = cfg.metric_specs()
        print(f"waiting for {nodes} nodes x {cpus} CPUs in {kind} ...", flush=True)
        wait_for(lambda: series(url, specs[1].query) >= nodes, timeout=300, what="every node")
        time.sleep(65)  # a full 1m rate() range, so the CPU query does its real work

        provider = PrometheusProvider(cfg, specs)
        store = RedisStore(cfg.redis_url, cfg.key_prefix, cfg.window)
        poller = Poller(cfg, provider, store, NodeNamer(), holder="bench")
        queries = [s.query for s in specs]
        poller.tick()  # takes the lock; its first frame
        bare_par, bare_seq, ticks, own_cpu = [], [], [], []
        for _ in range(rounds):
            par, seq = bare_queries(url, queries)
            bare_par.append(par)
            bare_seq.append(seq)
            start, cpu = time.perf_counter(), time.thread_time()
            poller.tick()
            ticks.append(time.perf_counter() - start)
            # This thread's CPU: the poll's own work (the queries wait on threads of their
            # own), hardly moved by what else the machine runs, unlike the wall time.
            own_cpu.append(time.thread_time() - cpu)
        if poller.last_poll.get("ok") is not True:
            raise RuntimeError(f"poll failed: {poller.last_poll}")
        reported = len(json.loads(store.load_snapshot())["nodes"])

        # Fill a whole default window: 20 frames (300 s / 15 s).
        while len(poller.window) < 20:
            poller.tick()
        info = redis.client().info("memory")
        frame_key = redis.client().zrange(store.keys.frames, -1, -1)[0].decode()
        frame_bytes = redis.client().memory_usage(store.keys.frame(frame_key))
        snapshot_bytes = redis.client().memory_usage(store.keys.snapshot)

        # Warm start: what a fresh watcher pays once to backfill 5 minutes from Prometheus.
        start = time.perf_counter()
        history = provider.history(time.time() - cfg.window, time.time(), cfg.poll_interval)
        warm_start = time.perf_counter() - start

        # The API, served by `ballast watcher` from the same Redis; the bench keeps the lock so
        # the snapshot stays the one measured above.
        watcher_proc = WatcherProcess(
            tmp / "watcher",
            url,
            redis.url,
            key_prefix=PREFIX,
            workers=2,
            threads=4,
            poll_interval=15.0,
            snapshot_check=0.25,
        ).start()
        wait_for(lambda: watcher_proc.get("/watcher").status_code == 200, 30, what="/watcher")
        all_nodes = load_test(watcher_proc.port, ["/watcher"], clients=clients, duration=duration)
        hosts = [f"/watcher?host=node-{i:05d}" for i in rng.sample(range(nodes), 64)]
        one_node = load_test(watcher_proc.port, hosts, clients=4, duration=duration)
        api_nodes = load_test(watcher_proc.port, ["/api/v1/nodes"], clients=2, duration=duration)
        body = requests.get(f"{watcher_proc.url}/watcher", timeout=10).content
        rss = rss_mb(watcher_proc.proc.pid)
        poller.stop()
        provider.close()

        poll_p50 = statistics.median(ticks)
        bare_p50 = statistics.median(bare_par)
        return {
            "machine": machine(load_start),
            "setup": {
                "store": kind,
                "store_version": store_version,
                "nodes": nodes,
                "cpus_per_node": cpus,
                "scrape_interval": "5s",
                "rounds": rounds,
                "queries": queries,
            },
            "nodes_reported": reported,
            "rejected_samples": dict(poller.rejected),
            "bare_promql_seconds": {
                "side_by_side": summary(bare_par),
                "one_after_the_other": summary(bare_seq),
            },
            "poll_cycle_seconds": summary(ticks),
            "poll_own_cpu_seconds": summary(own_cpu),
            "poll_vs_bare_promql": round(poll_p50 / bare_p50, 2),
            "warm_start_seconds": round(warm_start, 3),
            "warm_start_frames": len(history),
            "redis": {
                "used_memory_bytes": info["used_memory"] - redis_baseline,
                "bytes_per_node_full_window": round(
                    (info["used_memory"] - redis_baseline) / nodes, 1
                ),
                "frame_bytes": frame_bytes,
                "frame_bytes_per_node": round(frame_bytes / nodes, 1),
                "snapshot_bytes": snapshot_bytes,
                "frames_in_window": len(poller.window),
            },
            "watcher_rss_mb_master_plus_2_workers": rss,
            "watcher_body_bytes": len(body),
            "http": {
                "GET /watcher (all nodes)": all_nodes,
                "GET /watcher?host=": one_node,
                "GET /api/v1/nodes": api_nodes,
            },
            "goals": goals(
                nodes, poll_p50, bare_p50, all_nodes["p99_ms"], one_node["requests_per_s"], rss
            ),
        }
    finally:
        if watcher_proc is not None:
            watcher_proc.stop()
        for process in reversed(processes):
            process.stop()
        redis.stop()
        exporter.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def node_values(doc: dict[str, Any]) -> dict[str, dict[str, float]]:
    """node -> {"<type> <operator>": value} of a load-watcher-format /watcher answer."""
    return {
        node: {f"{m['type']} {m['operator']}": m["value"] for m in entry.get("metrics") or []}
        for node, entry in doc["data"]["NodeMetricsMap"].items()
    }


def compare_answers(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """How Ballast's /watcher and load-watcher's differ on the same data: window, nodes, the
    metrics each gives a node, and the largest gap between values both give."""
    a, b = node_values(ours), node_values(theirs)
    common = sorted(set(a) & set(b))
    gaps: dict[str, float] = {}
    for node in common:
        for key in set(a[node]) & set(b[node]):
            gaps[key] = max(gaps.get(key, 0.0), abs(a[node][key] - b[node][key]))
    return {
        "window": {
            "ballast": ours["window"]["duration"],
            "load-watcher": theirs["window"]["duration"],
        },
        "source": {"ballast": ours.get("source"), "load-watcher": theirs.get("source")},
        "nodes": {"ballast": len(a), "load-watcher": len(b), "both": len(common)},
        "metrics_per_node": {
            "ballast": sorted({k for v in a.values() for k in v}),
            "load-watcher": sorted({k for v in b.values() for k in v}),
        },
        "max_abs_difference_points": {k: round(v, 3) for k, v in sorted(gaps.items())},
    }


def run_vs_load_watcher(
    nodes: int, cpus: int, duration: float, clients: int = 4, rounds: int = 2
) -> dict[str, Any]:
    lw_binary = loadwatcher.ensure_built()
    tmp = Path(tempfile.mkdtemp(prefix="ballast-bench-vs-lw-"))
    load_start = round(os.getloadavg()[0], 2)
    rng = random.Random(1)
    exporter = started_exporter(nodes, cpus, rng)
    redis = RedisServer(tmp / "redis").start()
    prom = RulesPrometheus(tmp / "prom", [exporter.target], scrape_interval="5s").start()
    lw: LoadWatcher | None = None
    ours: WatcherProcess | None = None
    try:
        print(f"waiting for the rules over {nodes} nodes x {cpus} CPUs ...", flush=True)
        for rule in LOAD_WATCHER_RULES:
            wait_for(lambda r=rule: series(prom.url, r) >= nodes, timeout=600, what=rule)
        # load-watcher fetches once before it listens, then once a minute: start it on
        # complete rules so its first answer has every node.
        lw = LoadWatcher(tmp / "load-watcher", prom.url).start()
        lw_url = f"http://127.0.0.1:{loadwatcher.PORT}/watcher"

        def lw_nodes() -> bool:
            if (tail := lw.exited()) is not None:
                raise RuntimeError(f"load-watcher exited: {tail}")
            resp = requests.get(lw_url, timeout=30)
            return resp.status_code == 200 and len(node_values(resp.json())) >= nodes

        wait_for(lw_nodes, timeout=300, what="every node in load-watcher")
        ours = WatcherProcess(
            tmp / "watcher",
            prom.url,
            redis.url,
            key_prefix=PREFIX,
            query_preset="load-watcher",
            workers=2,
            threads=4,
            poll_interval=15.0,
            poll_jitter=0.0,
            lock_ttl=15.0,
            snapshot_check=0.25,
            provider_timeout=60.0,
            warm_start=False,
        ).start()

        def our_nodes() -> bool:
            resp = ours.get("/watcher", timeout=30)
            return resp.status_code == 200 and len(node_values(resp.json())) >= nodes

        wait_for(our_nodes, timeout=300, what="every node in ballast watcher")
        # Two of Ballast's polls in the window, so both answers average more than one sample.
        time.sleep(20)
        lw_doc = requests.get(lw_url, timeout=30).json()
        our_resp = ours.get("/watcher", timeout=30)
        answers = compare_answers(our_resp.json(), lw_doc)
        body_bytes = {
            "ballast": len(our_resp.content),
            "load-watcher": len(requests.get(lw_url, timeout=30).content),
        }
        measured: dict[str, list[dict[str, float]]] = {"ballast": [], "load-watcher": []}
        for _ in range(rounds):  # taking turns, so both see the same machine
            measured["load-watcher"].append(
                load_test(loadwatcher.PORT, ["/watcher"], clients=clients, duration=duration)
            )
            measured["ballast"].append(
                load_test(ours.port, ["/watcher"], clients=clients, duration=duration)
            )
        rss = {"ballast": rss_mb(ours.proc.pid), "load-watcher": rss_mb(lw.proc.pid)}
        best = {k: max(v, key=lambda r: r["requests_per_s"]) for k, v in measured.items()}
        ratio = best["ballast"]["requests_per_s"] / best["load-watcher"]["requests_per_s"]
        prom_version = subprocess.run(
            ["prometheus", "--version"], capture_output=True, text=True, timeout=10
        ).stdout.split(" (")[0]
        return {
            "machine": machine(load_start),
            "setup": {
                "nodes": nodes,
                "cpus_per_node": cpus,
                "store_version": prom_version,
                "scrape_and_rule_interval": "5s",
                "recording_rules": LOAD_WATCHER_RULES,
                "load_watcher": f"github.com/paypal/load-watcher v{versions.LOAD_WATCHER_VERSION}"
                f" ({lw_binary.name}, GOMAXPROCS default)",
                "ballast": "ballast watcher, query_preset load-watcher, 2 gunicorn workers x 4"
                " threads, polling itself every 15 s, Redis",
                "clients": clients,
                "seconds_per_load_test": duration,
                "rounds": rounds,
            },
            "http": {"GET /watcher (all nodes)": measured},
            "best_round": best,
            "throughput_ratio_ballast_over_load_watcher": round(ratio, 2),
            "rss_mb": rss,
            "body_bytes": body_bytes,
            "answers": answers,
            "goals": {"GET /watcher throughput >= 3x load-watcher's": ratio >= 3.0},
        }
    finally:
        if ours is not None:
            ours.stop()
        if lw is not None:
            lw.stop()
        prom.stop()
        redis.stop()
        exporter.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def machine(load_start: float) -> dict[str, Any]:
    """The cores, Python and the load average at the start and now: other work on the machine
    slows Prometheus and the poller alike, so a result is judged by it."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m_at_start_and_end": [load_start, round(os.getloadavg()[0], 2)],
    }


def picture_path(result: Path) -> Path:
    """docs/images/ for a result in bench/results/, else beside the result."""
    folder = IMAGES if result.resolve().parent == RESULTS.parent else result.parent
    return folder / result.with_suffix(".png").name


def draw_vs_load_watcher(doc: dict[str, Any], path: Path) -> Path:
    """Requests/s of each round per watcher, labelled with p50/p99 and RSS."""
    fig, ax = new_figure(6.4, 4.0)
    rounds = doc["http"]["GET /watcher (all nodes)"]
    width = 0.8 / max(len(r) for r in rounds.values())
    for i, runs in enumerate(rounds.values()):
        for j, run_ in enumerate(runs):
            x = i + (j - (len(runs) - 1) / 2) * width
            label = f"turn {j + 1}" if i == 0 else None
            ax.bar(x, run_["requests_per_s"], width * 0.9, color=f"C{j}", label=label)
            text = f"p50 {run_['p50_ms']:g}\np99 {run_['p99_ms']:g} ms"
            ax.annotate(text, (x, run_["requests_per_s"]), ha="center", va="bottom", fontsize=7)
    names = [f"{n}\nRSS {doc['rss_mb'][n]:.0f} MB" for n in rounds]
    ax.set_xticks(range(len(rounds)), names)
    ax.set_ylabel("requests/s")
    setup = doc["setup"]
    ax.set_title(f"GET /watcher (all {setup['nodes']:,} nodes), {setup['clients']} clients, "
                 f"same Prometheus: {doc['throughput_ratio_ballast_over_load_watcher']}x",
                 fontsize=9)  # fmt: skip
    ax.margins(y=0.15)
    path.parent.mkdir(parents=True, exist_ok=True)
    save(fig, path)
    return path


FULL = {"nodes": 5000, "rounds": 10, "duration": 10.0}


def result_name(base: str, nodes: int, quick: bool) -> str:
    """A result's file name: `base` at the full size, else with the node count, or `-quick`
    for a quick run (never the file the docs quote)."""
    if quick:
        return f"{base}-quick"
    return base if nodes == FULL["nodes"] else f"{base}-{nodes}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="500 nodes, 3 rounds of 5 s load tests; results in a -quick file of their own",
    )
    parser.add_argument("--nodes", type=int, default=None, help="default 5,000 (quick 500)")
    parser.add_argument("--cpus", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=None, help="default 10 (quick 3)")
    parser.add_argument(
        "--duration", type=float, default=None, help="seconds per load test, default 10 (quick 5)"
    )
    parser.add_argument("--store", choices=STORES, default="prometheus")
    parser.add_argument("--clients", type=int, default=2, help="clients of GET /watcher")
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="default bench/results/watcher.json at 5,000 nodes, else watcher-<nodes>.json",
    )
    parser.add_argument(
        "--vs-load-watcher",
        action="store_true",
        help="GET /watcher of ballast and paypal/load-watcher on one Prometheus (4 clients)",
    )
    redraw_option(parser, "--redraw", "draw a --vs-load-watcher result again, without running")
    runguard.add_options(parser)
    args = parser.parse_args(argv)
    sized(args, {"nodes": 500, "rounds": 3, "duration": 5.0}, FULL)
    if args.redraw is not None:
        doc = json.loads(args.redraw.read_text())
        print(draw_vs_load_watcher(doc, picture_path(args.redraw)))
        return 0
    runguard.start_run(parser, args.allow_dirty)
    if args.vs_load_watcher:
        output = args.output or RESULTS.with_name(
            f"{result_name('watcher-vs-load-watcher', args.nodes, args.quick)}.json"
        )
        clients = 4 if args.clients == 2 else args.clients  # 2 is the default of the other mode
        started = time.monotonic()
        result = run_vs_load_watcher(args.nodes, args.cpus, args.duration, clients)
        result["seconds"] = round(time.monotonic() - started)  # the run, for docs/benchmarks.md
        write_result(output, result)
        print(json.dumps(result, indent=2))
        print(f"written to {output}")
        print(draw_vs_load_watcher(result, picture_path(output)))
        return 0
    if args.output is None:
        name = result_name("watcher", args.nodes, args.quick)
        if args.store != "prometheus":
            name += f"-{args.store}"
        args.output = RESULTS.with_name(f"{name}.json")
    started = time.monotonic()
    result = run(args.nodes, args.cpus, args.rounds, args.duration, args.store, args.clients)
    result["seconds"] = round(time.monotonic() - started)
    write_result(args.output, result)
    print(json.dumps(result, indent=2))
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
