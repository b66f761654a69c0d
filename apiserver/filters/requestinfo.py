"""Request info: what the request is about, from its path and query alone (upstream
``WithRequestInfo``). Every later stage reads ``request[REQUEST_INFO]``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from apiserver.request import REQUEST_INFO, parse_request_info

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware


def request_info() -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        q = request.query
        query = {k: q[k] for k in ("watch",) if k in q}
        request[REQUEST_INFO] = parse_request_info(request.method, request.path, query)
        return await handler(request)

    return middleware
