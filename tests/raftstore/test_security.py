"""Security defaults on real member processes: a TLS client listener that etcdctl reaches with
the CA certificate (and plain text does not), and peers that authenticate with a shared
password file."""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from raftstore.launcher import REPO_ROOT, RaftstoreCluster, free_ports
from raftstore.testing import etcdctl


def self_signed(dir_: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "raftstore-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = dir_ / "server.crt", dir_ / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def ctl(endpoint: str, *args: str, tls: list[str],
        timeout: int = 5) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [etcdctl.ETCDCTL, f"--endpoints={endpoint}", f"--dial-timeout={min(timeout, 3)}s",
         f"--command-timeout={timeout}s", *tls, *args],
        capture_output=True, text=True, timeout=30, env={**os.environ, "ETCDCTL_API": "3"},
    )


def test_tls_client_listener(tmp_path: Path) -> None:
    if not etcdctl.available():
        pytest.skip("etcdctl is not installed")
    cert, key = self_signed(tmp_path)
    client, peer = free_ports(2)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "raftstore", "--name", "tls", "--data-dir", str(tmp_path / "d"),
         "--listen-client-urls", f"https://127.0.0.1:{client}",
         "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--cert-file", str(cert), "--key-file", str(key)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        endpoint = f"https://127.0.0.1:{client}"
        deadline = time.monotonic() + 30
        while True:
            out = ctl(endpoint, "put", "secure", "yes", tls=["--cacert", str(cert)])
            if out.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert out.returncode == 0, out.stderr
        got = ctl(endpoint, "get", "secure", "--print-value-only", tls=["--cacert", str(cert)])
        assert got.stdout.strip() == "yes"
        # Without the CA the server's certificate is not trusted; plain text is refused.
        # (etcdctl retries a refused handshake until its command times out: a short one here.)
        assert ctl(endpoint, "get", "secure", tls=[], timeout=1).returncode != 0
        plain = ctl(f"127.0.0.1:{client}", "get", "secure", tls=[], timeout=1)
        assert plain.returncode != 0
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_peers_with_password_file(tmp_path: Path) -> None:
    if not etcdctl.available():
        pytest.skip("etcdctl is not installed")
    secret = tmp_path / "peer-secret"
    secret.write_text("a-long-shared-secret-for-peers\n")
    secret.chmod(0o600)
    with RaftstoreCluster(tmp_path / "c", nodes=3,
                          extra_args=["--peer-password-file", str(secret)]) as cluster:
        rc, out, err = etcdctl.run(cluster.endpoints, "put", "k", "v")
        assert rc == 0, err
        rc, out, err = etcdctl.run(cluster.endpoints[2:], "get", "k", "--print-value-only")
        assert out.strip() == "v"
