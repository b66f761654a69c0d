"""Client certificates verified against ``--client-ca-file`` (upstream ``x509``
authenticator with ``CommonNameUserConversion``): username = subject CommonName, groups =
every Organization. The TLS layer verified the chain during the handshake (the serving
context requests a certificate with ``CERT_OPTIONAL`` and the CA bundle loaded), so a
certificate that reaches us is trusted; a connection without one is no opinion."""

from __future__ import annotations

import functools
import ssl
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.x509.oid import NameOID

from apiserver.request import UserInfo

if TYPE_CHECKING:
    from aiohttp import web


@functools.lru_cache(maxsize=1024)
def user_from_der(der: bytes) -> UserInfo | None:
    cert = x509.load_der_x509_certificate(der)
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    cn = str(cns[0].value) if cns else ""
    if not cn:
        return None
    orgs = tuple(str(a.value) for a in
                 cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
    return UserInfo(name=cn, groups=orgs)


def peer_certificate(request: web.Request) -> bytes | None:
    """The verified peer certificate (DER) of the request's TLS connection, if any."""
    transport = request.transport
    if transport is None:
        return None
    ssl_object = transport.get_extra_info("ssl_object")
    if not isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
        return None
    try:
        der = ssl_object.getpeercert(binary_form=True)
    except (ValueError, ssl.SSLError):
        return None
    return der or None


class X509Authenticator:
    async def authenticate(self, request: web.Request) -> UserInfo | None:
        der = peer_certificate(request)
        if der is None:
            return None
        return user_from_der(der)
