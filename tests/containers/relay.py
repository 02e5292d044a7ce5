"""A TCP relay from a podman network's gateway to a loopback port of the host.

The sandbox's apiserver listens on 127.0.0.1 only; a container on a bridge network reaches the
host at the network's gateway address, where this relay listens and copies bytes both ways. TLS
passes through untouched, so the client checks the apiserver's own certificate.
"""

from __future__ import annotations

import socket
import threading

CONNECT_TIMEOUT = 5.0
IP_FREEBIND = 15  # linux/in.h; the socket module does not export it


class Relay:
    def __init__(self, listen_host: str, target_port: int) -> None:
        self._target = ("127.0.0.1", target_port)
        self._server = socket.socket()
        # The bridge and its gateway address appear only when the first container joins the
        # network (podman's CNI backend), after this relay starts: bind before it exists.
        self._server.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        self._server.bind((listen_host, 0))
        self._server.listen()
        self.port: int = self._server.getsockname()[1]
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True, name="relay-accept").start()

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
        self._server.close()


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
