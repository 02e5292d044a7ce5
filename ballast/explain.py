"""`ballast explain POD`: why the scheduler put a pod where it did, or why nowhere.

Reads the leading scheduler's decision records (`GET /api/v1/decisions/NS/POD`, docs/explain.md)
and prints them as a table: the top nodes with each score plugin's part and their load view,
then the filters' rejection counts. Without a pod it lists the latest decisions. Installed also
as `kubectl-ballast`, so `kubectl ballast explain POD -n NS` works.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any
from urllib.parse import quote

import requests

DEFAULT_SCHEDULER = "http://127.0.0.1:10259"
TIMEOUT = 5.0
OUTCOMES = ("binding", "bound", "bind-failed", "unschedulable", "preempting", "error", "extender")


class ExplainError(Exception):
    """The scheduler could not answer; the message says why."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "explain",
        help="why the scheduler placed a pod where it did (or nowhere)",
        description=(
            "Show the scheduler's record of a pod's scheduling attempts: nodes considered and "
            "feasible, each score plugin's raw and normalised score and weight for the top "
            "nodes, their load as the scores saw it, the winner's margin, the filters' "
            "rejection counts, preemption. Without POD: the latest decisions."
        ),
    )
    p.add_argument("pod", nargs="?", help="pod name (or NAMESPACE/NAME)")
    p.add_argument("-n", "--namespace", default="default", help="namespace (default: default)")
    p.add_argument(
        "--scheduler",
        default=os.environ.get("BALLAST_SCHEDULER_URL", DEFAULT_SCHEDULER),
        help="the scheduler's status address (default: $BALLAST_SCHEDULER_URL or "
        f"{DEFAULT_SCHEDULER})",
    )
    p.add_argument(
        "--token",
        default=os.environ.get("BALLAST_SCHEDULER_TOKEN"),
        help="bearer token when the scheduler's API requires one "
        "(default: $BALLAST_SCHEDULER_TOKEN)",
    )
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.add_argument(
        "--attempts", type=int, default=1, help="how many of the pod's attempts to show (newest)"
    )
    p.add_argument("--outcome", choices=OUTCOMES, help="list: only decisions with this outcome")
    p.add_argument("--node", default="", help="list: only pods placed on (or nominated to) it")
    p.add_argument("--profile", default="", help="list: only this profile's decisions")
    p.add_argument("--limit", type=int, default=20, help="list: at most this many (default 20)")
    p.set_defaults(func=run)


def fetch(base: str, path: str, token: str | None, timeout: float = TIMEOUT) -> dict[str, Any]:
    base = base.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        answer = requests.get(f"{base}{path}", headers=headers, timeout=timeout)
    except requests.RequestException as exc:
        raise ExplainError(f"cannot reach the scheduler at {base}: {exc}") from None
    try:
        doc = answer.json()
    except ValueError:
        doc = {"error": answer.text.strip()[:200] or "(empty body)"}
    if answer.status_code == 200 and isinstance(doc, dict):
        return doc
    why = doc.get("error", "") if isinstance(doc, dict) else ""
    if answer.status_code == 401:
        raise ExplainError(
            "the scheduler wants a token: pass --token or set BALLAST_SCHEDULER_TOKEN"
        )
    if answer.status_code == 503 and isinstance(doc, dict) and "leader" in doc:
        leader = doc.get("leader") or "unknown (no Lease read yet)"
        raise ExplainError(
            f"{base} is a standby replica; ask the leader, {leader} (the scheduler pod named "
            "before the underscore)"
        )
    raise ExplainError(f"{base}{path} answered {answer.status_code}: {why}")


# --- rendering (pure) ------------------------------------------------------------------------
def _clock(t: Any) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) if isinstance(t, (int, float)) else "?"


def _load_cell(load: dict[str, Any] | None) -> str:
    """cpu 41.0% +-3.2 fresh 4s +300m recent | mem 20.0% fresh"""
    if not load:
        return "-"
    parts = []
    for key, label in (("cpu", "cpu"), ("memory", "mem")):
        m = load.get(key) or {}
        text = f"{label} {m.get('usage', 0):.1f}%"
        if m.get("std"):
            text += f" ±{m['std']:.1f}"
        text += f" {m.get('state', '?')}"
        if m.get("age") is not None and m.get("state") not in ("missing", "unserved"):
            text += f" {m['age']:.0f}s"
        if key == "cpu" and load.get("recentCpuM"):
            text += f" +{load['recentCpuM']}m recent"
        parts.append(text)
    return ", ".join(parts)


