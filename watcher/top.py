"""`ballast top`: `kubectl top nodes` with the watcher's window statistics, in the terminal.

Reads `GET /api/v1/nodes` (docs/api.md); against an upstream load-watcher, which has no
/api/v1, it falls back to the `/watcher` envelope and shows what that carries (AVG, STD, Latest).
`--workloads` shows the workload profiles instead (`GET /api/v1/workloads`, docs/profiles.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import requests

from shared import wire

DEFAULT_WATCHER = "http://127.0.0.1:2020"
TIMEOUT = 5.0
SORT_KEYS = ("name", "cpu", "memory", "age")
COLUMNS = ("latest", "avg", "std", "p95", "max")


class TopError(Exception):
    """The watcher could not be read; the message says why."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "top",
        help="show every node's CPU and memory over the watcher's window",
        description=(
            "Like `kubectl top nodes`, from the watcher's API: latest, average, standard "
            "deviation, p95 and maximum over the window, staleness state and data age."
        ),
    )
    parser.add_argument(
        "--watcher",
        default=os.environ.get("BALLAST_WATCHER_ADDRESS", DEFAULT_WATCHER),
        help=f"watcher base URL (default: $BALLAST_WATCHER_ADDRESS or {DEFAULT_WATCHER})",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("BALLAST_API_TOKEN"),
        help="bearer token when the watcher's API requires one (default: $BALLAST_API_TOKEN)",
    )
    parser.add_argument("--sort", choices=SORT_KEYS, default="name", help="sort rows by")
    parser.add_argument(
        "--watch",
        type=float,
        metavar="SECONDS",
        help="redraw every SECONDS until Ctrl-C",
    )
    parser.add_argument(
        "--workloads",
        action="store_true",
        help="show what one replica of each workload uses (its profile) instead of nodes",
    )
    parser.add_argument("nodes", nargs="*", help="only these nodes (with --workloads: namespaces)")
    parser.set_defaults(func=run)


def fetch(base: str, token: str | None = None, timeout: float = TIMEOUT) -> dict[str, Any]:
    """The watcher's /api/v1/nodes answer, or one built from /watcher for an upstream watcher."""
    base = base.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        answer = requests.get(f"{base}/api/v1/nodes", headers=headers, timeout=timeout)
        if answer.status_code == 404:
            answer = requests.get(f"{base}/watcher", headers=headers, timeout=timeout)
            _check(answer)
            return from_envelope(wire.parse_envelope(answer.json()))
        _check(answer)
        doc = answer.json()
    except requests.RequestException as exc:
        raise TopError(f"cannot reach the watcher at {base}: {exc}") from None
    except (ValueError, wire.WireFormatError) as exc:
        raise TopError(f"the watcher at {base} answered something unreadable: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        raise TopError(f"the watcher at {base} answered without a `nodes` object")
    return doc


def fetch_workloads(base: str, token: str | None = None, timeout: float = TIMEOUT) -> dict:
    """The watcher's /api/v1/workloads answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        answer = requests.get(
            f"{base.rstrip('/')}/api/v1/workloads", headers=headers, timeout=timeout
        )
        _check(answer)
        doc = answer.json()
    except requests.RequestException as exc:
        raise TopError(f"cannot reach the watcher at {base}: {exc}") from None
    except ValueError as exc:
        raise TopError(f"the watcher at {base} answered something unreadable: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("workloads"), dict):
        raise TopError(f"the watcher at {base} answered without a `workloads` object")
    return doc


def render_workloads(doc: dict[str, Any], only: list[str] | None = None) -> str:
    """One row per workload revision, newest first: per-replica CPU (millicores) and memory
    (MiB) p50, p95 and max over the profile's window, with its sample count."""
    rows = []
    for key in sorted(doc.get("workloads") or {}):
        w = doc["workloads"][key] or {}
        if only and w.get("namespace") not in only:
            continue
        for revision, r in (w.get("revisions") or {}).items():
            cpu, mem = r.get("cpu") or {}, r.get("memory") or {}
            mib = {k: v / 1024**2 for k, v in mem.items() if isinstance(v, (int, float))}
            cells = [_num(cpu.get(k), 7, 0) for k in ("p50", "p95", "max")]
            cells += [_num(mib.get(k), 7, 0) for k in ("p50", "p95", "max")]
            age = time.time() - r["last"] if isinstance(r.get("last"), (int, float)) else None
            rows.append((key, revision or "-", r.get("samples"), r.get("distinctPods"), cells, age))
    width = max([8, *(len(row[0]) for row in rows)])
    poll = doc.get("lastPoll") or {}
    status = "ok" if poll.get("ok") else f"FAILED: {poll.get('error') or 'no poll yet'}"
    window = doc.get("window")
    lines = [
        f"{doc.get('pods', 0)} pod(s) measured, window {_age(window)}, last pod poll: {status}; "
        f"{len(rows)} profile(s)"
    ]
    heads = ["CPU P50", "P95", "MAX", "MEM P50", "P95", "MAX"]
    lines.append(
        f"{'WORKLOAD':<{width}}  {'REVISION':<11} {'SAMPLES':>7} {'PODS':>4} "
        + " ".join(f"{h:>7}" for h in heads)
        + "   AGE"
    )
    for key, revision, samples, pods, cells, age in rows:
        lines.append(
            f"{key:<{width}}  {revision[:11]:<11} {samples if samples is not None else '-':>7} "
            f"{pods if pods is not None else '-':>4} " + " ".join(cells) + f" {_age(age):>5}"
        )
    lines.append("CPU in millicores, memory in MiB, per replica")
    return "\n".join(lines)


def _check(answer: requests.Response) -> None:
    if answer.status_code == 401:
        raise TopError("the watcher wants a token: pass --token or set BALLAST_API_TOKEN")
    if answer.status_code != 200:
        body = answer.text.strip()[:200] or "(empty body)"
        raise TopError(f"{answer.request.url} answered {answer.status_code}: {body}")


def from_envelope(env: wire.Envelope) -> dict[str, Any]:
    """The /api/v1 shape from a plain envelope: ages from its timestamp, no states."""
    age = max(0.0, time.time() - env.timestamp)
    keys = {wire.CPU: "cpu", wire.MEMORY: "memory"}
    fields = {wire.AVG: "avg", wire.STD: "std", wire.LATEST: "latest"}
    nodes: dict[str, Any] = {}
    for name, metrics in env.nodes.items():
        entry: dict[str, dict[str, Any]] = {}
        for m in metrics:
            if m.type in keys and m.operator in fields:
                stats = entry.setdefault(keys[m.type], {"age": age, "state": "unknown"})
                stats[fields[m.operator]] = m.value
        nodes[name] = {"state": "unknown", "age": age, "metrics": entry}
    return {
        "timestamp": time.time(),
        "window": {"duration": env.window.duration},
        "source": f"{env.source} (load-watcher envelope)",
        "lastPoll": {"time": float(env.timestamp), "ok": True},
        "nodes": nodes,
    }


def _num(value: Any, width: int, digits: int = 1) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:>{width}.{digits}f}"
    return f"{'-':>{width}}"


