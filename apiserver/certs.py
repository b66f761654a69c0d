"""Self-managed PKI for a server started without ``--tls-cert-file``.

On first start in a certificate directory: a CA (``ca.crt``/``ca.key``), a serving
certificate signed by it (``apiserver.crt``/``apiserver.key``) for localhost, 127.0.0.1, ::1,
the host name and any advertise address, and an admin client certificate
(``admin.crt``/``admin.key``, CN=platform-admin, O=system:masters). Later starts reuse what
is there; a serving certificate that no longer covers the wanted names is re-issued from the
same CA (clients that trust the CA keep working). Private keys are written 0600, atomically.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ADMIN_USER: Final = "platform-admin"
ADMIN_GROUP: Final = "system:masters"
CA_DAYS: Final = 3650
LEAF_DAYS: Final = 365

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True, kw_only=True)
class PKI:
    """Paths of the PEM files in the certificate directory."""

    dir: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path


def _write(path: Path, data: bytes, *, private: bool) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path}: expected an EC private key")
    return key


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _issue(
    *, ca_cert: x509.Certificate | None, ca_key: ec.EllipticCurvePrivateKey,
    key: ec.EllipticCurvePrivateKey, subject: x509.Name, days: int, is_ca: bool = False,
    server: bool = False, client: bool = False, dns: tuple[str, ...] = (),
    ips: tuple[IPAddress, ...] = (),
) -> x509.Certificate:
    now = _now()
    b = (x509.CertificateBuilder()
         .subject_name(subject)
         .issuer_name(ca_cert.subject if ca_cert is not None else subject)
         .public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=days))
         .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True))
    if is_ca:
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=True,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                            critical=False)
    else:
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=True,
            data_encipherment=False, key_agreement=False, key_cert_sign=False,
            crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        b = b.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        if ca_cert is not None:
            b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
    if dns or ips:
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names.extend(x509.IPAddress(i) for i in ips)
        b = b.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return b.sign(ca_key, hashes.SHA256())


def serving_names(advertise: tuple[str, ...] = ()) -> tuple[tuple[str, ...], tuple[IPAddress, ...]]:
    """DNS names and IPs the serving certificate covers."""
    dns = ["localhost"]
    host = socket.gethostname()
    if host and host not in dns:
        dns.append(host)
    ips: list[IPAddress] = [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    for a in advertise:
        if not a:
            continue
        try:
            ip = ipaddress.ip_address(a)
        except ValueError:
            if a not in dns:
                dns.append(a)
            continue
        if ip not in ips and not ip.is_unspecified:
            ips.append(ip)
    return tuple(dns), tuple(ips)


def _covers(cert: x509.Certificate, dns: tuple[str, ...], ips: tuple[IPAddress, ...]) -> bool:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have_dns = set(san.get_values_for_type(x509.DNSName))
    have_ip = set(san.get_values_for_type(x509.IPAddress))
    fresh = cert.not_valid_after_utc > _now() + datetime.timedelta(days=1)
    return fresh and set(dns) <= have_dns and set(ips) <= have_ip


def ensure_pki(cert_dir: str | Path, *, advertise: tuple[str, ...] = ()) -> PKI:
    """Create (or reuse) the CA, serving and admin certificates in ``cert_dir``."""
    d = Path(cert_dir)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    pki = PKI(dir=d, ca_cert=d / "ca.crt", ca_key=d / "ca.key",
              serving_cert=d / "apiserver.crt", serving_key=d / "apiserver.key",
              admin_cert=d / "admin.crt", admin_key=d / "admin.key")
    if pki.ca_cert.exists() and pki.ca_key.exists():
        ca_key = _load_key(pki.ca_key)
        ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    else:
        ca_key = _new_key()
        ca = _issue(ca_cert=None, ca_key=ca_key, key=ca_key,
                    subject=_name(f"platform-ca@{int(_now().timestamp())}"),
                    days=CA_DAYS, is_ca=True)
        _write(pki.ca_key, _key_pem(ca_key), private=True)
        _write(pki.ca_cert, ca.public_bytes(serialization.Encoding.PEM), private=False)
        # A new CA invalidates every leaf signed by an old one.
        for p in (pki.serving_cert, pki.admin_cert):
            p.unlink(missing_ok=True)

    dns, ips = serving_names(advertise)
    if not (pki.serving_cert.exists() and pki.serving_key.exists()
            and _covers(x509.load_pem_x509_certificate(pki.serving_cert.read_bytes()),
                        dns, ips)):
        key = _new_key()
        cert = _issue(ca_cert=ca, ca_key=ca_key, key=key, subject=_name("platform-apiserver"),
                      days=LEAF_DAYS, server=True, dns=dns, ips=ips)
        _write(pki.serving_key, _key_pem(key), private=True)
        _write(pki.serving_cert, cert.public_bytes(serialization.Encoding.PEM), private=False)

    if not (pki.admin_cert.exists() and pki.admin_key.exists()):
        key = _new_key()
        cert = _issue(ca_cert=ca, ca_key=ca_key, key=key,
                      subject=_name(ADMIN_USER, (ADMIN_GROUP,)), days=LEAF_DAYS, client=True)
        _write(pki.admin_key, _key_pem(key), private=True)
        _write(pki.admin_cert, cert.public_bytes(serialization.Encoding.PEM), private=False)
    return pki


def issue_client_cert(pki: PKI, *, user: str, groups: tuple[str, ...] = (),
                      days: int = LEAF_DAYS) -> tuple[bytes, bytes]:
    """A client certificate for ``user`` signed by the PKI's CA: (cert PEM, key PEM)."""
    ca_key = _load_key(pki.ca_key)
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    key = _new_key()
    cert = _issue(ca_cert=ca, ca_key=ca_key, key=key, subject=_name(user, groups), days=days,
                  client=True)
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)
