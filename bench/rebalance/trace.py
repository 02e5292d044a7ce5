"""The rebalancing benchmark's `trace` scenario: six hours of a production trace, replayed.

Each seed replays a window of the trace starting on one day (seed 1 the trace's second day, seed
2 its third, ...: the first day is what came before every window). The VMs become Deployments
(sandbox.load.trace_player: one VM a workload of 1-3 replicas; a VM core used is 200 m of use, a
VM core given 50 m of request (the hosts' 4:1 overcommit), memory 1/16; one 5-minute step every
5 s, every contender's timing scaled to it: bench.harness.timescale): a seeded choice of VMs, as
many as fill FILL of the pool's CPU with requests, the same in every pool. Ballast's scheduler
places them in the first pool before the replay starts and every other pool starts from a copy
of that placement (`bench.rebalance.run.place_paired`); every pool's replacements are placed by
Ballast's scheduler. Then every pool's rebalancer runs while six hours of the day play (360 s).

Measured from the simulator's true demand as in `bench.rebalance.measure`, plus:
- false evictions: by the node's true series, the eviction's node with the evicted pod's use
  added back (the player gives any pod's use at any moment), still above the high threshold
  throughout the watcher's window (5 s, one trace step) after the eviction: if it would have
  fallen under on its own within that window, the eviction is false. Other pods that left or
  came to that node in the window stay as they were;
- each node's CPU every 2 s and where evictions happened, for the heatmap (`plot`).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.harness import timescale
from bench.rebalance import run as rb
from sandbox.cluster.namespaces import ensure_namespace
from sandbox.cluster.nodes import NodeSpec
from sandbox.load.simulator import SimulatorConfig
from sandbox.load.trace import Trace
from sandbox.load.trace_player import (
    PlayerConfig,
    TracePlayer,
    day_start,
    select,
    workload_name,
)

FILL = 0.9  # of the pool's CPU, in scaled requests
# One trace step every STEP_WALL s, every contender's timing scaled to it (docs/trace.md).
PLAYER = PlayerConfig(step_seconds=timescale.STEP_WALL)
TIMING = timescale.trace_timing()
RAMP = timescale.setting("simulated pods", "ramp to their use after start").wall
WINDOW = float(TIMING.watcher_env["BALLAST_WINDOW"])  # the false-eviction horizon
HEATMAP_EVERY = 2.0  # seconds between the heatmap's columns


def deployment(vm: str, replicas: int, contender: str, player: TracePlayer) -> dict[str, Any]:
    cpu_m, memory = player.requests(vm)
    body = rb.deployment(0, contender, cpu_m)
    name = workload_name(vm)
    body["metadata"]["name"] = name
    spec = body["spec"]
    spec.update(replicas=replicas, selector={"matchLabels": {"app": name}})
    spec["template"]["metadata"]["labels"] = {"app": name}
    spec["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = str(memory)
    return body


def pdb(vm: str) -> dict[str, Any]:
    body = rb.pdb(0)
    name = workload_name(vm)
    body["metadata"]["name"] = name
    body["spec"]["selector"] = {"matchLabels": {"app": name}}
    return body


class TraceRecorder(rb.Recorder):
    """The bench's recorder on the trace's workloads: the player sets every pod's use."""

    def _set_factors(self, uses: list) -> None:
        return None


def false_evictions(
    samples: list[tuple[float, list[float]]],
    evictions: list[dict[str, Any]],
    player: TracePlayer,
    namespace: str,
    node_m: float,
) -> int:
    """Evictions whose node, with the evicted pod's use added back, fell under the high
    threshold within WINDOW on its own (or was never above it)."""
    count = 0
    for ev in evictions:
        if not ev.get("from"):
            continue
        idx = int(ev["from"].rsplit("-", 1)[1])
        key = f"{namespace}/{ev['pod']}"
        after = [(t, cpus[idx]) for t, cpus in samples if ev["time"] <= t <= ev["time"] + WINDOW]
        without = [cpu + 100.0 * (player.use(key, t) or (0.0, 0.0))[0] / node_m
                   for t, cpu in after]  # fmt: skip
        if not without or min(without) < rb.HIGH:
            count += 1
    return count


