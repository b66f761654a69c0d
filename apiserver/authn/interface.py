"""The authenticator boundary (upstream ``authenticator.Request``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.request import UserInfo


class Authenticator(Protocol):
    async def authenticate(self, request: web.Request) -> UserInfo | None:
        """The user the request's credential names, or None when the request carries no
        credential of this kind (no opinion: the next method is tried). A credential of this
        kind that is presented but invalid raises ``apiserver.status.APIError`` 401
        (``apiserver.status.unauthorized()``): a bad token is never treated as anonymous."""
        ...
