"""The processes `ballast demo` runs next to the sandbox: Redis, Prometheus, watcher, scheduler,
rebalancer.

Each is a real process on a free loopback port with its log in the demo's state folder, started
through sandbox.cluster.processes so that stopping reaches its whole process group and nothing else.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis
import requests
import yaml

from sandbox.cluster import processes
from sandbox.cluster.errors import StartupError

READY_TIMEOUT = 60.0
# Everything the demo runs is throwaway: a service that ignores SIGTERM this long is killed.
STOP_TIMEOUT = 10.0


class Stack:
    """Starts named services; `stop()` ends them in reverse order of their start."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir
        self.log_dir = state_dir / "logs"
        self.pid_dir = state_dir / "pids"
        self.started: list[str] = []
        self.ports: dict[str, int] = {}

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    def log(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def spawn(
        self,
        name: str,
        argv: list[str],
        ready: Callable[[], bool],
        env: dict[str, str] | None = None,
        timeout: float = READY_TIMEOUT,
    ) -> None:
        proc = processes.spawn(name, argv, self.log_dir, self.pid_dir, env, die_with_parent=True)
        self.started.append(name)
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise StartupError(
                    f"{name} exited with code {proc.returncode}; its log ({self.log(name)}):\n"
                    + processes.log_tail(self.log(name))
                )
            try:
                if ready():
                    return
            except (requests.RequestException, redis.RedisError, OSError):
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise StartupError(
                    f"{name} not ready after {timeout:.0f} s; its log ({self.log(name)}):\n"
                    + processes.log_tail(self.log(name))
                )
            time.sleep(0.2)

    def spawn_http(
        self, name: str, argv: list[str], ready_path: str, env: dict[str, str] | None = None
    ) -> str:
        """`spawn` for a service on `self.ports[name]`, ready once `ready_path` answers 200."""
        url = self.url(name)
        self.spawn(
            name,
            argv,
            lambda: requests.get(f"{url}{ready_path}", timeout=2).status_code == 200,
            env=env,
        )
        return url

    def stop(self, only: str | None = None) -> list[str]:
        """Stops every service started (or the one named `only`); the names stopped."""
        recs = {r.name: r for r in processes.recorded(self.pid_dir)}
        stopped = []
        for name in [n for n in reversed(self.started) if only in (None, n)]:
            started = time.monotonic()
            if name in recs and processes.stop(recs[name], STOP_TIMEOUT):
                took = time.monotonic() - started
                stopped.append(name if took < 2 else f"{name} ({took:.0f} s)")
            self.started.remove(name)
        return stopped

    # -- the services ---------------------------------------------------------------------

    def start_redis(self) -> str:
        port = self.ports["redis"] = processes.free_port()
        data = self.dir / "redis"
        data.mkdir(parents=True, exist_ok=True)
        argv = [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data),
            "--save",
            "",
            "--appendonly",
            "no",
            # Keeps argv as started, so the stop can tell the process is still ours.
            "--set-proc-title",
            "no",
        ]
        client = redis.Redis(port=port, socket_timeout=2, socket_connect_timeout=2)
        self.spawn("redis", argv, client.ping)
        client.close()
        return f"redis://127.0.0.1:{port}/0"

    def start_prometheus(
        self, target: str, scrape_interval: str = "1s", rules: dict | None = None
    ) -> str:
        """Prometheus scraping `target`; `rules`, a rule file's document, evaluated as often."""
        port = self.ports["prometheus"] = processes.free_port()
        config: dict = {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
            "scrape_configs": [
                {
                    "job_name": "simulator",
                    # The simulator's `instance` label names the node, not the scrape target.
                    "honor_labels": True,
                    "scrape_timeout": scrape_interval,
                    "static_configs": [{"targets": [target]}],
                }
            ],
        }
        if rules is not None:
            rule_file = self.dir / "rules.yml"
            rule_file.write_text(yaml.safe_dump(rules))
            config["rule_files"] = [str(rule_file)]
        path = self.dir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config))
        argv = [
            "prometheus",
            f"--config.file={path}",
            f"--storage.tsdb.path={self.dir / 'prometheus'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=1h",
        ]
        return self.spawn_http("prometheus", argv, "/-/ready")

    def start_watcher(self, prometheus_url: str, redis_url: str, env: dict[str, str]) -> str:
        port = self.ports["watcher"] = processes.free_port()
        argv = [
            sys.executable,
            "-m",
            "ballast.cli",
            "watcher",
            "--prometheus-url",
            prometheus_url,
            "--redis-url",
            redis_url,
            "--listen",
            f"127.0.0.1:{port}",
        ]
        return self.spawn_http("watcher", argv, "/healthz", env)

    def start_scheduler(self, config: dict, kubeconfig: Path, env: dict[str, str]) -> str:
        return self._start_ballast("scheduler", "scheduler", config, kubeconfig, env)

    def start_rebalancer(
        self, name: str, config: dict, kubeconfig: Path, env: dict[str, str]
    ) -> str:
        """`ballast rebalancer` with `config` (the scheduler's file plus `rebalancer:`), ready
        once its cache has synced and its loop runs."""
        return self._start_ballast(name, "rebalancer", config, kubeconfig, env)

    def _start_ballast(
        self, name: str, command: str, config: dict, kubeconfig: Path, env: dict[str, str]
    ) -> str:
        port = self.ports[name] = processes.free_port()
        path = self.dir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        listen = "--metrics-listen" if command == "scheduler" else "--listen"
        argv = [sys.executable, "-m", "ballast.cli", command, "--config", str(path)]
        argv += ["--kubeconfig", str(kubeconfig), listen, f"127.0.0.1:{port}"]
        argv += ["--watcher-interval", "2"]
        return self.spawn_http(name, argv, "/healthz", env)