def _amount(value: float, resource: str) -> str:
    return f"{value:.0f}m" if resource == "cpu" else f"{value / 2**20:.0f}Mi"


def _peak_lines(scores: dict[str, Any]) -> list[str]:
    """PeakFit's predicted peak per top node, with its parts (docs/explain.md):
    n1 cpu: peak 1850m of 2000m (92%) = N-sigma 1200m + 3.0 sigma 650m (RC-like 1700m);
        the pod adds 310m; pods: 4 measured, 1 estimated"""
    rows = [row for row in scores.get("top") or [] if row.get("peak")]
    if not rows:
        return []
    out = ["", f"predicted peak with the pod (PeakFit; the pod from {scores.get('peakPodFrom')}):"]
    for row in rows:
        peak = row["peak"]
        history = peak.get("podsFromHistory") or 0
        raised = peak.get("podsRaised") or 0
        counted = (
            f"pods: {peak['podsMeasured']} measured"
            + (f" ({raised} raised to their workload history's day max)" if raised else "")
            + (f", {history} from workload history" if history else "")
            + f", {peak['podsEstimated']} estimated"
            if peak["from"] == "pods"
            else "from the node's window (no pod measured)"
        )
        for resource in ("cpu", "memory"):
            p = peak.get(resource)
            if not p:
                continue
            share = 100 * p["peak"] / p["allocatable"] if p["allocatable"] else 0.0
            head = f"{_amount(p['peak'], resource)} of {_amount(p['allocatable'], resource)}"
            terms = {
                "rc-like": f"RC-like {_amount(p['rcLike'], resource)}",
                "n-sigma": f"N-sigma {_amount(p['nSigma'], resource)}",
            }
            if p.get("nodePeak"):
                terms["node-peak"] = f"the node's 72 h max {_amount(p['nodePeak'], resource)}"
            why = terms.get(p["won"], p["won"])
            if p["won"] == "n-sigma":
                mean, sigma = _amount(p["mean"], resource), _amount(p["sigma"], resource)
                why += f": mean {mean} + {sigma}"
            why += " (" + ", ".join(t for k, t in terms.items() if k != p["won"]) + ")"
            asked = ""
            if p.get("requested"):  # requestsTerm: the score reads the larger share
                pct = 100 * p["requested"] / p["allocatable"] if p["allocatable"] else 0.0
                asked = f"; requests with the pod {_amount(p['requested'], resource)} ({pct:.0f}%)"
            out.append(
                f"  {row['node']} {resource}: peak {head} ({share:.0f}%) = {why}; "
                f"the pod adds {_amount(p['podShare'], resource)}{asked}"
                + (f"; {counted}" if resource == "cpu" else "")
            )
    return out


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(header), *(line(r) for r in rows)]


