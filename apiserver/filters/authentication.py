"""Authentication stage (upstream ``WithAuthentication``): sets ``request[USER]`` or answers
401 (an invalid credential, or no credential with anonymous auth off)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from apiserver.request import USER

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

    from apiserver.authn.union import RequestAuthenticator


def authentication(authenticator: RequestAuthenticator) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        request[USER] = await authenticator.authenticate(request)
        return await handler(request)

    return middleware
