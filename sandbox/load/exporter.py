"""A synthetic node-exporter for many fake nodes, served by one HTTP endpoint.

Prometheus scrapes it with `honor_labels: true`, so the `instance` label on each series names the
fake node. Counters are integrated lazily from the utilisation set per node: a scrape computes
`counter = accumulated + rate * (now - since)`, so `rate()` over them returns exactly what was set.
Thread-safe: a load simulator may call `set()` from its own loop while Prometheus scrapes.

Run standalone: `python -m sandbox.load.exporter --nodes 100 --port 9800`.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_MEMORY_BYTES = 16 * 1024**3


@dataclass
class _Node:
    cpu: float  # fraction busy, 0..1
    memory: float  # fraction used, 0..1
    net_rx: float  # bytes per second
    since: float  # when the rates above took effect
    busy: float = 0.0  # busy CPU-seconds per CPU accumulated before `since`
    idle: float = 0.0
    rx: float = 0.0

    def fold(self, now: float) -> None:
        dt = max(0.0, now - self.since)
        self.busy += self.cpu * dt
        self.idle += (1.0 - self.cpu) * dt
        self.rx += self.net_rx * dt
        self.since = now


@dataclass
class _Container:
    """One container's cAdvisor figures: CPU cores in use (a counter integrated like a node's)
    and its working set."""

    cores: float
    memory: float  # bytes
    since: float
    seconds: float = 0.0  # CPU-seconds accumulated before `since`

    def fold(self, now: float) -> None:
        self.seconds += self.cores * max(0.0, now - self.since)
        self.since = now


class SyntheticExporter:
    """Serves node-exporter metrics for fake nodes whose load the caller sets."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        cpus: int = 2,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
    ) -> None:
        self.host = host
        self.cpus = cpus
        self.memory_bytes = memory_bytes
        self._nodes: dict[str, _Node] = {}
        # (namespace, pod) -> (node, container name -> figures): cAdvisor's per-container series
        self._pods: dict[tuple[str, str], tuple[str, dict[str, _Container]]] = {}
        self._lock = threading.Lock()
        self._paused = False
        self.scrapes = 0
        self.abandoned = 0  # scrapes whose client hung up before the answer was written
        # More series served with these (sandbox/load/dcgm.py's GPUs): now -> exposition lines
        self.renderers: list[Callable[[float], list[str]]] = []
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def target(self) -> str:
        """host:port, as a Prometheus static_configs target."""
        return f"{self.host}:{self.port}"

    def start(self) -> SyntheticExporter:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="synthetic-exporter", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def set(
        self,
        node: str,
        cpu: float | None = None,
        memory: float | None = None,
        net_rx: float | None = None,
    ) -> None:
        """Set a node's CPU and memory utilisation (percent) and receive rate (bytes/s).

        Unset values keep their previous setting (0 for a new node).
        """
        for name, value in (("cpu", cpu), ("memory", memory)):
            if value is not None and not 0.0 <= value <= 100.0:
                raise ValueError(f"{name} must be a percentage in 0..100, got {value}")
        if net_rx is not None and net_rx < 0:
            raise ValueError(f"net_rx must be >= 0, got {net_rx}")
        now = time.time()
        with self._lock:
            state = self._nodes.get(node)
            if state is None:
                state = self._nodes[node] = _Node(cpu=0.0, memory=0.0, net_rx=0.0, since=now)
                # Start counters at a node-specific offset, as real uptime would.
                state.idle = random.uniform(1000.0, 100000.0)
            state.fold(now)
            if cpu is not None:
                state.cpu = cpu / 100.0
            if memory is not None:
                state.memory = memory / 100.0
            if net_rx is not None:
                state.net_rx = float(net_rx)

    def set_many(self, loads: dict[str, tuple[float, float]]) -> None:
        """Set (cpu %, memory %) for many nodes at once."""
        for node, (cpu, memory) in loads.items():
            self.set(node, cpu=cpu, memory=memory)

    def set_pod(
        self, namespace: str, pod: str, node: str, containers: dict[str, tuple[float, float]]
    ) -> None:
        """Set a pod's per-container use: name -> (CPU millicores, memory bytes), served as
        cAdvisor's `container_cpu_usage_seconds_total` and `container_memory_working_set_bytes`
        (labels namespace, pod, container, instance = the node). Containers left out go away."""
        now = time.time()
        with self._lock:
            known = self._pods.get((namespace, pod))
            old = known[1] if known is not None else {}
            fresh = {}
            for name, (cpu_m, memory) in containers.items():
                if cpu_m < 0 or memory < 0:
                    raise ValueError(f"{namespace}/{pod}/{name}: use must be >= 0")
                c = old.get(name) or _Container(0.0, 0.0, now)
                c.fold(now)
                c.cores, c.memory = cpu_m / 1000.0, float(memory)
                fresh[name] = c
            self._pods[(namespace, pod)] = (node, fresh)

    def reset_pod(self, namespace: str, pod: str) -> None:
        """The pod's containers restart: their CPU counters start again from 0."""
        now = time.time()
        with self._lock:
            for c in self._pods.get((namespace, pod), ("", {}))[1].values():
                c.seconds, c.since = 0.0, now

    def remove_pod(self, namespace: str, pod: str) -> None:
        with self._lock:
            self._pods.pop((namespace, pod), None)

    def pods(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._pods)

    def remove(self, node: str) -> None:
        with self._lock:
            self._nodes.pop(node, None)

    def nodes(self) -> list[str]:
        with self._lock:
            return list(self._nodes)

    def pause(self) -> None:
        """Answer 503 to scrapes, so the data in Prometheus goes stale."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def render(self, now: float | None = None) -> bytes:
        """The exposition text as of `now` (default: this moment)."""
        now = time.time() if now is None else now
        with self._lock:
            snapshot = []
            for name, n in self._nodes.items():
                dt = max(0.0, now - n.since)
                snapshot.append(
                    (
                        name,
                        n.busy + n.cpu * dt,
                        n.idle + (1.0 - n.cpu) * dt,
                        n.memory,
                        n.rx + n.net_rx * dt,
                    )
                )
        total = self.memory_bytes
        cpus = range(self.cpus)
        cpu_lines = ["# TYPE node_cpu_seconds_total counter"]
        mem_total = ["# TYPE node_memory_MemTotal_bytes gauge"]
        mem_avail = ["# TYPE node_memory_MemAvailable_bytes gauge"]
        rx_lines = ["# TYPE node_network_receive_bytes_total counter"]
        add_cpu = cpu_lines.append
        for name, busy, idle, memory, rx in snapshot:
            inst = f'instance="{name}"'
            idle_s = f"{idle:.3f}"
            busy_s = f"{busy:.3f}"
            for c in cpus:
                add_cpu(f'node_cpu_seconds_total{{cpu="{c}",{inst},mode="idle"}} {idle_s}')
                add_cpu(f'node_cpu_seconds_total{{cpu="{c}",{inst},mode="user"}} {busy_s}')
            mem_total.append(f"node_memory_MemTotal_bytes{{{inst}}} {total}")
            mem_avail.append(f"node_memory_MemAvailable_bytes{{{inst}}} {total * (1 - memory):.0f}")
            rx_lines.append(f'node_network_receive_bytes_total{{device="eth0",{inst}}} {rx:.0f}')
        parts = cpu_lines + mem_total + mem_avail + rx_lines + self._render_pods(now)
        for extra in self.renderers:
            parts += extra(now)
        return ("\n".join(parts) + "\n").encode()

    def _render_pods(self, now: float) -> list[str]:
        """cAdvisor's series, as a kubelet's /metrics/cadvisor has them: one per container,
        plus the pod's own cgroup (container="") that the default queries leave out."""
        cpu_name, mem_name = (
            "container_cpu_usage_seconds_total",
            "container_memory_working_set_bytes",
        )
        cpu = [f"# TYPE {cpu_name} counter"]
        mem = [f"# TYPE {mem_name} gauge"]
        with self._lock:
            for (namespace, pod), (node, containers) in self._pods.items():
                base = f'instance="{node}",namespace="{namespace}",pod="{pod}"'
                total_s = total_m = 0.0
                for name, c in containers.items():
                    seconds = c.seconds + c.cores * max(0.0, now - c.since)
                    total_s += seconds
                    total_m += c.memory
                    cpu.append(f'{cpu_name}{{container="{name}",{base}}} {seconds:.6f}')
                    mem.append(f'{mem_name}{{container="{name}",{base}}} {c.memory:.0f}')
                if containers:
                    cpu.append(f'{cpu_name}{{container="",{base}}} {total_s:.6f}')
                    mem.append(f'{mem_name}{{container="",{base}}} {total_m:.0f}')
        return cpu + mem if len(cpu) > 1 else []

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if exporter._paused:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path.split("?")[0] != "/metrics":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = exporter.render()
                exporter.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    # The scraper gave up (its scrape timeout): a missed sample, counted, not
                    # a traceback in a benchmark's output.
                    exporter.abandoned += 1

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # scrapes every second would flood the output

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Synthetic multi-node node-exporter")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--prefix", default="node-")
    args = parser.parse_args(argv)
    exporter = SyntheticExporter(args.host, args.port, cpus=args.cpus)
    rng = random.Random(1)
    for i in range(args.nodes):
        exporter.set(f"{args.prefix}{i}", cpu=rng.uniform(5, 90), memory=rng.uniform(10, 80))
    exporter.start()
    print(f"serving {args.nodes} nodes at {exporter.url}/metrics", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        exporter.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