def render_attempt(a: dict[str, Any]) -> str:
    out = []
    head = (
        f"{a.get('namespace')}/{a.get('pod')}  attempt {a.get('attempt')} at "
        f"{_clock(a.get('time'))}  profile {a.get('profile')}  outcome {a.get('outcome')}"
    )
    if a.get("node"):
        head += f" -> {a['node']}"
    out.append(head)
    if a.get("outcomeDetail"):
        out.append(f"  {a['outcomeDetail']}")
    if a.get("extender"):
        out.append(f"extender {a['extender']['verb']}: {a['extender']['note']}")
    n = a.get("nodes") or {}
    cut = ""
    if n.get("enoughFeasible", 0) < n.get("total", 0):
        cut = (
            f" (percentageOfNodesToScore {n.get('percentageOfNodesToScore')}: filtering "
            f"stops at {n.get('enoughFeasible')} feasible)"
        )
    out.append(
        f"nodes: {n.get('total')} total, {n.get('considered')} considered, "
        f"{n.get('feasible')} feasible, {n.get('scored')} scored{cut}"
    )
    pred = a.get("prediction") or {}
    if pred:
        use = f"{pred.get('cpuM')}m CPU"
        if pred.get("memoryBytes"):
            use += f", {pred['memoryBytes'] // 2**20}Mi memory"
        source = pred.get("source")
        if pred.get("workload"):
            source = f"{source} of {pred['workload']}"
        out.append(f"pod's predicted use: {use} (estimate: {source})")
    scores = a.get("scores")
    if scores:
        w = scores.get("winner") or {}
        line = f"winner {w.get('node')}"
        if w.get("total") is not None:
            line += f": total {w['total']}"
        runner = w.get("runnerUp")
        if runner:
            line += f", {w.get('margin')} ahead of {runner['node']} ({runner['total']})"
        if w.get("ties", 1) > 1:
            line += f"; {w['ties']} nodes tied, broken {w.get('tieBreak')}"
        elif w.get("tieBreak"):
            line += f"; {w['tieBreak']}"
        out.append(line)
        plugins = [p for p in scores.get("plugins") or [] if not p.get("skipped")]
        skipped = [p["name"] for p in scores.get("plugins") or [] if p.get("skipped")]
        header = ["NODE", "TOTAL", *(f"{p['name']} x{p['weight']}" for p in plugins), "LOAD"]
        rows = []
        for row in scores.get("top") or []:
            cells = [row["node"], "-" if row.get("total") is None else str(row["total"])]
            for p in plugins:
                part = (row.get("plugins") or {}).get(p["name"])
                if part is None:
                    cells.append("-")
                elif part["raw"] == part["normalized"]:
                    cells.append(str(part["normalized"]))
                else:
                    cells.append(f"{part['raw']}->{part['normalized']}")
            cells.append(_load_cell(row.get("load")))
            rows.append(cells)
        out.append("")
        out.extend(_table(header, rows))
        if skipped:
            out.append(f"(same for every node, skipped: {', '.join(skipped)})")
        out.extend(_peak_lines(scores))
    f = a.get("filters") or {}
    out.append("")
    if f.get("preFilter"):
        pre = f["preFilter"]
        out.append(f"rejected before any node was tried, by {pre.get('plugin')}: {pre['reason']}")
    else:
        out.append(f"filtered out: {f.get('rejectedNodes', 0)} node(s)")
        for plugin, counts in (f.get("byPlugin") or {}).items():
            for reason, count in sorted(counts.items()):
                out.append(f"  {count:>5}  {plugin}: {reason}")
    if a.get("message"):
        out.append(f"FailedScheduling: {a['message']}")
    pre = a.get("preemption")
    if pre:
        if pre.get("nominatedNode"):
            victims = ", ".join(
                f"{v['namespace']}/{v['name']} (priority {v['priority']})" for v in pre["victims"]
            )
            out.append(f"preemption: nominated {pre['nominatedNode']}, evicting {victims}")
            out.append(f"  why: {pre.get('why')}")
        else:
            why = (pre.get("why") or "").removeprefix("preemption: ")
            out.append(f"preemption: none; {why}")
    return "\n".join(out)


def render_pod(doc: dict[str, Any], attempts: int = 1) -> str:
    shown = (doc.get("attempts") or [])[: max(1, attempts)]
    return "\n\n".join(render_attempt(a) for a in shown)


def render_list(doc: dict[str, Any]) -> str:
    items = doc.get("items") or []
    rows = [
        [
            _clock(i.get("time")),
            f"{i.get('namespace')}/{i.get('pod')}",
            str(i.get("attempt")),
            i.get("profile", ""),
            i.get("outcome", ""),
            i.get("node") or "-",
        ]
        for i in items
    ]
    if not rows:
        return "no decisions recorded (yet)"
    return "\n".join(_table(["TIME", "POD", "ATTEMPT", "PROFILE", "OUTCOME", "NODE"], rows))


def run(args: argparse.Namespace) -> int:
    try:
        if args.pod:
            namespace, name = args.namespace, args.pod
            if "/" in name:
                namespace, _, name = name.partition("/")
            path = f"/api/v1/decisions/{quote(namespace, safe='')}/{quote(name, safe='')}"
            doc = fetch(args.scheduler, path, args.token)
            text = render_pod(doc, args.attempts)
        else:
            query = {"limit": args.limit, "outcome": args.outcome, "node": args.node}
            query["profile"] = args.profile
            params = "&".join(f"{k}={quote(str(v))}" for k, v in query.items() if v)
            doc = fetch(args.scheduler, "/api/v1/decisions?" + params, args.token)
            text = render_list(doc)
    except ExplainError as exc:
        print(f"ballast explain: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(doc, indent=2) if args.output == "json" else text)
    return 0
