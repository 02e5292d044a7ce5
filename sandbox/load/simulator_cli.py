"""`ballast simulator`: serve closed-loop node-exporter metrics for a cluster's nodes."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from kubernetes import config

from sandbox.load.exporter import SyntheticExporter
from sandbox.load.nodemetric import NodeMetricConfig, NodeMetricWriter
from sandbox.load.simulator import Simulator, SimulatorConfig


def _range(text: str) -> tuple[float, float]:
    try:
        low, _, high = text.partition(":")
        values = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH numbers, got {text!r}") from None
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulator",
        help="closed-loop load simulator: node-exporter metrics that follow placed pods",
        description=(
            "Serves node-exporter metrics for every node of the cluster: background load plus "
            "the use of the pods running on each node (requests x a seeded random factor, "
            "ramped up after binding). Point Prometheus at it with honor_labels: true."
        ),
    )
    parser.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (default: free port)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--factor", type=_range, default=(0.5, 1.1), help="use/request factor range LOW:HIGH"
    )
    parser.add_argument("--ramp", type=float, default=20.0, help="ramp-up seconds after binding")
    parser.add_argument("--background-cpu", type=_range, default=(5.0, 30.0), metavar="LOW:HIGH")
    parser.add_argument(
        "--background-memory", type=_range, default=(10.0, 30.0), metavar="LOW:HIGH"
    )
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between updates")
    parser.add_argument(
        "--node-metrics",
        action="store_true",
        help="also write Koordinator's NodeMetric per node, as its node agent would "
        "(needs its CRDs: `ballast sandbox up --with-koordinator`)",
    )
    parser.add_argument(
        "--node-metric-report",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between NodeMetric writes (koordlet's default 60)",
    )
    parser.add_argument(
        "--node-metric-window",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="NodeMetric usage is the mean over this many seconds (koordlet's default 300)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    host, _, port = args.listen.rpartition(":")
    try:
        sim_config = SimulatorConfig(
            seed=args.seed,
            factor_min=args.factor[0],
            factor_max=args.factor[1],
            ramp_seconds=args.ramp,
            background_cpu=args.background_cpu,
            background_memory=args.background_memory,
            interval=args.interval,
        )
        metric_config = NodeMetricConfig(args.node_metric_report, args.node_metric_window)
        port_number = int(port)
    except ValueError as exc:
        print(f"ballast simulator: {exc}", file=sys.stderr)
        return 2
    try:
        api = config.new_client_from_config(config_file=args.kubeconfig)
    except (config.ConfigException, OSError) as exc:
        print(f"ballast simulator: no cluster access: {exc}", file=sys.stderr)
        return 2
    exporter = SyntheticExporter(host or "127.0.0.1", port_number).start()
    writer = NodeMetricWriter(api, metric_config).start() if args.node_metrics else None
    on_tick = writer.observe if writer is not None else None
    simulator = Simulator(api, exporter, sim_config, on_tick=on_tick).start()
    print(f"serving node metrics at {exporter.url}/metrics (Ctrl-C stops)", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    simulator.stop()
    if writer is not None:
        writer.stop()
    exporter.stop()
    api.close()
    return 0
