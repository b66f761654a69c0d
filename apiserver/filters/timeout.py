"""Request timeout for requests that are not long-running (upstream
``WithTimeoutForNonLongRunningRequests`` + ``WithRequestDeadline``): ``--request-timeout``,
shortened by a valid ``?timeout=`` from the client; watches and proxies are exempt. A handler
that overruns is cancelled and the client gets 504 Timeout."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from aiohttp import web

from apiserver.filters.longrunning import is_long_running
from apiserver.options import parse_duration
from apiserver.request import REQUEST_INFO
from apiserver.status import APIError, bad_request

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

TIMEOUT_MESSAGE: Final = ("Timeout: request did not complete within requested timeout - "
                          "context deadline exceeded")


def request_timeout(default_seconds: float) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        if is_long_running(info):
            return await handler(request)
        seconds = default_seconds
        raw = request.query.get("timeout")
        if raw:
            try:
                asked = parse_duration(raw)
            except ValueError as e:
                raise bad_request(
                    f"invalid timeout specified in the request URL - {e}") from None
            if 0 < asked < seconds:
                seconds = asked
        try:
            async with asyncio.timeout(seconds):
                return await handler(request)
        except TimeoutError:
            raise APIError(504, "Timeout", TIMEOUT_MESSAGE) from None

    return middleware
