"""The dashboard in a real browser and `ballast top` in a terminal, both on a real watcher.

A watcher process polls the session's Prometheus, which scrapes the synthetic exporter; this
module's nodes carry loads it sets. Debian's headless chromium loads the page from the watcher,
runs its JavaScript and dumps the DOM; the node names and their CPU values must be there. A
screenshot is written to tests/artifacts/ for people to look at.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from scheduler.rebalancer.status import Decision, DecisionLog, StatusServer, Telemetry
from tests.fixtures.ports import free_port, wait_for
from tests.fixtures.watcher import WatcherProcess
from tests.integration.scheduler_support import create_pods, pod_body, running, wait_bound

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
NODES = {"dash-node-0": (20.0, 30.0), "dash-node-1": (55.0, 45.0), "dash-node-2": (85.0, 70.0)}
# CPU comes from rate() over a few seconds of scrapes on a busy 2-core machine, where scrape
# timing jitter moves it by a few points; the loads set are 30+ points apart.
TOLERANCE = 5.0
# A late poll on a loaded machine may turn a node stale for a moment; expired would be a bug.
SHOWN_STATES = ("fresh", "stale")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


@pytest.fixture(scope="module")
def watcher_url(exporter, prometheus, tmp_path_factory):
    for node, (cpu, memory) in NODES.items():
        exporter.set(node, cpu=cpu, memory=memory)
    # A 10 s rate range halves the scrape-jitter noise of the default 5 s one.
    watcher = WatcherProcess(
        tmp_path_factory.mktemp("watcher"), prometheus.url, rate_range="10s"
    ).start()
    try:
        wait_for(
            lambda: all_nodes_near(watcher.url),
            timeout=60,
            what=f"the watcher to report {', '.join(NODES)} (log: {watcher.log_path})",
        )
        yield watcher.url
    finally:
        watcher.stop()


def all_nodes_near(url: str) -> bool:
    nodes = requests.get(f"{url}/api/v1/nodes", timeout=2).json()["nodes"]
    for name, (cpu, _) in NODES.items():
        latest = nodes.get(name, {}).get("metrics", {}).get("cpu", {}).get("latest")
        if latest is None or abs(latest - cpu) > TOLERANCE:
            return False
    return True


def chromium(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["/usr/bin/chromium", *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_dashboard_shows_every_node_with_its_load(watcher_url, tmp_path):
    # The virtual time budget lets the page's fetches and rendering finish before the dump.
    result = chromium(
        "--virtual-time-budget=5000", "--dump-dom", f"{watcher_url}/", tmp_path=tmp_path
    )
    dom = result.stdout
    assert 'data-state="loaded"' in dom, f"page did not load its data: {result.stderr[-2000:]}"
    for name, (cpu, memory) in NODES.items():
        card = re.search(rf'data-node="{name}".*?(?=data-node=|$)', dom, re.S)
        assert card, f"{name} missing from the dashboard"
        shown = {
            key: float(value)
            for key, value in re.findall(r'data-value="(cpu|memory)">([\d.]+)%', card.group(0))
        }
        assert abs(shown["cpu"] - cpu) <= TOLERANCE, (name, shown)
        assert abs(shown["memory"] - memory) <= TOLERANCE, (name, shown)
        badge = re.search(r'class="badge (\w+)"', card.group(0))
        assert badge and badge.group(1) in SHOWN_STATES, card.group(0)
    # no rebalancer_url on this watcher: the section says so, as no error
    section = re.search(r'<div id="rebalancer" class="off" data-state="off">(.*?)</div>', dom, re.S)
    assert section and "rebalancer: not configured" in section.group(1), dom[:3000]


def nodes_part(dom: str) -> str:
    return dom[dom.find('id="nodes"') :][:3000]


def test_heat_map_view_colours_every_node(watcher_url, tmp_path):
    result = chromium(
        "--virtual-time-budget=5000", "--dump-dom", f"{watcher_url}/?view=heat", tmp_path=tmp_path
    )
    dom = result.stdout
    assert 'class="heat"' in dom, result.stderr[-2000:]
    for name, (cpu, _) in NODES.items():
        tile = re.search(
            rf'<div class="tile (\w+)" data-node="{name}"[^>]*title="[^"]*CPU ([\d.]+)%', dom
        )
        assert tile, f"no heat-map tile for {name} in {nodes_part(dom)}"
        assert tile.group(1) in SHOWN_STATES, tile.group(0)
        assert abs(float(tile.group(2)) - cpu) <= TOLERANCE, tile.group(0)


def test_dashboard_screenshot_is_written(watcher_url, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "dashboard.png"
    shot.unlink(missing_ok=True)
    result = chromium(
        "--virtual-time-budget=5000",
        "--window-size=1280,800",
        f"--screenshot={shot}",
        f"{watcher_url}/",
        tmp_path=tmp_path,
    )
    assert shot.is_file(), result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_ballast_top_prints_the_same_nodes(watcher_url):
    result = subprocess.run(
        [sys.executable, "-m", "ballast.cli", "top", "--watcher", watcher_url, "--sort", "cpu",
         *NODES],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert [r[0] for r in rows] == ["dash-node-2", "dash-node-1", "dash-node-0"]
    for row in rows:
        cpu, memory = NODES[row[0]]
        assert row[1] in SHOWN_STATES, row
        assert abs(float(row[3]) - cpu) <= TOLERANCE and abs(float(row[8]) - memory) <= TOLERANCE


def test_ballast_top_fails_clearly_without_a_watcher():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ballast.cli",
            "top",
            "--watcher",
            f"http://127.0.0.1:{free_port()}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "cannot reach the watcher" in result.stderr


def test_dashboard_explains_a_decision_next_to_the_node_loads(
    exporter, prometheus, kube_api, kube_nodes, namespace, tmp_path
):
    """The whole chain: Prometheus -> watcher -> scheduler (scoring from it, recording) -> the
    watcher's proxy -> the page, which must show the winner the API server bound the pod to."""
    label = {"ballast-test": namespace}
    nodes = kube_nodes(2, cpu="4", labels=label)
    loads = dict(zip(nodes, (25.0, 60.0), strict=True))
    for node, cpu in loads.items():
        exporter.set(node, cpu=cpu, memory=40.0)
    port = free_port()
    watcher = WatcherProcess(
        tmp_path / "watcher", prometheus.url, rate_range="10s",
        scheduler_url=f"http://127.0.0.1:{port}",
    ).start()  # fmt: skip
    try:

        def settled() -> bool:  # the scores read the window's average
            doc = watcher.json("/api/v1/nodes")["nodes"]
            avg = {n: doc.get(n, {}).get("metrics", {}).get("cpu", {}).get("avg") for n in nodes}
            return all(v is not None and abs(v - loads[n]) <= TOLERANCE for n, v in avg.items())

        wait_for(settled, timeout=60, what=f"the watcher's window for {nodes}")
        doc = {"watcherAddress": watcher.url}
        with running(kube_api, doc, metrics_listen=f"127.0.0.1:{port}") as runtime:
            wait_for(lambda: runtime.metrics.loads(), timeout=15, what="the watcher's loads")
            create_pods(kube_api, namespace, [pod_body("web", node_selector=label)])
            bound = wait_bound(kube_api, namespace, 1)["web"]
            wait_for(
                lambda: watcher.get(f"/api/v1/scheduler/decisions/{namespace}/web").ok,
                timeout=10,
                what="the decision through the watcher",
            )
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page = f"{watcher.url}/?explain={namespace}/web"
            dom = chromium("--virtual-time-budget=5000", "--dump-dom", page, tmp_path=tmp_path)
            chromium(
                "--virtual-time-budget=5000", "--window-size=1280,900",
                f"--screenshot={ARTIFACTS / 'dashboard-explain.png'}", page, tmp_path=tmp_path,
            )  # fmt: skip
    finally:
        watcher.stop()
    html = dom.stdout
    panel = re.search(r'<div class="panel" id="explanation"([^>]*)>(.*?)</table>', html, re.S)
    assert panel, f"no explanation on the page: {dom.stderr[-2000:]}"
    attrs, body = panel.groups()
    assert 'data-state="loaded"' in attrs and f'data-pod="{namespace}/web"' in attrs
    assert f'data-winner="{bound}"' in attrs  # the node the API server has the pod on
    rows = dict(re.findall(r'<tr data-node="([^"]+)" data-total="(\d+)"', body))
    assert set(rows) == set(nodes) and int(rows[bound]) == max(map(int, rows.values()))
    # next to the node loads: the load the score saw (fresh, from the watcher) and the load now
    for node, cpu in loads.items():
        row = re.search(rf'<tr data-node="{node}".*?</tr>', body, re.S).group(0)
        seen = re.findall(r'class="load">cpu ([\d.]+)% (\w+)', row)[0]
        assert seen[1] == "fresh" and abs(float(seen[0]) - cpu) <= TOLERANCE, row
        now = re.findall(r'class="load">cpu ([\d.]+)%, mem', row)
        assert now and abs(float(now[-1]) - cpu) <= TOLERANCE, row
    assert f'data-pod="{namespace}/web"' in html.split('id="decisions"', 1)[1]  # in the list