def run_one(
    scenario: rb.Scenario, seed: int, contenders: list[str], trace: Trace, say=print
) -> dict[str, Any]:
    first = day_start(trace, seed)
    chosen = select(trace, FILL * rb.NODES * rb.NODE_CPU * 1000, PLAYER, seed)
    player = TracePlayer(trace, {workload_name(vm): vm for vm, _ in chosen}, PLAYER, first)
    rng = random.Random(f"rebalance:trace:{seed}")
    background = [rng.uniform(*rb.BACKGROUND) for _ in range(rb.NODES)]
    config = SimulatorConfig(
        seed=seed,
        ramp_seconds=RAMP,
        background={rb.node_name(c, i): (background[i], 20.0)
                    for c in contenders for i in range(rb.NODES)},
        trace=player,
    )  # fmt: skip
    specs = [
        NodeSpec(rb.node_name(c, i), cpu=str(rb.NODE_CPU), memory="16Gi",
                 labels={rb.POOL_LABEL: c})
        for c in contenders
        for i in range(rb.NODES)
    ]  # fmt: skip
    services = rb.Services(f"ballast-rebalance-trace-{seed}-", specs, config, timing=TIMING)
    recorder = None
    ok = False
    try:
        started = time.monotonic()
        api, sim, prom, watcher_url = services.start()
        recorder = TraceRecorder(sim, api, contenders, rb.plan(rb.SCENARIOS["stable"], seed))
        recorder.replicas = {workload_name(vm): n for vm, n in chosen}
        recorder.start()
        apps, policy = client.AppsV1Api(api), client.PolicyV1Api(api)

        def create_pool(c: str) -> None:
            ns = rb.namespace(c)
            ensure_namespace(api, ns)
            for vm, n in chosen:
                body = deployment(vm, n, c, player)
                apps.create_namespaced_deployment(ns, body, _request_timeout=rb.T)
                policy.create_namespaced_pod_disruption_budget(ns, pdb(vm), _request_timeout=rb.T)

        # Ballast's scheduler places the reference pool and every pool's replacements (the
        # descheduler's too: one scheduler, so what differs between pools is the rebalancer).
        rb.place_paired(services, watcher_url, contenders, create_pool, recorder.replicas)
        pods = sum(n for _, n in chosen)
        deadline = time.monotonic() + rb.PLACE_TIMEOUT
        while time.monotonic() < deadline and any(recorder.lost(c) for c in contenders):
            time.sleep(0.5)
        pending = {c: recorder.lost(c) for c in contenders}
        time.sleep(scenario.settle)
        say(f"  stack up, {len(chosen)} workloads ({pods} pods a pool, pending {pending}) "
            f"placed and settled in {time.monotonic() - started:.0f} s")  # fmt: skip
        services.start_rebalancers(contenders)
        recorder.measuring = True
        change = time.time()
        player.start(change)
        last = first + int(scenario.observe / PLAYER.step_seconds)
        say(f"  replaying trace steps {first}..{last} for {scenario.observe:.0f} s")
        time.sleep(scenario.observe)
        recorder.stop()
        results = {}
        for c in contenders:
            samples, evictions = recorder.samples[c], recorder.evictions[c]
            r = rb.measure(samples, change, evictions, recorder.unavailable[c], recorder.lost(c))
            r["false_evictions"] = false_evictions(
                samples, evictions, player, rb.namespace(c), rb.NODE_CPU * 1000
            )
            r["pending_at_start"] = pending[c]
            r["hottest_over_time"] = [
                [round(t - change, 1), round(max(cpus), 1)] for t, cpus in samples
            ]
            r["eviction_times"] = [round(e["time"] - change, 1) for e in evictions]
            # a pod evicted before it was bound has no node ("from" empty): -1
            r["eviction_nodes"] = [
                int(e["from"].rsplit("-", 1)[1]) if e["from"] else -1 for e in evictions
            ]
            r["node_cpu"] = _thin([(t - change, cpus) for t, cpus in samples if t >= change])
            results[c] = r
        rb.peer_records(services.plane, api, results)
        ok = True
        return {
            "scenario": scenario.name,
            "seed": seed,
            "trace": {"source": trace.source, "first_step": first, "workloads": len(chosen),
                      "pods_per_pool": pods, "background": [round(b, 1) for b in background]},
            "contenders": results,
        }  # fmt: skip
    finally:
        if recorder is not None:
            recorder.stop()
        services.close(ok, say)


