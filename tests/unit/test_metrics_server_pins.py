"""sandbox/peers/metrics_server/go.mod builds metrics-server at the release pinned in
versions.py."""

from __future__ import annotations

from sandbox.cluster import build, versions


def _go_mod() -> str:
    return (build.METRICS_SERVER_DIR / "go.mod").read_text()


def test_metrics_server_go_mod_matches_the_pin():
    assert versions.metrics_server_go_mod_mismatches(_go_mod()) == []
    assert versions.METRICS_SERVER_VERSION in versions.metrics_server_binary()


def test_a_drifted_metrics_server_go_mod_is_reported():
    pinned = f"v{versions.METRICS_SERVER_VERSION}"
    drifted = _go_mod().replace(
        f"sigs.k8s.io/metrics-server {pinned}", "sigs.k8s.io/metrics-server v0.7.2"
    )
    assert versions.metrics_server_go_mod_mismatches(drifted) == [
        f"sigs.k8s.io/metrics-server is v0.7.2, pinned {pinned}"
    ]
