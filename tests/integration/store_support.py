"""A small distributed store made of real Prometheus servers: shards that scrape, and a front
that answers queries over all of them by remote read.

That is how Thanos's querier works over sidecars (a query fans out, a shard that fails turns
into a warning and the rest is answered), and Prometheus does it itself: a failed remote read
is a warning on an otherwise successful answer, exactly what the watcher must read as partial.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.fixtures.prometheus import PrometheusServer

REMOTE_TIMEOUT = "2s"  # a hung shard turns into a warning after this, not a stuck query


class Shard(PrometheusServer):
    """A Prometheus scraping `targets`, its series labelled shard=<name>."""

    def __init__(self, workdir: Path, name: str, targets: list[str]) -> None:
        super().__init__(workdir, targets)
        self.name = name

    def _write_config(self) -> Path:
        path = super()._write_config()
        config = yaml.safe_load(path.read_text())
        config["global"]["external_labels"] = {"shard": self.name}
        path.write_text(yaml.safe_dump(config))
        return path


class Front(PrometheusServer):
    """A Prometheus that scrapes nothing and reads every shard remotely, recent data included."""

    def __init__(self, workdir: Path, shards: list[Shard]) -> None:
        super().__init__(workdir, [])
        self.shards = shards

    def _write_config(self) -> Path:
        config = {
            "global": {"evaluation_interval": self.scrape_interval},
            "remote_read": [
                {
                    "name": shard.name,
                    "url": f"{shard.url}/api/v1/read",
                    "read_recent": True,
                    "remote_timeout": REMOTE_TIMEOUT,
                }
                for shard in self.shards
            ],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config))
        return path