def _thin(samples: list[tuple[float, list[float]]]) -> list[list[Any]]:
    """[seconds after the start, [CPU % per node]] every HEATMAP_EVERY seconds."""
    out: list[list[Any]] = []
    for t, cpus in samples:
        if not out or t - out[-1][0] >= HEATMAP_EVERY:
            out.append([round(t, 1), [round(c, 1) for c in cpus]])
    return out


# -- results: a table with false evictions, and the heatmap ---------------------------------
# The trace table's columns (key, heading), drawn by bench.harness.common.scenario_table.
COLUMNS = (
    ("node_seconds_over_100", "node-s > 100 %"),
    ("node_seconds_over_high", f"node-s > {rb.HIGH:.0f} %"),
    ("evictions", "evictions"),
    ("false_evictions", "false evictions"),
    ("bounced", "bounced"),
    ("pdb_violations", "PDB violations"),
    ("max_unavailable", "max unavailable"),
    ("pods_lost", "lost"),
)


def plot(doc: dict[str, Any], folder: Path, prefix: str = "rebalance") -> list[Path]:
    """One heatmap a contender (nodes x time, true CPU %) with eviction marks, first window."""
    runs = [r for r in doc["runs"] if r["scenario"] == "trace"]
    if not runs:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    run = runs[0]
    contenders = [c for c in doc["setup"]["contenders"] if c in run["contenders"]]
    fig, axes = plt.subplots(len(contenders), 1, figsize=(11, 1.5 + 1.5 * len(contenders)),
                             sharex=True, squeeze=False)  # fmt: skip
    fig.subplots_adjust(hspace=0.5, right=0.85)
    image = None
    for ax, c in zip(axes[:, 0], contenders, strict=True):
        r = run["contenders"][c]
        times = [t for t, _ in r["node_cpu"]]
        grid = np.array([cpus for _, cpus in r["node_cpu"]]).T
        extent = (times[0], times[-1], len(grid) - 0.5, -0.5)
        image = ax.imshow(grid, aspect="auto", cmap="inferno", vmin=0, vmax=120,
                          extent=extent, interpolation="nearest")  # fmt: skip
        ax.scatter(r["eviction_times"], r["eviction_nodes"], marker="x", s=22, color="cyan",
                   linewidths=1.2)  # fmt: skip
        ax.set_ylabel("node", fontsize=8)
        title = f"{c}: {r['evictions']} evictions (x), {r['false_evictions']} false; "
        title += f"node-s > 100 %: {r['node_seconds_over_100']}"
        ax.set_title(title, fontsize=9, loc="left")
    step = doc["setup"].get("trace", {}).get("step_seconds", PLAYER.step_seconds)
    axes[-1, 0].set_xlabel(f"seconds into the replay ({step:g} s = one 5-minute trace step)")
    fig.colorbar(image, cax=fig.add_axes((0.88, 0.15, 0.02, 0.7)), label="true CPU %")
    fig.suptitle(f"rebalance, trace (steps from {run['trace']['first_step']}, seed "
                 f"{run['seed']}): node CPU over time", fontsize=10)  # fmt: skip
    path = folder / f"{prefix}-trace-heatmap.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def setup(trace: Trace, contenders: list[str]) -> dict[str, Any]:
    """What the results' setup says about the replay (and its contenders' scaled settings)."""
    return {
        "source": trace.source,
        "fill": FILL,
        "cpu_m_per_core": PLAYER.cpu_m_per_core,
        "overcommit": PLAYER.overcommit,
        "memory_scale": PLAYER.memory_scale,
        "step_seconds": PLAYER.step_seconds,
        "compression": PLAYER.compression,
        "noise": PLAYER.noise,
        "false_eviction_window_seconds": WINDOW,
        "timing": TIMING.record(),
        "settings_in_trace_time": timescale.record(),
        "ballast": rb.ballast_setup(TIMING),
        "replacements_placed_by": rb.REPLACEMENTS_PLACED_BY,
        "koord_descheduler": {
            c: rb.koord_config("<the sandbox's>", c, TIMING) for c in rb.KOORDS if c in contenders
        },
    }
