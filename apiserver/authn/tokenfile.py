"""Static token file (``--token-auth-file``, upstream ``tokenfile``): CSV lines
``token,user,uid[,"group1,group2"]``; the file is read once at start (changing it needs a
restart, SPEC 5.2). Bearer tokens come from ``Authorization: Bearer <token>``."""

from __future__ import annotations

import csv
import hmac
from typing import TYPE_CHECKING, Final

import structlog

from apiserver.request import UserInfo
from apiserver.status import unauthorized

if TYPE_CHECKING:
    from aiohttp import web

log = structlog.get_logger("apiserver.authn")

BEARER: Final = "bearer"


class TokenFileError(ValueError):
    pass


def bearer_token(request: web.Request) -> str | None:
    """The bearer token of the request, or None (upstream ``bearertoken``: a header that is
    not ``Bearer <token>``, or an empty token, is no credential at all)."""
    auth = request.headers.get("Authorization", "").strip()
    if not auth:
        return None
    parts = auth.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != BEARER:
        return None
    return parts[1] or None


def load_token_file(path: str) -> list[tuple[bytes, UserInfo]]:
    """Parse the CSV file as upstream does: at least three columns, the fourth (optional) is
    a comma-separated group list; an empty token is skipped; a duplicate token keeps the
    later line."""
    entries: dict[str, UserInfo] = {}
    try:
        with open(path, newline="", encoding="utf-8") as f:
            for lineno, record in enumerate(csv.reader(f, skipinitialspace=True), start=1):
                if not record:
                    continue
                if len(record) < 3:
                    raise TokenFileError(
                        f"token file '{path}' must have at least 3 columns (token, user name, "
                        f"user uid), found {len(record)}")
                token, name, uid = record[0], record[1], record[2]
                if not token:
                    log.warning("empty token has been found in token file", file=path,
                                record=lineno)
                    continue
                if token in entries:
                    log.warning("duplicate token has been found in token file", file=path,
                                record=lineno)
                groups: tuple[str, ...] = ()
                if len(record) >= 4 and record[3]:
                    groups = tuple(g.strip() for g in record[3].split(","))
                entries[token] = UserInfo(name=name, uid=uid, groups=groups)
    except OSError as e:
        raise TokenFileError(f"cannot read token file '{path}': {e.strerror}") from None
    except csv.Error as e:
        raise TokenFileError(f"token file '{path}': {e}") from None
    return [(t.encode(), u) for t, u in entries.items()]


class TokenFileAuthenticator:
    def __init__(self, entries: list[tuple[bytes, UserInfo]]) -> None:
        self._entries = entries

    @classmethod
    def from_file(cls, path: str) -> TokenFileAuthenticator:
        return cls(load_token_file(path))

    def lookup(self, token: str) -> UserInfo | None:
        # Compare against every entry, in constant time each, so the time taken reveals
        # neither which entry matched nor how much of a token was right.
        presented = token.encode("utf-8", "surrogateescape")
        found: UserInfo | None = None
        for candidate, user in self._entries:
            if hmac.compare_digest(candidate, presented):
                found = user
        return found

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        token = bearer_token(request)
        if token is None:
            return None
        user = self.lookup(token)
        if user is None:
            raise unauthorized()
        return user