def test_dashboard_shows_the_rebalancer(prometheus, tmp_path):
    """The rebalancer's own status server (its decision log, a round's summary) behind the
    watcher's rebalancer_url: the section shows the hot nodes, the last round, the tallies and
    the decisions with their numbers; once the rebalancer is gone, a clear error."""
    log = DecisionLog()
    log.add(Decision(1000.0, "skip", "hot-1", "ns/db-0", "pdb", "a PodDisruptionBudget allows 0"))
    log.add(
        Decision(1001.0, "would-evict", "hot-1", "ns/web-1", "dry-run", "cpu 91 -> 62 %", "cool-1")
    )
    log.add(Decision(1002.0, "evict", "hot-2", "ns/web-2", "cpu-hot", "cpu 88 -> 55 %", "cool-2"))
    summary = {
        "time": time.time() - 4, "leading": True, "hot": {"hot-1": 3, "hot-2": 1},
        "confirmed": ["hot-1"], "unknown": {}, "resting": {"hot-2": time.time() + 300},
        "high": {"cpu": 80.0}, "low": {"cpu": 50.0}, "evicted": ["ns/web-2"],
        "wouldEvict": ["ns/web-1"],
    }  # fmt: skip
    status = {
        "identity": "rebalancer-0_ab12", "leading": True, "dryRun": True, "enabled": True,
        "profile": "ballast", "consecutive": 3, "lastRound": summary,
    }  # fmt: skip
    server = StatusServer("127.0.0.1", 0, Telemetry(), log, lambda: status, lambda: (True, "ok"))
    server.start()
    watcher = WatcherProcess(
        tmp_path / "watcher", prometheus.url, rebalancer_url=f"http://127.0.0.1:{server.port}"
    ).start()
    try:
        assert watcher.json("/api/v1/rebalancer/status")["lastRound"]["confirmed"] == ["hot-1"]
        dom = chromium("--virtual-time-budget=5000", "--dump-dom", watcher.url, tmp_path=tmp_path)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        chromium(
            "--virtual-time-budget=5000", "--window-size=1280,700",
            f"--screenshot={ARTIFACTS / 'dashboard-rebalancer.png'}", watcher.url,
            tmp_path=tmp_path,
        )  # fmt: skip
        server.stop()
        gone = chromium("--virtual-time-budget=8000", "--dump-dom", watcher.url, tmp_path=tmp_path)
    finally:
        server.stop()
        watcher.stop()
    section = re.search(
        r'<div id="rebalancer" class="" data-state="loaded"(.*?)</table>', dom.stdout, re.S
    )
    assert section, f"no rebalancer section: {dom.stdout[:3000]} {dom.stderr[-2000:]}"
    html = section.group(1)
    assert "leader rebalancer-0_ab12" in html and "dry run" in html
    assert 'data-hot="hot-1" data-streak="3"' in html and "(3/3, confirmed)" in html
    assert 'data-hot="hot-2" data-streak="1"' in html
    assert "would evict ns/web-1" in html and "evicted ns/web-2" in html
    counts = dict(re.findall(r'<span data-action="([\w-]+)" data-count="(\d+)"', html))
    assert counts == {"evict": "1", "would-evict": "1", "skip": "1"}, counts
    assert "evictions 1 (cpu-hot 1)" in html and "skipped 1 (pdb 1)" in html
    rows = re.findall(
        r'<tr data-action="([\w-]+)" data-pod="([^"]*)" data-node="([^"]*)" data-target="([^"]*)">'
        r"(.*?)</tr>",
        html,
    )
    assert [r[:4] for r in rows] == [  # newest first
        ("evict", "ns/web-2", "hot-2", "cool-2"),
        ("would-evict", "ns/web-1", "hot-1", "cool-1"),
        ("skip", "ns/db-0", "hot-1", ""),
    ]
    assert "cpu 91 -&gt; 62 %" in rows[1][4] and "dry-run" in rows[1][4]
    error = re.search(
        r'<div id="rebalancer" class="off" data-state="error">(.*?)</div>', gone.stdout
    )
    assert error and "cannot reach the rebalancer" in error.group(1), gone.stdout[:3000]
