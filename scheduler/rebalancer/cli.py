"""`ballast rebalancer --config FILE [--kubeconfig PATH] [--listen HOST:PORT] [--dry-run]
[--provider-lag SECONDS] [--recent-max-age SECONDS]`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from kubernetes import client, config

from scheduler.backend.recent import MAX_AGE, PROVIDER_LAG
from scheduler.framework.errors import ConfigError
from shared import durations, logs
from shared.lifecycle import SignalLatch, ignore_stop_signals

if TYPE_CHECKING:
    from scheduler.rebalancer.runtime import Options


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "rebalancer",
        help="move pods off nodes the watcher shows hot (load-aware rebalancer)",
        description="Evict pods from nodes that stay hot, only where the scheduler's profile "
        "finds them a cooler node; leader-elected, through the Eviction API.",
    )
    p.add_argument(
        "--config",
        required=True,
        help="the scheduler's config file with a `rebalancer:` section (YAML)",
    )
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster configuration)")
    p.add_argument(
        "--listen",
        default=":10260",
        help="HOST:PORT for /metrics, /status, /decisions, /healthz (default %(default)s: every "
        "address, IPv4 and IPv6; empty: off)",
    )
    p.add_argument("--dry-run", action="store_true", help="decide and report, evict nothing")
    p.add_argument(
        "--api-token-file",
        default="",
        help="file holding a token /status and /decisions requests must carry as a bearer token "
        "(read again when it changes)",
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
        default=PROVIDER_LAG,
        help="seconds a sample takes to reach the watcher, as the scheduler's flag (give both "
        "the same): a node rests this much past its window after an eviction, its rest ends "
        "early only on samples this much newer than the pod's going, and a bound pod counts on "
        "its node until a sample this much newer than its bind (default %(default)s)",
    )
    p.add_argument(
        "--recent-max-age",
        type=float,
        default=MAX_AGE,
        help="seconds a bound pod counts on its node at most, more than 0, as the scheduler's "
        "flag (give both the same): in the judge's model of the scheduler and for the moves' "
        "bound replacements (default %(default)s)",
    )
    p.add_argument("--identity", default="", help="leader election identity (default: host_uuid)")
    logs.add_arguments(p)
    p.set_defaults(func=run)


# A connection each for the cache's twelve watches, the Lease, the evictions and the events.
POOL = 20


def _api(kubeconfig: str | None) -> client.ApiClient:
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        config.load_incluster_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = POOL
    return client.ApiClient(cfg)


def options(args: argparse.Namespace) -> Options:
    """The runtime's options from the command line."""
    from scheduler.rebalancer.runtime import Options

    return Options(
        listen=args.listen or None,
        watcher_interval=args.watcher_interval,
        provider_lag=args.provider_lag,
        recent_max_age=args.recent_max_age,
        identity=args.identity,
        api_token_file=args.api_token_file,
    )


def refusal(args: argparse.Namespace) -> str:
    """Why the flags' seconds cannot work ("" when every one can; shared/durations.py): fetches
    0 s or less apart poll the watcher in a busy loop (and its GPU client's too); a negative lag
    shortens every rest; a bound pod would never count, or count until a sample shows it."""
    return durations.refusals(
        ("--watcher-interval", args.watcher_interval, False),
        ("--provider-lag", args.provider_lag, True),
        ("--recent-max-age", args.recent_max_age, False),
    )


def run(args: argparse.Namespace) -> int:
    latch = SignalLatch()
    logs.configure(args.log_level, args.log_format)
    bad = refusal(args)
    if bad:
        print(f"ballast rebalancer: {bad}", file=sys.stderr)
        return 2
    from scheduler.config.profiles import build_profiles
    from scheduler.rebalancer import settings
    from scheduler.rebalancer.runtime import Rebalancer

    try:
        cfg = settings.load(args.config)
        profiles = build_profiles(cfg.scheduler)
    except ConfigError as exc:
        print(f"ballast rebalancer: bad config: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        cfg.rebalancer.dry_run = True
    try:
        api = _api(args.kubeconfig)
    except (config.ConfigException, OSError) as exc:
        print(f"ballast rebalancer: no cluster access: {exc}", file=sys.stderr)
        return 2
    if args.api_token_file and not os.access(args.api_token_file, os.R_OK):
        print(f"ballast rebalancer: --api-token-file: cannot read {args.api_token_file}",
              file=sys.stderr)  # fmt: skip
        return 2
    rebalancer = Rebalancer(cfg, api, profiles, options(args))
    threading.Thread(target=rebalancer.start, name="start", daemon=True).start()
    lost = False
    while not latch.event.wait(0.5):
        if rebalancer.wait(0):
            lost = True
            break
    log = logging.getLogger(__name__)
    log.info("stopping (%s)", "lease lost" if lost else f"signal {latch.received}")
    rebalancer.stop()
    ignore_stop_signals()
    if lost:
        # As the scheduler: exit, so that the restart comes back as a standby with fresh state.
        log.error("leader lease lost; exiting so a restart starts clean")
        return 1
    return 0
