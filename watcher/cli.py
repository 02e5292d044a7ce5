"""`ballast watcher`: the poller and the API with one command."""

from __future__ import annotations

import argparse
import sys

from shared import logs
from watcher.errors import ConfigError, StoreError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "watcher",
        help="run the load-watcher (poller + HTTP API)",
        description="Poll node load, keep windows with adaptive staleness, serve them over HTTP. "
        "Every flag is also an environment variable BALLAST_<NAME>, e.g. BALLAST_REDIS_URL; "
        "load-watcher's METRICS_PROVIDER_NAME/ADDRESS/TOKEN and INSECURE_SKIP_VERIFY work too.",
    )
    p.add_argument("--config", help="YAML file of settings (see docs/watcher.md)")
    p.add_argument("--prometheus-url", help="Prometheus (or compatible) base URL")
    p.add_argument("--provider", choices=["prometheus", "metrics-server"])
    p.add_argument("--redis-url", help="Redis URL; without it the store is in memory")
    p.add_argument(
        "--listen", help="HOST:PORT to serve on (default :2020: every address, IPv4 and IPv6)"
    )
    p.add_argument(
        "--poll-interval", type=float, help="seconds between polls, more than 0 (default 15)"
    )
    p.add_argument("--workers", type=int, help="gunicorn workers (default 2; 1 without Redis)")
    p.add_argument("--kubeconfig", help="kubeconfig for node-name mapping and metrics-server")
    p.add_argument(
        "--scheduler-url", help="the scheduler's status address, for the dashboard's decisions"
    )
    p.add_argument(
        "--rebalancer-url", help="the rebalancer's status address, for the dashboard's section"
    )
    p.add_argument("--log-level", choices=logs.LEVELS, help="default INFO")
    p.add_argument("--log-format", choices=logs.FORMATS, help="text (default) or json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shared.lifecycle import SignalLatch, ignore_stop_signals

    latch = SignalLatch()  # first: a signal during the imports below must not be lost
    from watcher import config as configuration

    overrides = {
        "prometheus_url": args.prometheus_url,
        "provider": args.provider,
        "redis_url": args.redis_url,
        "listen": args.listen,
        "poll_interval": args.poll_interval,
        "workers": args.workers,
        "kubeconfig": args.kubeconfig,
        "scheduler_url": args.scheduler_url,
        "rebalancer_url": args.rebalancer_url,
        "log_level": args.log_level,
        "log_format": args.log_format,
    }
    try:
        config = configuration.load(args.config, overrides=overrides)
        from watcher.server import serve

        if latch.received is not None:
            return 0
        return serve(config, latch)
    except (ConfigError, StoreError) as exc:
        print(f"ballast watcher: {exc}", file=sys.stderr)
        return 2
    finally:
        # The master and each gunicorn worker leave through here (by return or SystemExit).
        ignore_stop_signals()
