"""TLS serving and x509 client certificates through a real listener and a real TLS client;
the generated PKI."""

from __future__ import annotations

import ssl
import stat
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509

from apiserver import certs
from apiserver.app import Backends, build_app, prepare_tls, server_ssl_context
from apiserver.options import ServerOptions

from .conftest import RESOURCES, FakeStore, client_ssl, echo_routes, free_port


@pytest.fixture
async def tls_server(tmp_path):
    opts = ServerOptions(cert_dir=str(tmp_path / "pki"), bind_address="127.0.0.1")
    opts, tls = prepare_tls(opts, allinone=False)
    app = build_app(opts, Backends(storage=FakeStore(), resources=RESOURCES, owned=False))
    echo_routes(app)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=server_ssl_context(opts, tls))
    await site.start()
    try:
        yield f"https://127.0.0.1:{port}", tls.pki
    finally:
        await runner.cleanup()


async def whoami(url: str, ctx: ssl.SSLContext) -> dict:
    async with aiohttp.ClientSession() as s, s.get(f"{url}/whoami", ssl=ctx) as r:
        assert r.status == 200
        return await r.json()


async def test_admin_certificate_is_system_masters(tls_server):
    url, pki = tls_server
    body = await whoami(url, client_ssl(pki.ca_cert, pki.admin_cert, pki.admin_key))
    assert body["user"] == "platform-admin"
    assert body["groups"] == ["system:masters", "system:authenticated"]


async def test_client_certificate_user_and_groups(tls_server, tmp_path):
    url, pki = tls_server
    cert, key = certs.issue_client_cert(pki, user="jane", groups=("team-a", "team-b"))
    (tmp_path / "jane.crt").write_bytes(cert)
    (tmp_path / "jane.key").write_bytes(key)
    body = await whoami(url, client_ssl(pki.ca_cert, tmp_path / "jane.crt",
                                        tmp_path / "jane.key"))
    assert body["user"] == "jane"
    assert body["groups"] == ["team-a", "team-b", "system:authenticated"]


async def test_no_certificate_is_401_under_always_allow(tls_server):
    """Anonymous requests are turned off under AlwaysAllow, as upstream does."""
    url, pki = tls_server
    ctx = client_ssl(pki.ca_cert)
    async with aiohttp.ClientSession() as s, s.get(f"{url}/whoami", ssl=ctx) as r:
        assert r.status == 401
    ctx = client_ssl(pki.ca_cert, pki.admin_cert, pki.admin_key)
    async with aiohttp.ClientSession() as s, \
            s.get(url.replace("127.0.0.1", "localhost") + "/readyz", ssl=ctx) as r:
        assert r.status == 200  # the serving certificate covers localhost too


async def test_certificate_from_another_ca_is_refused(tls_server, tmp_path):
    url, pki = tls_server
    other = certs.ensure_pki(tmp_path / "other")
    ctx = client_ssl(pki.ca_cert, other.admin_cert, other.admin_key)
    with pytest.raises((aiohttp.ClientError, ssl.SSLError, ConnectionError)):
        await whoami(url, ctx)


def test_pki_reused_and_private(tmp_path):
    d = tmp_path / "pki"
    first = certs.ensure_pki(d)
    files = {p: p.read_bytes() for p in d.iterdir()}
    for key in (first.ca_key, first.serving_key, first.admin_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    certs.ensure_pki(d)
    assert {p: p.read_bytes() for p in d.iterdir()} == files
    # a new advertise address re-issues the serving certificate from the same CA
    third = certs.ensure_pki(d, advertise=("10.1.2.3",))
    assert third.ca_cert.read_bytes() == files[first.ca_cert]
    assert third.serving_cert.read_bytes() != files[first.serving_cert]
    cert = x509.load_pem_x509_certificate(third.serving_cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "10.1.2.3" in {str(i) for i in san.get_values_for_type(x509.IPAddress)}
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    admin = x509.load_pem_x509_certificate(third.admin_cert.read_bytes())
    assert admin.subject.rfc4514_string() == "CN=platform-admin,O=system:masters"


def test_given_certificate_files_are_used(tmp_path):
    pki = certs.ensure_pki(tmp_path / "pki")
    opts = ServerOptions(tls_cert_file=str(pki.serving_cert),
                         tls_private_key_file=str(pki.serving_key))
    opts2, tls = prepare_tls(opts, allinone=False)
    assert (tls.cert, tls.pki, opts2.client_ca_file) == (str(pki.serving_cert), None, "")
    assert not Path(tmp_path / "unused").exists()
