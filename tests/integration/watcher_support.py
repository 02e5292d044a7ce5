"""A tiny HTTP server answering Prometheus's query API with whatever a test sets.

It serves bad input on purpose (NaN, errors, garbage, hangs); it is not a stand-in for Prometheus,
which the other watcher tests use for real.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def answer(result_type: str, result: object) -> str:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": result}})


def vector(*samples: tuple[dict, str]) -> tuple[int, str]:
    result = [{"metric": labels, "value": [time.time(), value]} for labels, value in samples]
    return 200, answer("vector", result)


def inst(name: str) -> dict:
    return {"instance": name, "job": "node"}


class BadSource:
    """Answers /api/v1/query with the (status, body) set per query; can also hang."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.answers: dict[str, tuple[int, str]] = {}
        self.delay = 0.0
        self.authorizations: list[str] = []  # the Authorization header of each request
        self.headers: list[dict[str, str]] = []  # every header of each request
        source = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                url = urlparse(self.path)
                query = parse_qs(url.query).get("query", [""])[0]
                source.authorizations.append(self.headers.get("Authorization", ""))
                source.headers.append(dict(self.headers))
                if source.delay:
                    time.sleep(source.delay)
                status, body = source.answers.get(query, (404, "no such query"))
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the watcher gave up waiting

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def self_signed(directory: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate for 127.0.0.1 (its own CA) and a server context using it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ballast-test")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return cert_path, context
