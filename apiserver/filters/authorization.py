"""Authorization stage (upstream ``WithAuthorization``): the authorizer must allow the
request; a deny or no opinion is 403 with upstream's message and the authorizers' reasons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from apiserver.authz.modes import forbidden_error
from apiserver.request import REQUEST_INFO, USER

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

    from apiserver.authz.interface import Authorizer


def authorization(authorizer: Authorizer) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        user, info = request[USER], request[REQUEST_INFO]
        decision = await authorizer.authorize(user, info)
        if decision.decision != "allow":
            raise forbidden_error(user, info, decision.reason)
        return await handler(request)

    return middleware
