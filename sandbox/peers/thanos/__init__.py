"""Thanos for the watcher's tests: a querier over sidecars, each beside one Prometheus, which is
how a partial answer looks from a real Thanos (a sidecar down: `warnings` on the answer).

The Go wrapper module beside this file builds `thanos` (one binary for every component) at the
pinned release with Thanos's own replace block; `ensure_built` is what `make thanos-build`
runs (`python -m sandbox.peers.thanos`); run it under the heavy-job lock, it is a Go build.

Sidecars are given to the querier with `--endpoint-strict`: a strict endpoint stays in the
querier's set while it is down, so the querier keeps asking it and warns; a plain `--endpoint`
is dropped at its first failed health check and its data then vanishes without a word.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.cluster import build, versions
from sandbox.cluster.errors import BuildError
from sandbox.cluster.storeproc import StoreProcess

MODULE_DIR = Path(__file__).resolve().parent
COMMAND = "github.com/thanos-io/thanos/cmd/thanos"


def binary() -> Path:
    """The built binary; raises with the command to run when it is missing."""
    return build.binary(versions.thanos_binary(), how="make thanos-build")


def ensure_built(say: build.Printer = print) -> Path:
    """The thanos binary, built first when missing (many minutes from a cold Go cache)."""
    target = build.bin_dir() / versions.thanos_binary()
    if build.cached(target, say):
        return target
    pin = f"github.com/thanos-io/thanos v{versions.THANOS_VERSION}"
    if pin not in (MODULE_DIR / "go.mod").read_text():
        raise BuildError(
            f"sandbox/peers/thanos/go.mod does not require {pin} (sandbox/cluster/versions.py): "
            "there, run `go get github.com/thanos-io/thanos@vX.Y.Z`, copy that release's "
            "replace block into go.mod, and `go mod tidy`"
        )
    say(f"building Thanos v{versions.THANOS_VERSION}")
    return build.build_command(target, MODULE_DIR, COMMAND, "thanos", "Thanos", say)


class Sidecar(StoreProcess):
    """A sidecar serving one Prometheus's data over gRPC (the Prometheus needs external labels)."""

    def __init__(self, workdir: Path, prometheus_url: str, grpc_port: int, http_port: int) -> None:
        super().__init__(workdir, "sidecar")
        self.prometheus_url = prometheus_url
        self.grpc_port = grpc_port
        self.http_port = http_port

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def command(self) -> list[str]:
        return [
            str(binary()),
            "sidecar",
            f"--prometheus.url={self.prometheus_url}",
            f"--grpc-address={self.endpoint}",
            f"--http-address=127.0.0.1:{self.http_port}",
            f"--tsdb.path={self.workdir / 'unused-tsdb'}",  # no uploads: nothing is read from it
            "--log.level=warn",
        ]


class Querier(StoreProcess):
    """A querier over `endpoints` (host:port of StoreAPI servers), each strict."""

    def __init__(self, workdir: Path, endpoints: list[str], http_port: int, grpc_port: int) -> None:
        super().__init__(workdir, "querier")
        self.endpoints = endpoints
        self.http_port = http_port
        self.grpc_port = grpc_port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def command(self) -> list[str]:
        return [
            str(binary()),
            "query",
            f"--http-address=127.0.0.1:{self.http_port}",
            f"--grpc-address=127.0.0.1:{self.grpc_port}",
            *(f"--endpoint-strict={e}" for e in self.endpoints),
            "--query.partial-response",
            "--log.level=warn",
        ]
