"""A small distributed store made of real Prometheus servers: shards that scrape, and a front
that answers queries over all of them by remote read.

That is how Thanos's querier works over sidecars (a query fans out, a shard that fails turns
into a warning and the rest is answered), and Prometheus does it itself: a failed remote read
is a warning on an otherwise successful answer, exactly what the watcher must read as partial.
"""

from __future__ import annotations

import socket
from pathlib import Path

import yaml

from tests.fixtures.prometheus import PrometheusServer
from tests.fixtures.thanos import Shard

REMOTE_TIMEOUT = "2s"  # a hung shard turns into a warning after this, not a stuck query


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


class Guarded(PrometheusServer):
    """A Prometheus behind a route prefix, TLS with a required client certificate, and basic
    auth: what a store's gateway asks of its clients (Prometheus's own --web.config.file)."""

    def __init__(
        self,
        workdir: Path,
        targets: list[str],
        prefix: str,
        tls: tuple[Path, Path],
        client_ca: Path,
        users: dict[str, str],
    ) -> None:
        self.prefix = prefix
        self.web_config = workdir / "web.yml"
        self.tls = tls
        self.client_ca = client_ca
        args = [f"--web.route-prefix={prefix}", f"--web.config.file={self.web_config}"]
        super().__init__(workdir, targets, extra_args=args)
        self.set_users(users)

    def set_users(self, users: dict[str, str]) -> None:
        """Basic auth users and passwords; Prometheus reads the file again at each request."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        doc = {
            "tls_server_config": {
                "cert_file": str(self.tls[0]),
                "key_file": str(self.tls[1]),
                "client_auth_type": "RequireAndVerifyClientCert",
                "client_ca_file": str(self.client_ca),
            },
            "basic_auth_users": {user: bcrypt(password) for user, password in users.items()},
        }
        tmp = self.web_config.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(doc))
        tmp.replace(self.web_config)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}{self.prefix}"

    def _ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            log = (self.workdir / "prometheus.log").read_text()[-2000:]
            raise RuntimeError(f"prometheus exited: {log}")
        # It listens: the watcher's own polls (with every credential) wait for its TSDB.
        with socket.create_connection(("127.0.0.1", self.port), timeout=2):
            return True


def bcrypt(password: str) -> str:
    """A bcrypt hash, as Prometheus's basic_auth_users wants (the C library's, through crypt:
    no extra package for the tests)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # crypt leaves Python in 3.13
        import crypt

    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
