"""The configured authenticators combined as upstream's ``union`` + ``group`` +
``anonymous`` authenticators: x509 first, then tokens; the first that names a user wins; an
error (a presented but invalid credential) is final; a request with no credential at all is
``system:anonymous`` when anonymous auth is on, else 401. Every authenticated user gets the
group ``system:authenticated``. As upstream (``ApplyAuthorization``), anonymous auth is turned
off, with a warning, when the ``AlwaysAllow`` authorizer is configured (the default): a
request without credentials must not be allowed everything."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from apiserver.authn.tokenfile import TokenFileAuthenticator
from apiserver.authn.x509 import X509Authenticator
from apiserver.request import ANONYMOUS, UserInfo
from apiserver.status import unauthorized

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.authn.interface import Authenticator
    from apiserver.options import ServerOptions

log = logging.getLogger("apiserver.authn")

AUTHENTICATED_GROUP: Final = "system:authenticated"


def _with_authenticated(user: UserInfo) -> UserInfo:
    if AUTHENTICATED_GROUP in user.groups or user.name == ANONYMOUS.name:
        return user
    return replace(user, groups=(*user.groups, AUTHENTICATED_GROUP))


class RequestAuthenticator:
    def __init__(self, authenticators: Sequence[Authenticator], *, anonymous: bool) -> None:
        self._authenticators = tuple(authenticators)
        self._anonymous = anonymous

    async def authenticate(self, request: web.Request) -> UserInfo:
        """The request's user; raises APIError 401."""
        for a in self._authenticators:
            user = await a.authenticate(request)
            if user is not None:
                return _with_authenticated(user)
        if self._anonymous:
            return ANONYMOUS
        raise unauthorized()


def build_authenticator(opts: ServerOptions) -> RequestAuthenticator:
    """Raises ``TokenFileError`` for an unreadable or malformed token file."""
    chain: list[Authenticator] = []
    if opts.client_ca_file:
        chain.append(X509Authenticator())
    if opts.token_auth_file:
        chain.append(TokenFileAuthenticator.from_file(opts.token_auth_file))
    anonymous = opts.anonymous_auth
    if anonymous and "AlwaysAllow" in opts.authorization_mode:
        log.warning("AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting "
                    "AnonymousAuth to false. You should use a different authorizer")
        anonymous = False
    return RequestAuthenticator(chain, anonymous=anonymous)
