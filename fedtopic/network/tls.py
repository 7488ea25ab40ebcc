"""HTTPS between the nodes and the aggregator, with a certificate the consortium pins.

Signatures give every request integrity and authentication, not confidentiality: under ``none`` an outsider on
the path reads every N_p, under IPHE the unprotected rows (docs/security.md). So the aggregator can serve HTTPS
with a certificate whose copy travels in the consortium folder (``consortium tls``: a self-signed one for the
aggregator's host names and addresses), and every client trusts that certificate and nothing else: no public
CA, no system store, so a certificate issued to anyone else for the same name is refused.

Plain HTTP stays for loopback (one laptop); to any other address a client refuses it unless told ``insecure``.

The trust is process-wide, set once by the command that reads the consortium config (``configure_trust``), the
way the retry patience is: every aggregator client of a node (its sessions, the vocabulary alignment, the
generation lookup) then checks the same certificate.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fedtopic.crypto.keys import write_secret
from fedtopic.errors import ConfigError, NetworkError

TLS_DIR, CERT_NAME, KEY_NAME = "tls", "aggregator.crt", "aggregator.key"  # beside the consortium.toml
VALID_DAYS = 3650


@dataclass
class Trust:
    """The certificate clients pin (None: no HTTPS configured) and whether plain HTTP may leave loopback."""

    cert: Path | None = None
    insecure: bool = False


TRUST = Trust()


def configure_trust(cert: Path | None, insecure: bool = False) -> None:
    """Set this process's trust (the consortium's pinned certificate, ``--insecure``)."""
    if cert is not None and not cert.is_file():
        raise ConfigError(f"aggregator.tls_cert {cert} does not exist (`fedtopic consortium tls` writes it)")
    TRUST.cert, TRUST.insecure = cert, insecure


def trust_pem(pem: bytes) -> None:
    """``configure_trust`` for a certificate given as its PEM bytes (a party whose work travelled to another machine
    with the certificate it must pin): kept in this machine's temporary folder under its digest."""
    import tempfile

    path = Path(tempfile.gettempdir()) / f"fedtopic-pin-{hashlib.sha256(pem).hexdigest()[:32]}.crt"
    if not path.is_file() or path.read_bytes() != pem:
        path.write_bytes(pem)
    configure_trust(path)


def url_host(host: str) -> str:
    """``host`` as a URL's authority writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str | None) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host in ("localhost", None):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def client_verify(url: str) -> ssl.SSLContext | bool:
    """What a client for ``url`` verifies with: the pinned certificate as the only trusted one for https,
    and a NetworkError (one line) for plain http to a non-loopback host unless ``TRUST.insecure``."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        if TRUST.cert is None:
            if TRUST.insecure:
                return False
            raise NetworkError(f"{url} is https but the consortium pins no certificate (aggregator.tls_cert): run "
                               "`fedtopic consortium tls`, or pass --insecure to skip verification")
        return _pinned_context(TRUST.cert)
    if not is_loopback(parts.hostname) and not TRUST.insecure:
        raise NetworkError(f"refusing plain HTTP to {parts.hostname}: updates would cross the network unencrypted; "
                           "serve the aggregator with TLS (`fedtopic consortium tls`), or pass --insecure")
    return False  # plain HTTP does no TLS; True would load the system CA bundle for nothing (~70 ms a client)


def _pinned_context(cert: Path) -> ssl.SSLContext:
    """The client context trusting only ``cert``: one per file version, shared by every client of the process
    (a context per client costs milliseconds each; a node opens a client per channel, a simulation 1,000s)."""
    stat = cert.stat()
    return _context_for(str(cert), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _context_for(cafile: str, mtime_ns: int, size: int) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile)


def make_certificate(hosts: Sequence[str], folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate (ECDSA P-256) valid for ``hosts`` (names or IP addresses) and its key, written to
    ``folder`` (the key 0600); (certificate, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    if not hosts:
        raise ConfigError("give at least one host name or address for the aggregator's certificate")
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"fedtopic aggregator {hosts[0]}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / CERT_NAME, folder / KEY_NAME
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_secret(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()), replace=True)
    return cert_path, key_path


def fingerprint(cert: Path) -> str:
    """sha256 of the certificate's DER bytes, hex (what `openssl x509 -fingerprint -sha256` shows)."""
    der = ssl.PEM_cert_to_DER_cert(cert.read_text(encoding="ascii"))
    return hashlib.sha256(der).hexdigest()
