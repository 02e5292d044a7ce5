"""A real watcher (gunicorn) listening on IPv6: on `::1` alone, and on `:PORT` (its default
form), where one socket serves IPv4 and IPv6 so probes work on any cluster's address family."""

from __future__ import annotations

import pytest
import requests

T = 5


def test_the_watcher_serves_on_ipv6_loopback(prometheus, make_watcher):
    watcher = make_watcher(prometheus.url, host="::1")
    assert watcher.url.startswith("http://[::1]:")
    assert requests.get(f"{watcher.url}/healthz", timeout=T).status_code == 200
    assert watcher.get("/api/v1/status").status_code == 200
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{watcher.port}/healthz", timeout=T)


def test_every_address_means_ipv4_and_ipv6(prometheus, make_watcher):
    watcher = make_watcher(prometheus.url, host="")
    for address in ("127.0.0.1", "[::1]"):
        resp = requests.get(f"http://{address}:{watcher.port}/healthz", timeout=T)
        assert resp.status_code == 200, address
