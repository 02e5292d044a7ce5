"""The offline peak study: pods made of the trace's VMs, placed on nodes by a stated rule, and
every predictor's forecast of each node's peak over a horizon held to what the node then used.

Pods: each VM is a workload of 1, 2 or 3 replicas (sandbox.trace_player.replicas, the rule the
trace scenarios use); a replica uses the VM's cores used times its own noise (1 +- NOISE,
uniform, per replica and step), requests the cores the VM was given most often. Units are the
trace's: cores given, cores used.

Placement, fixed for the week (the pods live through it): nodes hold NODE_REQUESTS cores of
requests (the placement benchmark's 4-CPU node filled to 90 % at its 50 m per VM core);
- `first-fit`: pods in a seeded order, each to the first node with room, a new node when none;
- `random`: as many nodes as first-fit opened, each pod to a seeded random node with room, else
  to the node with the fewest requests.
The benchmarks' own placements are not kept in bench/results (their JSON holds per-node
summaries, not bindings), so no scheduler's recorded placement is replayed.

Forecasts are made every `every` steps from day 1 on (day 0 is history only), from the samples
before the forecast time; a history window longer than the time so far uses all of it. The
truth at horizon h is the max of the node's summed use over the h steps from the forecast time.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.peaks import predictors as pr
from sandbox.load.trace import STEP_SECONDS, Trace
from sandbox.load.trace_player import replicas

NOISE = 0.1
NODE_REQUESTS = 72.0  # cores of requests a node holds (4 CPU x 90 % at 50 m per VM core)
STEPS_PER_DAY = int(86400 / STEP_SECONDS)
HORIZONS = {"5m": 1, "15m": 3, "30m": 6, "1h": 12}  # name -> steps
WINDOWS = {"1h": 12, "6h": 72, "1d": 288, "3d": 864}  # history windows, name -> steps
N_SIGMAS = (1, 2, 3, 4, 5)
PERCENTILES = (90, 95, 99, 100)
PEAK_PERCENTILES = (95, 99)  # of past horizon-long peaks
EXCESS_K = (1, 1.5, 2)  # multipliers of the workloads' combined excess over their means
RULES = ("first-fit", "random")
# The predictors a scheduler can compute for a node with a new pod on it: sums of per-pod or
# per-workload statistics (a profile stands in for the new pod). The others read the node's own
# series, which the new pod is not part of yet.
POD_SUM_FAMILIES = (
    "rc-like",
    "rc-peaks",
    "workload-sigma",
    "pod-sigma",
    "workload-excess",
    "workload-excess-peaks",
)
# The paper's set (Bashir et al.): the limit-based view, N-sigma, RC-like and their max.
PAPER_FAMILIES = ("requests", "n-sigma", "rc-like", "max(n-sigma, rc-like)")


@dataclass(frozen=True)
class Pods:
    requests: np.ndarray  # (pods,) cores
    use: np.ndarray  # (pods, steps) cores used
    workload_of: np.ndarray  # (pods,) index of the VM it replays


def make_pods(trace: Trace, seed: int) -> Pods:
    """Every VM as 1-3 replicas, each with its own noise (seeded)."""
    rng = np.random.default_rng(seed)
    requests, use, workload = [], [], []
    for w, vm_id in enumerate(sorted(trace.vms)):
        vm = trace.vms[vm_id]
        for _ in range(replicas(vm_id, seed)):
            requests.append(vm.request_cores)
            use.append(vm.cpu_used * (1.0 + rng.uniform(-NOISE, NOISE, trace.steps)))
            workload.append(w)
    return Pods(np.array(requests), np.array(use), np.array(workload))


def first_fit(requests: np.ndarray, capacity: float, order: list[int]) -> np.ndarray:
    """node_of per pod: pods in `order`, each to the first node with room, a new one if none."""
    node_of = np.zeros(len(requests), dtype=int)
    loads: list[float] = []
    for i in order:
        node = next((n for n, load in enumerate(loads) if load + requests[i] <= capacity), None)
        if node is None:
            node = len(loads)
            loads.append(0.0)
        loads[node] += requests[i]
        node_of[i] = node
    return node_of


def random_fit(
    requests: np.ndarray, capacity: float, nodes: int, order: list[int], rng: random.Random
) -> np.ndarray:
    """node_of per pod: each to a random node with room among `nodes`, else the least loaded."""
    node_of = np.zeros(len(requests), dtype=int)
    loads = [0.0] * nodes
    for i in order:
        room = [n for n in range(nodes) if loads[n] + requests[i] <= capacity]
        node = rng.choice(room) if room else min(range(nodes), key=loads.__getitem__)
        loads[node] += requests[i]
        node_of[i] = node
    return node_of


def placements(pods: Pods, seed: int, capacity: float = NODE_REQUESTS) -> dict[str, np.ndarray]:
    order = list(range(len(pods.requests)))
    random.Random(f"peaks:order:{seed}").shuffle(order)
    ff = first_fit(pods.requests, capacity, order)
    rnd = random_fit(
        pods.requests, capacity, int(ff.max()) + 1, order, random.Random(f"peaks:random:{seed}")
    )
    return {"first-fit": ff, "random": rnd}


def newcomers(node_of: np.ndarray, nodes: int, seed: int) -> np.ndarray:
    """One pod index per node, drawn with `seed`; -1 for a node without pods."""
    rng = random.Random(f"peaks:newcomer:{seed}")
    return np.array([rng.choice([*np.flatnonzero(node_of == n)] or [-1]) for n in range(nodes)])


def family_of(name: str) -> str:
    for prefix, family in (
        ("max(n-sigma", "max(n-sigma, rc-like)"),
        ("max(rc-p100-1d, node-p100-3d), one pod new", "recommended, one pod new"),
        ("max(rc-", "max(rc-like, node-peak)"),
        ("node-peaks", "node-peaks"),
        ("rc-peaks", "rc-peaks"),
        ("n-sigma", "n-sigma"),
        ("rc-", "rc-like"),
        ("workload-sigma", "workload-sigma"),
        ("pod-sigma", "pod-sigma"),
        ("workload-excess-peaks", "workload-excess-peaks"),
        ("workload-excess", "workload-excess"),
        ("node-p", "node-percentile"),
        ("mean", "window-mean"),
        ("requests", "requests"),
    ):
        if name.startswith(prefix):
            return family
    raise ValueError(f"no family for predictor {name!r}")


def forecasts(
    pods: Pods,
    node_of: dict[str, np.ndarray],
    times: np.ndarray,
    say: Callable[[str], None],
    seed: int = 0,
) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """rule -> predictor name -> horizon name -> (nodes, times) forecasts."""
    nodes = {rule: int(n.max()) + 1 for rule, n in node_of.items()}
    one_hot = {rule: np.eye(nodes[rule])[n].T for rule, n in node_of.items()}  # (nodes, pods)
    node_use = {rule: a @ pods.use for rule, a in one_hot.items()}
    # One pod per node (seeded) taken as just placed: the node's series never saw it.
    newcomer = {rule: newcomers(n, nodes[rule], seed) for rule, n in node_of.items()}
    share = {rule: np.where(c[:, None] >= 0, pods.use[c], 0.0) for rule, c in newcomer.items()}
    without = {rule: node_use[rule] - share[rule] for rule in node_of}
    pod_peaks = {h: pr.future_peak(pods.use, s) for h, s in HORIZONS.items() if s > 1}
    node_peaks = {
        rule: {h: pr.future_peak(u, s) for h, s in HORIZONS.items() if s > 1}
        for rule, u in node_use.items()
    }
    out: dict[str, dict[str, list[np.ndarray]]] = {rule: {} for rule in node_of}

    def put(rule: str, name: str, horizon: str, value: np.ndarray) -> None:
        out[rule].setdefault(f"{name}@{horizon}", []).append(value)

    singletons = np.arange(len(pods.requests))

    def excess(mean: np.ndarray, high: np.ndarray, n_of: np.ndarray, n: int, k: float):
        return pr.workload_spread(mean, high - mean, n_of, pods.workload_of, n, k)

    for k, t in enumerate(times):
        if k % 100 == 0:
            say(f"  forecast {k}/{len(times)}")
        for wname, w in WINDOWS.items():
            lo = max(0, t - w)
            hist = pods.use[:, lo:t]
            q = np.percentile(hist, PERCENTILES, axis=1)
            mean, std = hist.mean(axis=1), hist.std(axis=1)
            past = {h: pod_peaks[h][:, lo : t - HORIZONS[h] + 1] for h in pod_peaks}
            peak_q = {h: np.percentile(p, PEAK_PERCENTILES, axis=1) for h, p in past.items()}
            for rule, n_of in node_of.items():
                n = nodes[rule]
                for qi, qv in enumerate(PERCENTILES):
                    put(rule, f"rc-p{qv}-{wname}", "*", pr.rc_like(q[qi], n_of, n))
                for ns in N_SIGMAS:
                    put(
                        rule,
                        f"workload-sigma-{ns}-{wname}",
                        "*",
                        pr.workload_spread(mean, std, n_of, pods.workload_of, n, ns),
                    )
                    put(
                        rule,
                        f"pod-sigma-{ns}-{wname}",
                        "*",
                        pr.workload_spread(mean, std, n_of, singletons, n, ns),
                    )
                for k in EXCESS_K:
                    for qv in (99, 100):
                        put(
                            rule,
                            f"workload-excess-{k:g}-p{qv}-{wname}",
                            "*",
                            excess(mean, q[PERCENTILES.index(qv)], n_of, n, k),
                        )
                    for qi, qv in enumerate(PEAK_PERCENTILES):
                        name = f"workload-excess-peaks-{k:g}-p{qv}-{wname}"
                        put(rule, name, "5m", excess(mean, q[PERCENTILES.index(qv)], n_of, n, k))
                        for h, pq in peak_q.items():
                            put(rule, name, h, excess(mean, pq[qi], n_of, n, k))
                for qi, qv in enumerate(PEAK_PERCENTILES):
                    # At 5 minutes a horizon's peak is one sample: RC-like itself.
                    put(
                        rule,
                        f"rc-peaks-p{qv}-{wname}",
                        "5m",
                        pr.rc_like(q[PERCENTILES.index(qv)], n_of, n),
                    )
                    for h, pq in peak_q.items():
                        put(rule, f"rc-peaks-p{qv}-{wname}", h, pr.rc_like(pq[qi], n_of, n))
                node_hist = node_use[rule][:, lo:t]
                put(rule, f"node-p95-{wname}", "*", pr.percentile(node_hist, 95))
                put(rule, f"node-p100-{wname}", "*", pr.percentile(node_hist, 100))
                put(rule, f"mean-{wname}", "*", pr.window_mean(node_hist))
                for ns in N_SIGMAS:
                    put(rule, f"n-sigma-{ns}-{wname}", "*", pr.n_sigma(node_hist, ns))
                for qv in PEAK_PERCENTILES:
                    put(rule, f"node-peaks-p{qv}-{wname}", "5m", pr.percentile(node_hist, qv))
                    for h, s in HORIZONS.items():
                        if s > 1:
                            past_node = node_peaks[rule][h][:, lo : t - s + 1]
                            put(rule, f"node-peaks-p{qv}-{wname}", h, pr.percentile(past_node, qv))
        for rule, n_of in node_of.items():
            put(rule, "mean-5m", "*", node_use[rule][:, t - 1])
            put(rule, "requests", "*", pr.per_node(pods.requests, n_of, nodes[rule]))
            # The recommended predictor as a scheduler computes it for a pod it places now:
            # the pod's day max in the pods' sum, and added to the node's 3-day max without it.
            day_max = pods.use[:, max(0, t - WINDOWS["1d"]) : t].max(axis=1)
            node_max = without[rule][:, max(0, t - WINDOWS["3d"]) : t].max(axis=1)
            bound = node_max + np.where(newcomer[rule] >= 0, day_max[newcomer[rule]], 0.0)
            put(rule, "max(rc-p100-1d, node-p100-3d), one pod new", "*",
                np.maximum(pr.rc_like(day_max, n_of, nodes[rule]), bound))  # fmt: skip

    result: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for rule, named in out.items():
        table: dict[str, dict[str, np.ndarray]] = {}
        for key, columns in named.items():
            name, horizon = key.split("@")
            table.setdefault(name, {})[horizon] = np.stack(columns, axis=1)
        for wname in WINDOWS:
            for ns in N_SIGMAS:
                for qv in PERCENTILES:
                    a, b = table[f"n-sigma-{ns}-{wname}"]["*"], table[f"rc-p{qv}-{wname}"]["*"]
                    table[f"max(n-sigma-{ns}, rc-p{qv})-{wname}"] = {"*": np.maximum(a, b)}
        # Ours: the pods' recent peaks (a short window follows a change of level) held up by
        # the node's own peak over days (the bursts a short window has not seen).
        for short in ("1h", "6h", "1d"):
            for pods_name in ("rc-p99", "rc-p100", "rc-peaks-p95", "rc-peaks-p99"):
                for node_name in ("node-p100-1d", "node-p100-3d", "node-peaks-p99-3d"):
                    a, b = table[f"{pods_name}-{short}"], table[node_name]
                    table[f"max({pods_name}-{short}, {node_name})"] = {
                        h: np.maximum(a.get(h, a.get("*")), b.get(h, b.get("*"))) for h in HORIZONS
                    }
        result[rule] = table
    return result


def truths(pods: Pods, node_of: np.ndarray, times: np.ndarray) -> dict[str, np.ndarray]:
    """Horizon name -> (nodes, times): the max of the node's summed use over the horizon."""
    nodes = int(node_of.max()) + 1
    use = np.eye(nodes)[node_of].T @ pods.use
    return {h: pr.future_peak(use, s)[:, times] for h, s in HORIZONS.items()}


def forecast_times(steps: int, every: int) -> np.ndarray:
    """From day 1 to the last step a 1-hour horizon fits after."""
    return np.arange(STEPS_PER_DAY, steps - max(HORIZONS.values()) + 1, every)
