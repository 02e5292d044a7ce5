"""VictoriaMetrics single-node for the watcher's tests: a PromQL (MetricsQL) store other than
Prometheus, built lazily from the Go module of one pinned release into the binary cache.

Only the single-node binary can be built here: the cluster components (vminsert, vmselect,
vmstorage) live on the `-cluster` tags, which the Go module proxy does not serve (403 for
v1.151.0-cluster, v1.148.9-cluster and v1.136.23-cluster), so partial answers come from a
Thanos querier over sidecars instead (sandbox/peers/thanos/).

`ensure_built` is what `make victoriametrics-build` runs
(`python -m sandbox.peers.victoriametrics`);
run it under the heavy-job lock, it is a Go build. `Server` runs the binary scraping targets
itself (its `-promscrape.config` takes Prometheus's scrape_configs).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml

from sandbox.cluster import build, versions
from sandbox.cluster.storeproc import StoreProcess

MODULE = "github.com/VictoriaMetrics/VictoriaMetrics"
# VictoriaMetrics answers an instant query at "now" from data at least this old (its default
# is 30 s, so that a point still being written is never half there); the watcher stamps a
# poll with its own time, so the tests ask for the newest data as Prometheus gives it.
LATENCY_OFFSET = "1s"


def binary() -> Path:
    """The built binary; raises with the command to run when it is missing."""
    return build.binary(versions.victoriametrics_binary(), how="make victoriametrics-build")


def ensure_built(say: build.Printer = print) -> Path:
    """The single-node binary, built first when missing (minutes from a cold Go cache)."""
    target = build.bin_dir() / versions.victoriametrics_binary()
    if build.cached(target, say):
        return target
    go = build.find_go()
    target.parent.mkdir(parents=True, exist_ok=True)
    version = f"v{versions.VICTORIAMETRICS_VERSION}"
    say(f"building VictoriaMetrics {version} (single node)")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-vm-") as tmp:
        ldflags = f"-s -w -X {MODULE}/lib/buildinfo.Version=victoria-metrics-{version}"
        cmd = [go, "install", "-ldflags", ldflags, f"{MODULE}/app/victoria-metrics@{version}"]
        # Outside any module, so `go install pkg@version` builds with VictoriaMetrics' go.mod.
        env = dict(os.environ) | {"GOBIN": tmp, "GOFLAGS": "-buildvcs=false"}
        log = target.parent / "build-victoriametrics.log"
        build._run(cmd, Path(tmp), env, log, "VictoriaMetrics", say)
        (Path(tmp) / "victoria-metrics").replace(target)
    return target


def scrape_config(targets: list[str], interval: str) -> dict:
    """Prometheus-style scrape_configs for the synthetic exporter (its `instance` labels kept)."""
    return {
        "global": {"scrape_interval": interval},
        "scrape_configs": [
            {
                "job_name": "synthetic",
                "honor_labels": True,
                "static_configs": [{"targets": targets}],
            }
        ],
    }


class Server(StoreProcess):
    """One victoria-metrics process with its own data folder, scraping `targets`."""

    def __init__(self, workdir: Path, targets: list[str], port: int, interval: str = "1s") -> None:
        super().__init__(workdir, "victoria-metrics")
        self.targets = targets
        self.port = port
        self.interval = interval

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        config = self.workdir / "scrape.yml"
        config.write_text(yaml.safe_dump(scrape_config(self.targets, self.interval)))
        return [
            str(binary()),
            f"-httpListenAddr=127.0.0.1:{self.port}",
            f"-storageDataPath={self.workdir / 'data'}",
            f"-promscrape.config={config}",
            f"-search.latencyOffset={LATENCY_OFFSET}",
            "-retentionPeriod=1d",
            # 16 MB by default, less than the benchmark's one exporter serves at 20,000 nodes
            # (docs/benchmarks.md).
            "-promscrape.maxScrapeSize=1GB",
            "-loggerLevel=WARN",
        ]
