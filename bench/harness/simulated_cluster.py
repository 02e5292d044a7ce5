"""The stack the placement and rebalancing benchmarks run on: a sandbox of kwok nodes whose load
a simulator plays, the synthetic exporter and Prometheus reading it (or metrics-server), Redis
and Ballast's watcher, and for Koordinator's pools the NodeMetric writer standing in for its node
agent. `bench.placement.Services` and `bench.rebalance.Services` start their schedulers and
rebalancers on it; one run's stack is started, stopped and cleaned up here, in one place.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from bench.harness.common import wait_watcher
from sandbox.cluster import processes
from sandbox.cluster.controlplane import ControlPlane, Ports
from sandbox.cluster.nodes import NodeSpec
from sandbox.demo.stack import Stack
from sandbox.load import nodemetric
from sandbox.load.exporter import SyntheticExporter
from sandbox.load.simulator import Simulator, SimulatorConfig
from sandbox.peers import koordinator
from sandbox.peers import metrics_server as metrics_server_peer
from sandbox.peers.loadwatcher.serve import rules_document


class SimulatedCluster:
    """One run's stack in a new work folder named from `prefix`; `stop` ends whatever of it
    started, `close` also removes the folder after a run that went well and keeps it (with the
    logs) otherwise."""

    def __init__(
        self,
        prefix: str,
        specs: list[NodeSpec],
        config: SimulatorConfig,
        watcher_env: dict[str, str],
        *,
        metrics_server: bool = False,
        controllers: bool = False,
        node_metrics: nodemetric.NodeMetricConfig | None = None,
        node_metrics_for: Collection[str] = (),
        more_node_metrics: Mapping[nodemetric.NodeMetricConfig, Collection[str]] | None = None,
        before_watcher: Callable[[str], Any] | None = None,
    ) -> None:
        """`metrics_server`: the watcher reads metrics-server (kwok's usage) instead of
        Prometheus; `controllers`: the sandbox runs kube-controller-manager; `node_metrics_for`:
        the nodes (Koordinator's pools) whose NodeMetric `node_metrics` configures;
        `more_node_metrics`: other pools' nodes under writers of other settings;
        `before_watcher`: called with the Redis URL before the watcher starts (a warm start
        writes there what the watcher takes over)."""
        self.work = work = Path(tempfile.mkdtemp(prefix=prefix))
        self.specs, self.config = specs, config
        self.watcher_env = watcher_env
        self.before_watcher = before_watcher
        self.from_metrics_server = metrics_server
        self.node_metrics_config = node_metrics
        self.node_metrics_for = set(node_metrics_for)
        self.writers_for: dict[nodemetric.NodeMetricConfig, set[str]] = {}
        for config_, nodes in [(node_metrics, node_metrics_for),
                               *(more_node_metrics or {}).items()]:  # fmt: skip
            if nodes and config_ is not None:
                self.writers_for.setdefault(config_, set()).update(nodes)
        self.node_metrics_for = set().union(*self.writers_for.values())
        self.plane = ControlPlane(
            work / "sandbox",
            Ports.free(),
            die_with_parent=True,
            controllers=controllers,
            addons=[metrics_server_peer.Addon()] if metrics_server else [],
        )
        self.stack = Stack(work / "services")
        self.exporter: SyntheticExporter | None = None
        self.simulator: Simulator | None = None
        self.node_metrics: list[nodemetric.NodeMetricWriter] = []
        self.api: client.ApiClient | None = None
        self.prom_url = ""  # empty when the watcher reads metrics-server
        self.watcher_url = ""

    def start_cluster(self) -> client.ApiClient:
        """The sandbox with its nodes, the simulator synced, and the watcher reporting a CPU
        figure for every node; returns the API client."""
        self.plane.start(self.specs)
        self.api = api = self.plane.api_client()
        if not self.from_metrics_server:
            self.exporter = SyntheticExporter().start()
        if self.writers_for:  # Koordinator's CRDs and its node agent's stand-in, per setting
            koordinator.apply_crds(api)
            self.node_metrics = [
                nodemetric.NodeMetricWriter(api, config_, include=nodes.__contains__).start()
                for config_, nodes in self.writers_for.items()
            ]
        writers = self.node_metrics

        def on_tick(*state: Any) -> None:
            for writer in writers:
                writer.observe(*state)

        self.simulator = Simulator(
            api,
            self.exporter,
            self.config,
            kwok_usage=self.from_metrics_server,
            on_tick=on_tick if writers else None,
        ).start()
        if not self.simulator.wait_synced(60):
            raise TimeoutError("the simulator could not list nodes and pods")
        redis_url = self.stack.start_redis()
        if self.before_watcher is not None:
            self.before_watcher(redis_url)
        env = dict(os.environ, **self.watcher_env, BALLAST_KUBECONFIG=str(self.plane.kubeconfig))
        if self.exporter is None:
            env["BALLAST_PROVIDER"] = "metrics-server"
        else:
            # With load-watcher's recording rules: the Trimaran rows read it (sandbox.loadwatcher).
            self.prom_url = self.stack.start_prometheus(
                self.exporter.target, rules=rules_document()
            )
        self.watcher_url = self.stack.start_watcher(self.prom_url, redis_url, env)
        wait_watcher(self.watcher_url, [s.name for s in self.specs])
        return api

    def stop(self) -> None:
        """Everything started, the schedulers and rebalancers (stopped by the subclass first,
        while the apiserver still answers their last calls) aside."""
        self.stack.stop()
        if self.simulator is not None:
            self.simulator.stop(timeout=2.0)
        for writer in self.node_metrics:
            writer.stop(timeout=2.0)
        if self.exporter is not None:
            self.exporter.stop()
        if self.api is not None:
            self.api.close()
        self.plane.stop()

    def close(self, ok: bool, say: Callable[[str], Any] = print) -> None:
        """`stop`, then the work folder removed when the run went well (`ok`), else kept and
        named, its logs being what tells why."""
        self.stop()
        if ok:
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            say(f"  logs kept in {self.work}")


def ballast_argv(
    plane: ControlPlane, work: Path, name: str, command: str, config: dict[str, Any], listen: str
) -> tuple[list[str], int]:
    """`ballast <command>` (scheduler, rebalancer) on the sandbox, its config written to
    work/<name>.yaml, `listen` (its listen option) on a free loopback port: (argv, port). The
    interpreter as argv[0]: the sandbox's stop checks a recorded pid still runs argv[0], and a
    console script's process runs the interpreter."""
    cfg = work / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    port = processes.free_port()
    argv = [sys.executable, "-m", "ballast.cli", command, "--config", str(cfg)]
    argv += ["--kubeconfig", str(plane.kubeconfig), listen, f"127.0.0.1:{port}"]
    return argv, port
