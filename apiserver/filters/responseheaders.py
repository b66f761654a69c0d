"""Headers upstream's outermost filters put on every response (``WithAuditInit`` and
``WithCacheControl``), whatever answered it: a handler, a filter's error, a 404 for an unknown
path, a watch stream.

- ``Audit-Id``: the request's audit ID (``request.AUDIT_ID``, set by the recovery stage), so
  that a client can name its request in a report and an operator find its log line.
- ``Cache-Control: no-cache, private`` unless the handler chose its own (discovery and the
  OpenAPI documents do).

``stamp`` sets them. The recovery stage (outermost) stamps every response it returns that is
not yet prepared; a handler that streams (it prepares its response itself: the watch) stamps
it before ``prepare``. aiohttp's ``on_response_prepare`` signal would cover both, but it costs
every request a coroutine.
"""

from __future__ import annotations

import os
from typing import Final

from aiohttp import web

from apiserver.request import AUDIT_ID

HEADER_AUDIT_ID: Final = "Audit-Id"  # Go's canonical form of upstream's "Audit-ID"
CACHE_CONTROL: Final = "no-cache, private"


def new_audit_id() -> str:
    """A random (version 4) UUID in its text form, as upstream's ``uuid.New().String()``;
    about twice as fast as ``str(uuid.uuid4())``, which matters once per request."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def audit_id_of(request: web.BaseRequest) -> str:
    """The client's ``Audit-ID`` header as sent (upstream does not truncate it), else a new
    one."""
    return request.headers.get("Audit-ID") or new_audit_id()


def stamp(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """Set ``Audit-Id`` and ``Cache-Control`` on ``response`` unless it has them (before its
    headers are sent)."""
    headers = response.headers
    if "Cache-Control" not in headers:
        headers["Cache-Control"] = CACHE_CONTROL
    if HEADER_AUDIT_ID not in headers:
        audit_id = request.get(AUDIT_ID)
        headers[HEADER_AUDIT_ID] = audit_id if audit_id is not None else audit_id_of(request)
