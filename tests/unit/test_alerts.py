"""Ballast's alerts (charts/ballast/files/alerts.yaml): promtool accepts them, each fires on the
series that mean trouble and stays quiet on healthy ones (`promtool test rules`), and each has
its runbook section in docs/runbooks.md."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from sandbox.peers.helm import chart

ALERTS = chart.CHART / "files" / "alerts.yaml"
RUNBOOKS = chart.DEPLOY_DOC.parent / "runbooks.md"

# alert -> (input series, eval time, the alert's extra labels, its summary)
FIRING = {
    "BallastWatcherNotPolling": (
        {'ballast_watcher_leader{instance="w1"}': "0x20"}, "10m", {}, None,
    ),
    "BallastWatcherPollsFailing": (
        {'ballast_watcher_poll_errors_total{instance="w1",reason="timeout"}': "0+1x30"},
        "25m", {"reason": "timeout"}, "Watcher queries to the metrics store fail (timeout).",
    ),
    "BallastWatcherDataStale": (
        {'ballast_watcher_nodes{instance="w1",state="fresh"}': "8x30",
         'ballast_watcher_nodes{instance="w1",state="stale"}': "2x30"},
        "20m", {}, "20% of nodes have stale or expired load data.",
    ),
    "BallastWatcherStoreDown": (
        {'ballast_watcher_store_up{instance="w1"}': "0x20"}, "10m", {}, None,
    ),
    "BallastSchedulerWatcherUnreachable": (
        {'ballast_scheduler_watcher_fetches_total{result="ok"}': "0+1x30",
         'ballast_scheduler_watcher_fetches_total{result="error"}': "0+3x30"},
        "20m", {}, None,
    ),
    "BallastSchedulerUnauthorized": (
        {'ballast_scheduler_watcher_fetches_total{result="unauthorized"}': "0+1x30"},
        "15m", {}, None,
    ),
    "BallastSchedulerScoringFromRequests": (
        {'ballast_scheduler_load_fallbacks_total{reason="stale"}': "0+5x40"}, "30m", {}, None,
    ),
    "BallastPodsPendingOnLoad": (
        {'ballast_scheduler_unschedulable_rejections_total{plugin="LoadThreshold"}': "0+1x40",
         'ballast_scheduler_pending_pods{queue="unschedulable"}': "3x40"},
        "30m", {}, None,
    ),
    "BallastSchedulerNoLeader": (
        {'ballast_scheduler_leader{instance="a"}': "0x10",
         'ballast_scheduler_leader{instance="b"}': "0x10"}, "5m", {}, None,
    ),
    "BallastSchedulerTwoLeaders": (
        {'ballast_scheduler_leader{instance="a"}': "1x10",
         'ballast_scheduler_leader{instance="b"}': "1x10"}, "5m", {}, None,
    ),
    "BallastRebalancerEvictionsFailing": (
        {'ballast_rebalancer_skipped_total{reason="failed"}': "0+1x30"}, "15m", {}, None,
    ),
    "BallastRebalancerRefused": (
        {'ballast_rebalancer_skipped_total{reason="pdb"}': "0+1x60",
         'ballast_rebalancer_confirmed_hot_nodes{instance="r1"}': "1x60"}, "45m", {}, None,
    ),
    "BallastRebalancerNoLeader": (
        {'ballast_rebalancer_leader{instance="r1"}': "0x20"}, "10m", {}, None,
    ),
}  # fmt: skip

# Healthy series: the alert stays quiet.
QUIET = {
    "BallastWatcherNotPolling": {'ballast_watcher_leader{instance="w1"}': "1x20",
                                 'ballast_watcher_leader{instance="w2"}': "0x20"},
    "BallastWatcherDataStale": {'ballast_watcher_nodes{instance="w1",state="fresh"}': "19x30",
                                'ballast_watcher_nodes{instance="w1",state="stale"}': "1x30",
                                'ballast_watcher_nodes{instance="w2",state="fresh"}': "19x30",
                                'ballast_watcher_nodes{instance="w2",state="stale"}': "1x30"},
    "BallastSchedulerWatcherUnreachable": {
        'ballast_scheduler_watcher_fetches_total{result="ok"}': "0+10x30",
        'ballast_scheduler_watcher_fetches_total{result="error"}': "0+1x30"},
    "BallastSchedulerNoLeader": {'ballast_scheduler_leader{instance="a"}': "1x10",
                                 'ballast_scheduler_leader{instance="b"}': "0x10"},
    "BallastPodsPendingOnLoad": {
        'ballast_scheduler_unschedulable_rejections_total{plugin="NodeResourcesFit"}': "0+1x40",
        'ballast_scheduler_pending_pods{queue="unschedulable"}': "3x40"},
    "BallastRebalancerRefused": {'ballast_rebalancer_skipped_total{reason="pdb"}': "0+1x60",
                                 'ballast_rebalancer_confirmed_hot_nodes{instance="r1"}': "0x60"},
}  # fmt: skip


def rules() -> dict[str, dict]:
    doc = yaml.safe_load(ALERTS.read_text())
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"]}


def test_promtool_accepts_the_rules():
    result = subprocess.run(["promtool", "check", "rules", str(ALERTS)], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_tested_and_has_its_runbook():
    text = RUNBOOKS.read_text()
    headings = {m.lower() for m in re.findall(r"^## (\w+)$", text, re.M)}
    for name, rule in rules().items():
        assert name in FIRING, name
        assert name.lower() in headings, name
        assert rule["annotations"]["runbook_url"] == f"RUNBOOK#{name.lower()}"
        assert rule["labels"]["severity"] in ("critical", "warning", "info")


def test_each_alert_fires_on_trouble_and_not_on_health(tmp_path: Path):
    table = rules()
    tests = []
    for name, (series, at, labels, summary) in FIRING.items():
        rule = table[name]
        annotations = dict(rule["annotations"])
        if summary is not None:
            annotations["summary"] = summary
        tests.append({
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "alert_rule_test": [{
                "eval_time": at,
                "alertname": name,
                "exp_alerts": [{"exp_labels": {**rule["labels"], **labels},
                                "exp_annotations": annotations}],
            }],
        })  # fmt: skip
    for name, series in QUIET.items():
        tests.append({
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "alert_rule_test": [{"eval_time": "45m", "alertname": name, "exp_alerts": []}],
        })  # fmt: skip
    spec = tmp_path / "alerts-test.yaml"
    spec.write_text(yaml.safe_dump({"rule_files": [str(ALERTS)], "evaluation_interval": "1m",
                                    "tests": tests}))  # fmt: skip
    result = subprocess.run(["promtool", "test", "rules", str(spec)], capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
