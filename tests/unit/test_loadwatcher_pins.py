"""The load-watcher pin and its go.mod agree."""

from __future__ import annotations

from sandbox.cluster import versions
from sandbox.peers import loadwatcher


def _go_mod() -> str:
    return (loadwatcher.MODULE_DIR / "go.mod").read_text()


def test_loadwatcher_go_mod_matches_the_pin():
    assert versions.load_watcher_go_mod_mismatches(_go_mod()) == []


def test_a_drifted_loadwatcher_go_mod_is_reported():
    pinned = f"v{versions.LOAD_WATCHER_VERSION}"
    drifted = _go_mod().replace(f"paypal/load-watcher {pinned}", "paypal/load-watcher v0.2.3")
    assert versions.load_watcher_go_mod_mismatches(drifted) == [
        f"github.com/paypal/load-watcher is v0.2.3, pinned {pinned}"
    ]
    no_tool = "\n".join(x for x in _go_mod().splitlines() if not x.startswith("tool "))
    assert versions.load_watcher_go_mod_mismatches(no_tool) == [
        "no `tool github.com/paypal/load-watcher` line"
    ]


def test_the_binary_carries_the_pin():
    assert versions.load_watcher_binary() == f"load-watcher-{versions.LOAD_WATCHER_VERSION}"
