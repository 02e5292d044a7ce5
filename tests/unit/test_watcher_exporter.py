"""The synthetic exporter's counters integrate the utilisation that was set."""

from __future__ import annotations

import re
import time

import pytest
import requests

from sandbox.load.exporter import SyntheticExporter


def samples(text: bytes) -> dict[str, float]:
    out = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def test_counters_follow_the_set_utilisation():
    exp = SyntheticExporter(cpus=2, memory_bytes=1000)
    exp.set("n1", cpu=25.0, memory=40.0, net_rx=100.0)
    t0 = time.time() + 100
    a, b = samples(exp.render(t0)), samples(exp.render(t0 + 10))
    idle = 'node_cpu_seconds_total{cpu="1",instance="n1",mode="idle"}'
    user = 'node_cpu_seconds_total{cpu="1",instance="n1",mode="user"}'
    assert b[idle] - a[idle] == pytest.approx(7.5, abs=0.002)
    assert b[user] - a[user] == pytest.approx(2.5, abs=0.002)
    rx = 'node_network_receive_bytes_total{device="eth0",instance="n1"}'
    assert b[rx] - a[rx] == pytest.approx(1000, abs=1)
    assert b['node_memory_MemAvailable_bytes{instance="n1"}'] == 600
    assert b['node_memory_MemTotal_bytes{instance="n1"}'] == 1000
    assert len([k for k in b if k.startswith("node_cpu_seconds_total")]) == 4


def test_families_are_grouped_and_removed_nodes_vanish():
    exp = SyntheticExporter(cpus=1)
    exp.set("a", cpu=1)
    exp.set("b", cpu=2)
    exp.remove("a")
    text = exp.render().decode()
    assert 'instance="a"' not in text and 'instance="b"' in text
    names = [re.match(r"[a-zA-Z_]+", ln).group(0) for ln in text.splitlines() if ln[0] != "#"]
    # Each family's lines come together, as the text format requires.
    assert len(set(names)) == 4
    runs = [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]
    assert len(runs) == len(set(runs))


def test_bad_settings_are_refused():
    exp = SyntheticExporter()
    with pytest.raises(ValueError, match="cpu"):
        exp.set("n", cpu=101)
    with pytest.raises(ValueError, match="net_rx"):
        exp.set("n", net_rx=-1)


def test_pause_answers_503():
    exp = SyntheticExporter().start()
    try:
        exp.set("n", cpu=10)
        assert requests.get(f"{exp.url}/metrics", timeout=5).status_code == 200
        exp.pause()
        assert requests.get(f"{exp.url}/metrics", timeout=5).status_code == 503
        exp.resume()
        assert requests.get(f"{exp.url}/metrics", timeout=5).status_code == 200
        assert requests.get(f"{exp.url}/other", timeout=5).status_code == 404
    finally:
        exp.stop()
