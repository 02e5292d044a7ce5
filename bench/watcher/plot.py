"""The watcher benchmark's stores side by side: one PNG from the result files of one node count.

`python -m bench.watcher.plot --nodes 20000` reads bench/results/watcher-20000.json (Prometheus)
and watcher-20000-<store>.json for the other stores that have one, and draws the poll against
the bare queries, and GET /watcher's latency, per store, into docs/images/.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.harness.common import new_figure, save
from bench.watcher.run import RESULTS, STORES

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def result_files(nodes: int) -> dict[str, Path]:
    """store -> its result file at `nodes`, for the stores that have one."""
    base = "watcher" if nodes == 5000 else f"watcher-{nodes}"
    out = {}
    for store in STORES:
        path = RESULTS.with_name(
            f"{base}.json" if store == "prometheus" else f"{base}-{store}.json"
        )
        if path.is_file():
            out[store] = path
    return out


def figures(doc: dict[str, Any]) -> dict[str, float]:
    """The numbers the picture shows, from one result document."""
    watcher = doc["http"]["GET /watcher (all nodes)"]
    return {
        "bare": doc["bare_promql_seconds"]["side_by_side"]["p50"],
        "poll": doc["poll_cycle_seconds"]["p50"],
        "p50_ms": watcher["p50_ms"],
        "p99_ms": watcher["p99_ms"],
        "clients": watcher["clients"],
        "rss_mb": doc["watcher_rss_mb_master_plus_2_workers"],
        # The polling thread's CPU, which the machine's load hardly moves (older runs lack it).
        "own_cpu": (doc.get("poll_own_cpu_seconds") or {}).get("p50", 0.0),
        "load": doc["machine"]["load_average_1m_at_start_and_end"],
    }


def plot(nodes: int, docs: dict[str, dict[str, Any]], path: Path) -> Path:
    stores = list(docs)
    rows = [figures(docs[s]) for s in stores]
    x = range(len(stores))
    fig, (left, right) = new_figure(11, 4.2, ncols=2)
    width = 0.27
    left.bar([i - width for i in x], [r["bare"] for r in rows], width, label="bare PromQL")
    left.bar(list(x), [r["poll"] for r in rows], width, label="watcher poll")
    left.bar([i + width for i in x], [r["own_cpu"] for r in rows], width,
             label="the poll's own CPU")  # fmt: skip
    for i, r in zip(x, rows, strict=True):
        left.annotate(f"{r['poll'] / r['bare']:.2f}x", (i, r["poll"]), ha="center",
                      va="bottom", fontsize=9)  # fmt: skip
    loads = [f"{s}\nload {r['load'][0]:.0f}-{r['load'][1]:.0f}" for s, r in zip(stores, rows,
             strict=True)]  # fmt: skip
    left.set_xticks(list(x), loads)
    left.set_ylabel("seconds (p50)")
    left.set_title(f"poll vs the bare queries, {nodes:,} nodes")
    left.legend()
    right.bar([i - width / 2 for i in x], [r["p50_ms"] for r in rows], width, label="p50")
    right.bar([i + width / 2 for i in x], [r["p99_ms"] for r in rows], width, label="p99")
    right.axhline(50, color="grey", linestyle="--", linewidth=1, label="p99 goal")
    labels = [f"{s}\nRSS {r['rss_mb']:.0f} MB" for s, r in zip(stores, rows, strict=True)]
    right.set_xticks(list(x), labels)
    right.set_ylabel("ms")
    right.set_title(f"GET /watcher (all nodes), {rows[0]['clients']} clients")
    right.legend()
    return save(fig, path, legend=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000)
    args = parser.parse_args(argv)
    files = result_files(args.nodes)
    if not files:
        raise SystemExit(f"no watcher result at {args.nodes} nodes in {RESULTS.parent}")
    docs = {store: json.loads(path.read_text()) for store, path in files.items()}
    print(plot(args.nodes, docs, IMAGES / f"watcher-stores-{args.nodes}.png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
