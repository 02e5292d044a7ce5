"""A TCP relay from an address of a bridge the sandbox or podman made to a loopback port.

The sandbox's apiserver listens on 127.0.0.1 only; a container or pod on a bridge reaches the
host at the bridge's gateway address, where this relay listens and copies bytes both ways. TLS
passes through untouched, so the client checks the apiserver's own certificate. The compose
test runs it in a thread; the real node runs it as a process of its own
(`python -m sandbox.cluster.relay HOST PORT TARGET_PORT`), which outlives `ballast sandbox up`.
"""

from __future__ import annotations

import argparse
import socket
import threading

CONNECT_TIMEOUT = 5.0
IP_FREEBIND = 15  # linux/in.h; the socket module does not export it


class Relay:
    def __init__(self, listen_host: str, target_port: int, listen_port: int = 0) -> None:
        self._target = ("127.0.0.1", target_port)
        self._server = socket.socket()
        # The bridge and its gateway address may appear only when the first container joins
        # the network (podman's CNI backend), after this relay starts: bind before it exists.
        self._server.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind((listen_host, listen_port))
        self._server.listen()
        self.port: int = self._server.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="relay-accept")
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                downstream, _ = self._server.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self._target, timeout=CONNECT_TIMEOUT)
            except OSError:
                downstream.close()
                continue
            upstream.settimeout(None)
            for src, dst in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=_pipe, args=(src, dst), daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        except OSError:
            pass
        self._server.close()

    def wait(self) -> None:
        self._thread.join()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # Either direction ending ends the connection: the other thread's recv then fails.
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox.cluster.relay", description=__doc__)
    parser.add_argument("host", help="the address to listen on, e.g. a bridge's gateway")
    parser.add_argument("port", type=int, help="the port to listen on (0: any free one)")
    parser.add_argument("target_port", type=int, help="the port on 127.0.0.1 to relay to")
    args = parser.parse_args(argv)
    # SIGTERM (`ballast sandbox down`) ends it as it ends any process: nothing to flush.
    relay = Relay(args.host, args.target_port, args.port)
    print(f"relaying {args.host}:{relay.port} to 127.0.0.1:{args.target_port}", flush=True)
    relay.wait()


if __name__ == "__main__":
    main()
