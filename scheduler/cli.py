"""`ballast scheduler --config FILE [--kubeconfig PATH] [--metrics-listen HOST:PORT]`."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scheduler.backend import recent
from scheduler.backend.decisions import DEFAULT_ATTEMPTS, DEFAULT_PODS, DEFAULT_TOP
from scheduler.framework.errors import ConfigError
from shared import durations, logs
from shared.lifecycle import gc_paused, ignore_stop_signals

if TYPE_CHECKING:
    from kubernetes import client


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "scheduler",
        help="run the load-aware scheduler",
        description="Schedule pods whose spec.schedulerName matches a configured profile.",
    )
    p.add_argument("--config", required=True, help="scheduler configuration (YAML)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster configuration)")
    p.add_argument(
        "--metrics-listen",
        default=":10259",
        help="HOST:PORT for /metrics and /healthz (default %(default)s: every address, IPv4 "
        "and IPv6; empty: off)",
    )
    p.add_argument(
        "--extender-listen",
        default="",
        help="HOST:PORT to also serve kube-scheduler's extender API (filter, prioritize, bind)",
    )
    p.add_argument("--extender-profile", default="", help="profile the extender uses")
    p.add_argument(
        "--extender-token-file",
        default="",
        help="file holding a token extender requests must carry (as the path segment before "
        "the verb, or as a bearer token)",
    )
    p.add_argument(
        "--decisions",
        type=int,
        default=DEFAULT_PODS,
        metavar="PODS",
        help="record the scheduling decisions of the last PODS pods for `ballast explain` "
        "(default %(default)s; 0: off)",
    )
    p.add_argument(
        "--decision-attempts",
        type=int,
        default=DEFAULT_ATTEMPTS,
        help="attempts kept per pod (default %(default)s)",
    )
    p.add_argument(
        "--decision-top",
        type=int,
        default=DEFAULT_TOP,
        help="nodes per attempt with the full score breakdown (default %(default)s)",
    )
    p.add_argument(
        "--api-token-file",
        default="",
        help="file holding a token /api/v1/decisions requests must carry as a bearer token",
    )
    p.add_argument(
        "--leader-label",
        action="store_true",
        help="label this pod ballast.dev/leader=true while it leads (false before), for a "
        "Service that must reach the leader alone, such as the extender's; the pod is named by "
        "$POD_NAMESPACE and $POD_NAME (the downward API); needs leader election",
    )
    p.add_argument(
        "--watcher-interval",
        type=float,
        default=5.0,
        help="seconds between fetches, more than 0 (default %(default)s)",
    )
    p.add_argument(
        "--provider-lag",
        type=float,
        default=recent.PROVIDER_LAG,
        help="seconds a sample takes to reach the watcher, 0 or more: a bound pod counts on "
        "its node until a sample this much newer than its bind (default %(default)s)",
    )
    p.add_argument(
        "--recent-max-age",
        type=float,
        default=recent.MAX_AGE,
        help="seconds a bound pod counts on its node at most, more than 0 (default %(default)s)",
    )
    p.add_argument(
        "--pod-usage-interval",
        type=float,
        default=0.0,
        help="seconds between fetches of the watcher's per-pod statistics, for PeakFit "
        "(default 0: six --watcher-interval, 30 s)",
    )
    p.add_argument(
        "--pod-usage-max-age",
        type=float,
        default=600.0,
        help="seconds the per-pod statistics are used without a refresh, more than 0 "
        "(default %(default)s)",
    )
    p.add_argument("--identity", default="", help="leader election identity (default: host_uuid)")
    logs.add_arguments(p)
    p.set_defaults(func=run)


def api_client(kubeconfig: str | None, pool: int) -> client.ApiClient:
    """An API client with a connection pool big enough for the binder's threads."""
    from kubernetes import client, config

    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        config.load_incluster_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = pool
    return client.ApiClient(cfg)


