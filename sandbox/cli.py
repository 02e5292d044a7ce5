"""`ballast sandbox build|up|down|env|status`: the local control plane from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sandbox.cluster import build, defaults
from sandbox.cluster.controlplane import ControlPlane, Ports
from sandbox.cluster.errors import SandboxError
from sandbox.cluster.nodes import numbered
from sandbox.peers import koordinator, metrics_server


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sandbox", help="local control plane: etcd, kube-apiserver, kwok, kube-controller-manager"
    )
    commands = parser.add_subparsers(dest="sandbox_command", metavar="COMMAND", required=True)

    p = commands.add_parser("build", help="build the pinned upstream binaries (cached)")
    p.add_argument(
        "--with-kube-scheduler", action="store_true", help="also build upstream kube-scheduler"
    )
    p.add_argument(
        "--with-trimaran",
        action="store_true",
        help="also build kube-scheduler with scheduler-plugins' Trimaran plugins",
    )
    p.add_argument("--with-metrics-server", action="store_true", help="also build metrics-server")
    p.add_argument("--with-helm", action="store_true", help="also build helm (the chart's tests)")
    p.add_argument(
        "--with-koordinator",
        action="store_true",
        help="also build Koordinator's koord-scheduler and koord-descheduler (and keep its CRDs)",
    )
    p.set_defaults(func=_guarded(cmd_build))

    p = commands.add_parser("up", help="start the control plane and N Ready fake nodes")
    p.add_argument("--nodes", type=int, default=defaults.NODE_COUNT)
    p.add_argument("--node-cpu", default=defaults.NODE_CPU)
    p.add_argument("--node-memory", default=defaults.NODE_MEMORY)
    p.add_argument("--node-pods", type=int, default=defaults.NODE_PODS)
    p.add_argument(
        "--gpu-nodes",
        type=int,
        default=0,
        help="also N nodes advertising GPUs (gpu-node-0...; docs/gpu.md), dcgm-exporter's "
        "series for them served by `ballast simulator`",
    )
    p.add_argument("--gpus-per-node", type=int, default=4)
    p.add_argument(
        "--gpu-replicas",
        type=int,
        default=1,
        help="time-slicing replicas per GPU: 1 advertises whole GPUs (nvidia.com/gpu), more "
        "advertises nvidia.com/gpu.shared",
    )
    _state_arg(p)
    p.add_argument("--apiserver-port", type=int, default=defaults.APISERVER_PORT)
    p.add_argument("--etcd-port", type=int, default=defaults.ETCD_CLIENT_PORT)
    p.add_argument("--etcd-peer-port", type=int, default=defaults.ETCD_PEER_PORT)
    p.add_argument(
        "--with-metrics-server",
        action="store_true",
        help="also run metrics-server (metrics.k8s.io, `kubectl top`), fed by kwok's kubelets",
    )
    p.add_argument(
        "--with-koordinator",
        action="store_true",
        help="also apply Koordinator's CRDs and write a NodeMetric per node from the simulated "
        "load (for koord-scheduler and koord-descheduler)",
    )
    p.add_argument(
        "--no-controllers",
        action="store_true",
        help="leave out kube-controller-manager (no Deployments, Jobs, PDB status, GC)",
    )
    p.add_argument(
        "--real-node",
        action="store_true",
        help="also run one real node (kubelet, containerd, runc, bridge CNI; kube-proxy and "
        "CoreDNS for Services) with `make image`'s images imported (sandbox/cluster/realnode.py)",
    )
    p.set_defaults(func=_guarded(cmd_up))

    p = commands.add_parser("down", help="stop what `up` started, nothing else")
    _state_arg(p)
    p.set_defaults(func=_guarded(cmd_down))

    p = commands.add_parser("env", help="print `export KUBECONFIG=...` lines for the sandbox")
    _state_arg(p)
    p.set_defaults(func=_guarded(cmd_env))

    p = commands.add_parser("status", help="which sandbox processes run")
    _state_arg(p)
    p.set_defaults(func=_guarded(cmd_status))


def _state_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", type=Path, default=defaults.STATE_DIR)


def _guarded(command):
    """Sandbox errors are expected (no Go, port in use): one clear line, no traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except SandboxError as exc:
            print(f"ballast sandbox: {exc}", file=sys.stderr)
            return 1

    return run


def _free_if_zero(port: int) -> int:
    from sandbox.cluster.processes import free_port

    return port or free_port()


def cmd_build(args: argparse.Namespace) -> int:
    build.build(
        with_kube_scheduler=args.with_kube_scheduler,
        say=lambda s: print(s, flush=True),
        with_trimaran=args.with_trimaran,
        with_metrics_server=args.with_metrics_server,
        with_helm=args.with_helm,
    )
    if args.with_koordinator:
        koordinator.ensure_built(say=lambda s: print(s, flush=True))
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    ports = Ports(
        _free_if_zero(args.apiserver_port),
        _free_if_zero(args.etcd_port),
        _free_if_zero(args.etcd_peer_port),
    )
    plane = ControlPlane(
        args.state_dir,
        ports,
        addons=[metrics_server.Addon()] if args.with_metrics_server else [],
        controllers=not args.no_controllers,
    )
    if args.with_koordinator:
        koordinator.crds()  # built? before anything starts
    specs = numbered(args.nodes, cpu=args.node_cpu, memory=args.node_memory, pods=args.node_pods)
    if args.gpu_nodes > 0:
        from sandbox.load.gpusim import gpu_node_specs

        try:
            specs += gpu_node_specs(
                args.gpu_nodes,
                args.gpus_per_node,
                args.gpu_replicas,
                cpu=args.node_cpu,
                memory=args.node_memory,
                pods=args.node_pods,
            )
        except ValueError as exc:
            raise SandboxError(f"--gpu-nodes: {exc}") from None
    parts = "etcd, kube-apiserver, kwok" + ("" if args.no_controllers else ", controllers")
    print(f"starting {parts} with {len(specs)} node(s)...", flush=True)
    seconds = plane.start(specs)
    print(f"sandbox up in {seconds:.1f} s: {plane.base_url}, {len(specs)} node(s) Ready")
    print(f"logs in {plane.log_dir}; use it with:  eval $(ballast sandbox env)")
    if args.with_metrics_server:
        print("metrics-server registered; `kubectl top nodes` answers after its second scrape")
    if args.with_koordinator:
        with plane.api_client() as api:
            names = koordinator.apply_crds(api)
        koordinator.start_node_agent(plane)
        print(
            f"Koordinator's {len(names)} CRDs applied; the simulator writes each node's NodeMetric "
            "every 60 s (5-minute averages, as koordlet), log in the logs folder (simulator.log)"
        )
    if args.real_node:
        from sandbox.cluster import realnode

        realnode.up(plane, Path(args.state_dir))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from sandbox.cluster import realnode

    plane = ControlPlane(args.state_dir)
    # Before the apiserver goes: the real node's pods are deleted through it.
    if (Path(args.state_dir) / "realnode").is_dir() and realnode.down(
        ControlPlane.attach(args.state_dir), Path(args.state_dir)
    ):
        print("stopped the real node")
    stopped = plane.stop()
    print(f"stopped {', '.join(stopped)}" if stopped else "no sandbox process was running")
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    env_file = Path(args.state_dir) / "env"
    if not env_file.is_file():
        raise SandboxError(f"no sandbox in {args.state_dir}: start one with `ballast sandbox up`")
    print(env_file.read_text(), end="")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    running = ControlPlane(args.state_dir).running()
    print(f"running: {', '.join(running)}" if running else "not running")
    return 0 if running else 3
