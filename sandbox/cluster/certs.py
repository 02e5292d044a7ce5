"""Certificates and keys for the sandbox: a CA, the apiserver's serving certificate, an admin
client certificate in group system:masters, and the service-account signing key.

ECDSA P-256 throughout the PKI because generating it takes microseconds, not the tens of
milliseconds RSA takes; the service-account key is RSA because RS256 is what every token
consumer accepts.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
# Names a client inside the cluster or on loopback may use for the apiserver.
SERVING_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


# Field of `Pki` -> file name in the PKI folder.
FILES = {
    "ca_cert": "ca.crt",
    "ca_key": "ca.key",
    "serving_cert": "apiserver.crt",
    "serving_key": "apiserver.key",
    "admin_cert": "admin.crt",
    "admin_key": "admin.key",
    "sa_key": "sa.key",
}


@dataclass(frozen=True)
class Pki:
    """Paths of the files `ensure_pki` writes into one folder."""

    dir: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path

    @classmethod
    def at(cls, directory: Path) -> Pki:
        return cls(directory, **{field: directory / name for field, name in FILES.items()})

    def files(self) -> list[Path]:
        return [getattr(self, field) for field in FILES]


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _builder(subject: x509.Name, issuer: x509.Name, public_key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        # Backdated a little so a clock a few seconds behind does not reject a fresh cert.
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _key_usage(signs_certs: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certs,
        crl_sign=signs_certs,
        encipher_only=False,
        decipher_only=False,
    )


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _ca(
    common_name: str,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Name, x509.Certificate]:
    """A new self-signed CA: its key, name and certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        _builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certs=True), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, name, cert


def _leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_name: x509.Name,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    san: x509.SubjectAlternativeName | None = None,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(subject, ca_name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certs=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def ensure_pki(directory: Path, admin_user: str, service_ip: str) -> Pki:
    """Writes the PKI into `directory` unless it is complete already; returns its paths.

    Kept between runs so a kubeconfig handed out earlier stays valid after a restart.
    """
    pki = Pki.at(directory)
    if all(p.is_file() for p in pki.files()):
        return pki
    directory.mkdir(parents=True, exist_ok=True)

    ca_key, ca_name, ca_cert = _ca("ballast-sandbox-ca")
    san = x509.SubjectAlternativeName(
        [x509.DNSName(n) for n in SERVING_DNS]
        + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", service_ip)]
    )
    serving_key, serving_cert = _leaf(
        ca_key, ca_name, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, san
    )
    # Group system:masters is bound to cluster-admin by the apiserver's bootstrap policy.
    admin_key, admin_cert = _leaf(
        ca_key, ca_name, _name(admin_user, "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    _write_key(pki.ca_key, ca_key)
    _write_cert(pki.ca_cert, ca_cert)
    _write_key(pki.serving_key, serving_key)
    _write_cert(pki.serving_cert, serving_cert)
    _write_key(pki.admin_key, admin_key)
    _write_cert(pki.admin_cert, admin_cert)
    _write_key(pki.sa_key, sa_key)
    return pki


# -- the aggregation layer: metrics-server behind kube-apiserver ---------------------------------
# Field of `AggregationPki` -> file name in the PKI folder.
AGGREGATION_FILES = {
    "front_proxy_ca_cert": "front-proxy-ca.crt",
    "front_proxy_ca_key": "front-proxy-ca.key",
    "proxy_client_cert": "front-proxy-client.crt",
    "proxy_client_key": "front-proxy-client.key",
    "metrics_server_cert": "metrics-server.crt",
    "metrics_server_key": "metrics-server.key",
    "kubelet_cert": "kubelet.crt",
    "kubelet_key": "kubelet.key",
}
# The name the apiserver's proxy client presents; the apiserver and metrics-server accept
# request headers only from a certificate of the front-proxy CA with this common name.
PROXY_CLIENT_NAME = "front-proxy-client"
METRICS_SERVER_DNS = "metrics-server.kube-system.svc"


@dataclass(frozen=True)
class AggregationPki:
    """The request-header (front-proxy) CA and the apiserver's proxy client certificate, plus
    serving certificates on 127.0.0.1 for metrics-server and for kwok's kubelet endpoint."""

    front_proxy_ca_cert: Path
    front_proxy_ca_key: Path
    proxy_client_cert: Path
    proxy_client_key: Path
    metrics_server_cert: Path
    metrics_server_key: Path
    kubelet_cert: Path
    kubelet_key: Path

    @classmethod
    def at(cls, directory: Path) -> AggregationPki:
        return cls(**{field: directory / name for field, name in AGGREGATION_FILES.items()})

    def files(self) -> list[Path]:
        return [getattr(self, field) for field in AGGREGATION_FILES]


def ensure_aggregation_pki(pki: Pki) -> AggregationPki:
    """Writes the aggregation layer's certificates beside `pki` unless they are there already.

    The front-proxy CA is a CA of its own: a request-header CA that is also the client CA would
    let any client certificate set X-Remote-User and so claim any identity."""
    agg = AggregationPki.at(pki.dir)
    if all(p.is_file() for p in agg.files()):
        return agg
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    ca_name = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes()).subject
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)

    proxy_ca_key, proxy_ca_name, proxy_ca_cert = _ca("ballast-sandbox-front-proxy-ca")
    client_key, client_cert = _leaf(
        proxy_ca_key, proxy_ca_name, _name(PROXY_CLIENT_NAME), ExtendedKeyUsageOID.CLIENT_AUTH
    )
    loopback = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    serving = ExtendedKeyUsageOID.SERVER_AUTH
    # The aggregator checks the name <service>.<namespace>.svc, whatever address it dials.
    ms_names = x509.SubjectAlternativeName([x509.DNSName(METRICS_SERVER_DNS), *loopback])
    ms_key, ms_cert = _leaf(ca_key, ca_name, _name("metrics-server"), serving, ms_names)
    kubelet_names = x509.SubjectAlternativeName(loopback)
    kubelet_key, kubelet_cert = _leaf(
        ca_key, ca_name, _name("kwok-kubelet"), serving, kubelet_names
    )

    for key_path, cert_path, key, cert in (
        (agg.front_proxy_ca_key, agg.front_proxy_ca_cert, proxy_ca_key, proxy_ca_cert),
        (agg.proxy_client_key, agg.proxy_client_cert, client_key, client_cert),
        (agg.metrics_server_key, agg.metrics_server_cert, ms_key, ms_cert),
        (agg.kubelet_key, agg.kubelet_cert, kubelet_key, kubelet_cert),
    ):
        _write_key(key_path, key)
        _write_cert(cert_path, cert)
    return agg