def _age(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.0f}h"


def _sort_key(sort: str, nodes: dict[str, Any]):
    def metric(name: str, key: str) -> float:
        value = nodes[name].get("metrics", {}).get(key, {}).get("latest")
        return value if isinstance(value, (int, float)) else -1.0

    if sort == "cpu":
        return lambda n: (-metric(n, "cpu"), n)
    if sort == "memory":
        return lambda n: (-metric(n, "memory"), n)
    if sort == "age":
        return lambda n: (-(nodes[n].get("age") or 0.0), n)
    return lambda n: n


def render(doc: dict[str, Any], sort: str = "name", only: list[str] | None = None) -> str:
    """The table, header first; percentages to one decimal, '-' where the watcher has no data."""
    nodes: dict[str, Any] = doc.get("nodes") or {}
    names = sorted(nodes, key=_sort_key(sort, nodes))
    if only:
        names = [n for n in names if n in only]
    poll = doc.get("lastPoll") or {}
    poll_age = _age(doc.get("timestamp", time.time()) - poll["time"]) if poll.get("time") else "-"
    status = "ok" if poll.get("ok") else f"FAILED: {poll.get('error') or 'no poll yet'}"
    window = (doc.get("window") or {}).get("duration", "?")
    lines = [
        f"source {doc.get('source', '?')}, window {window}, "
        f"last poll {poll_age} ago: {status}; {len(names)} node(s)"
    ]
    width = max([4, *(len(n) for n in names)])
    # The first column of each group is the latest value, as `kubectl top nodes` shows it.
    heads = [f"{h:>6}" for group in ("CPU%", "MEM%") for h in (group, "AVG", "STD", "P95", "MAX")]
    lines.append(f"{'NAME':<{width}}  {'STATE':<7} {'AGE':>4} " + " ".join(heads))
    for name in names:
        node = nodes[name] or {}
        metrics = node.get("metrics") or {}
        cells = []
        for key in ("cpu", "memory"):
            stats = metrics.get(key) or {}
            cells.append(" ".join(_num(stats.get(c), 6) for c in COLUMNS))
        lines.append(
            f"{name:<{width}}  {node.get('state', '?'):<7} {_age(node.get('age')):>4} "
            + " ".join(cells)
        )
    missing = sorted(set(only or []) - set(nodes))
    if missing:
        lines.append(f"not known to the watcher: {', '.join(missing)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        return _loop(args)
    except BrokenPipeError:  # `ballast top | head`: the reader left, nothing more to say
        # Python flushes stdout again at exit; point it at /dev/null so that flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _loop(args: argparse.Namespace) -> int:
    while True:
        try:
            if args.workloads:
                doc = fetch_workloads(args.watcher, args.token)
            else:
                doc = fetch(args.watcher, args.token)
        except TopError as exc:
            print(f"ballast top: {exc}", file=sys.stderr)
            if not args.watch:
                return 1
            doc = None
        if args.watch:
            sys.stdout.write("\x1b[H\x1b[2J")  # clear the screen like `watch` does
        if doc is not None and args.workloads:
            print(render_workloads(doc, args.nodes), flush=True)
        elif doc is not None:
            print(render(doc, args.sort, args.nodes), flush=True)
        if not args.watch:
            return 0
        try:
            time.sleep(args.watch)
        except KeyboardInterrupt:
            return 0