def refusal(args: argparse.Namespace) -> str:
    """Why the flags' seconds cannot work ("" when every one can; shared/durations.py): fetches
    0 s or less apart poll the watcher in a busy loop; a bound pod would never count, or count
    until a sample shows it however late; the per-pod statistics would never be used."""
    return durations.refusals(
        ("--watcher-interval", args.watcher_interval, False),
        ("--provider-lag", args.provider_lag, True),
        ("--recent-max-age", args.recent_max_age, False),
        ("--pod-usage-interval", args.pod_usage_interval, True),  # 0: six watcher intervals
        ("--pod-usage-max-age", args.pod_usage_max_age, False),
    )


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        if stop.is_set():  # a second signal: the operator does not want to wait
            os._exit(128 + signum)
        stop.set()

    # First of all: a signal while the config loads or the runtime builds is heard too.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        return _run(args, stop)
    finally:
        ignore_stop_signals()


def _run(args: argparse.Namespace, stop: threading.Event) -> int:
    logs.configure(args.log_level, args.log_format)
    bad = refusal(args)
    if bad:  # before the config is read: a flag's mistake is named first
        print(f"ballast scheduler: {bad}", file=sys.stderr)
        return 2
    with gc_paused(freeze=True):  # imports only: see ballast/cli.py
        from kubernetes.config import ConfigException

        from scheduler.backend.metrics_client import BearerToken
        from scheduler.config.loader import load_config
        from scheduler.config.profiles import build_profiles
        from scheduler.runtime import Runtime, RuntimeOptions

    try:
        cfg = load_config(args.config)
        profiles = build_profiles(cfg)
    except ConfigError as exc:
        print(f"ballast scheduler: bad config: {exc}", file=sys.stderr)
        return 2
    try:
        api = api_client(args.kubeconfig, cfg.parallelism + 8)
    except (ConfigException, OSError) as exc:
        print(f"ballast scheduler: no cluster access: {exc}", file=sys.stderr)
        return 2
    tokens: dict[str, Any] = {}
    for flag in ("extender_token_file", "api_token_file"):
        try:
            path = getattr(args, flag)
            tokens[flag] = Path(path).read_text().strip() if path else ""
        except OSError as exc:
            print(f"ballast scheduler: --{flag.replace('_', '-')}: {exc}", file=sys.stderr)
            return 2
    if args.decisions < 0 or args.decision_attempts < 1 or args.decision_top < 1:
        print("ballast scheduler: --decisions >= 0, --decision-attempts and --decision-top >= 1",
              file=sys.stderr)  # fmt: skip
        return 2
    leader_label = None
    if args.leader_label:
        where = (os.environ.get("POD_NAMESPACE", ""), os.environ.get("POD_NAME", ""))
        if not all(where) or not cfg.leader_election.leader_elect:
            print("ballast scheduler: --leader-label needs $POD_NAMESPACE, $POD_NAME and "
                  "leader election", file=sys.stderr)  # fmt: skip
            return 2
        leader_label = where
    options = RuntimeOptions(
        metrics_listen=args.metrics_listen or None,
        watcher_interval=args.watcher_interval,
        provider_lag=args.provider_lag,
        recent_max_age=args.recent_max_age,
        pod_usage_interval=args.pod_usage_interval,
        pod_usage_max_age=args.pod_usage_max_age,
        identity=args.identity,
        extender_listen=args.extender_listen or None,
        extender_profile=args.extender_profile,
        extender_token=tokens["extender_token_file"],
        decisions=args.decisions,
        decision_attempts=args.decision_attempts,
        decision_top=args.decision_top,
        # Read again whenever the file changes: a rotated Secret needs no restart.
        api_token=BearerToken(tokens["api_token_file"], args.api_token_file, "API token").value,
        leader_label=leader_label,
    )
    try:
        runtime = Runtime(cfg, api, profiles, options)
    except ConfigError as exc:
        print(f"ballast scheduler: {exc}", file=sys.stderr)
        return 2
    if stop.is_set():
        runtime.stop()  # never started: closes its listening sockets
        return 0
    # Started on a thread so that a signal during a slow first list still ends us promptly;
    # runtime.stop() below makes that start return early and waits for it.
    threading.Thread(target=runtime.start, name="start", daemon=True).start()
    lost = False
    while not stop.is_set():
        if runtime.wait(timeout=0.5):
            lost = True
            break
    log = logging.getLogger(__name__)
    log.info("stopping (%s)", "lease lost" if lost else "signal")
    runtime.stop()
    if lost:
        log.error("leader lease lost; exiting so a restart starts clean")
        return 1
    return 0
