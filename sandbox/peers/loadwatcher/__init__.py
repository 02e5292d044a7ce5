"""paypal/load-watcher, the Go service Ballast's watcher stands in for, built from the Go module
of one pinned release so the watcher benchmark can serve the same Prometheus with both.

The wrapper module beside this file builds load-watcher's main package through a `tool` line;
`ensure_built` runs on the benchmark's first use (or `python -m sandbox.peers.loadwatcher`); run it
under the heavy-job lock, it is a Go build (about a minute from a warm module cache).

load-watcher takes its settings from the environment only (METRICS_PROVIDER_NAME,
METRICS_PROVIDER_ADDRESS) and listens on :2020 on every interface, a port it hard-codes, so
only one can run on a machine at a time.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.cluster import build, versions
from sandbox.cluster.errors import BuildError

MODULE_DIR = Path(__file__).resolve().parent
COMMAND = "github.com/paypal/load-watcher"
PORT = 2020  # load-watcher's own, not configurable


def binary() -> Path:
    """The built binary; raises with the command to run when it is missing."""
    return build.binary(versions.load_watcher_binary(), how="python -m sandbox.peers.loadwatcher")


def ensure_built(say: build.Printer = print) -> Path:
    """The load-watcher binary, built first when missing."""
    target = build.bin_dir() / versions.load_watcher_binary()
    if build.cached(target, say):
        return target
    problems = versions.load_watcher_go_mod_mismatches((MODULE_DIR / "go.mod").read_text())
    if problems:
        raise BuildError(
            "sandbox/peers/loadwatcher/go.mod disagrees with sandbox/cluster/versions.py: "
            + "; ".join(problems)
            + ". There, run `go get github.com/paypal/load-watcher@vX.Y.Z` and `go mod tidy`"
        )
    say(f"building load-watcher v{versions.LOAD_WATCHER_VERSION}")
    return build.build_command(target, MODULE_DIR, COMMAND, "loadwatcher", "load-watcher", say)
