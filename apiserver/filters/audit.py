"""Audit stage (upstream ``WithAudit``): the boundary exists so that an audit backend plugs in
without touching the chain; the only backend so far records nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from apiserver.request import REQUEST_INFO, USER

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

    from apiserver.request import RequestInfo, UserInfo


class AuditSink(Protocol):
    def request_received(self, user: UserInfo, info: RequestInfo) -> None:
        """Stage RequestReceived; must not block or raise."""

    def response_complete(self, user: UserInfo, info: RequestInfo, code: int) -> None:
        """Stage ResponseComplete (or Panic with code 500); must not block or raise."""


class NoAudit:
    def request_received(self, user: UserInfo, info: RequestInfo) -> None:
        return None

    def response_complete(self, user: UserInfo, info: RequestInfo, code: int) -> None:
        return None


def audit(sink: AuditSink) -> Middleware:
    if isinstance(sink, NoAudit):
        @web.middleware
        async def passthrough(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await handler(request)
        return passthrough

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        user, info = request[USER], request[REQUEST_INFO]
        sink.request_received(user, info)
        code = 500
        try:
            resp = await handler(request)
            code = resp.status
            return resp
        finally:
            sink.response_complete(user, info, code)

    return middleware
