"""Continue tokens of paged lists (upstream ``k8s.io/apiserver/pkg/storage/continue.go``).

A token is unpadded URL-safe base64 of the JSON ``{"v":"meta.plat.io/v1","rv":N,"start":K}``
where ``K`` is the key to resume from *relative to the list's prefix* (so a token can never
reach outside the prefix it was issued for) and ``N`` the revision every page is read at.
``rv == -1`` is the "inconsistent continue" token handed out with a 410: it resumes at the
latest revision instead of a compacted one.

Every backend and the cacher use this one module so their tokens are interchangeable.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from typing import Final

import orjson

from storage import gojson
from storage.errors import Code, StorageError

API_VERSION: Final = "meta.plat.io/v1"
# rv carried by the token returned with a 410 on an expired continue: "continue at latest".
INCONSISTENT_RV: Final = -1

# Upstream's error texts (storage/continue.go); the registry prefixes nothing: the message of
# the StorageError is what the 400 Status shows, as upstream's
# "invalid continue token: <DecodeContinue error>" from ValidateListOptions.
_GENERIC: Final = "continue key is not valid"
_BAD_RV: Final = (
    "continue key is not valid: incorrect encoded start resourceVersion (version meta.plat.io/v1)"
)
_EMPTY_KEY: Final = "continue key is not valid: encoded start key empty (version meta.plat.io/v1)"
_UNKNOWN_VERSION: Final = (
    "continue key is not valid: server does not recognize this encoded version"
)

_URLSAFE: Final = re.compile(rb"[A-Za-z0-9_-]*")


def _invalid(detail: str) -> StorageError:
    return StorageError(Code.INVALID, f"invalid continue token: {detail}")


def encode_continue(key: str, prefix: str, rv: int) -> str:
    """Token resuming a list of ``prefix`` at ``key`` (inclusive) at revision ``rv``.
    Raises StorageError(INTERNAL) when ``key`` is not under ``prefix`` (a bug in the caller)."""
    if not key.startswith(prefix) or key == prefix:
        raise StorageError(
            Code.INTERNAL,
            "unable to encode next field: the key and key prefix do not match",
            key=key,
        )
    body = orjson.dumps({"v": API_VERSION, "rv": rv, "start": key[len(prefix):]})
    return base64.urlsafe_b64encode(body).rstrip(b"=").decode("ascii")


def _b64decode(token: str) -> bytes:
    raw = token.encode("utf-8", "surrogateescape")
    m = _URLSAFE.match(raw)
    assert m is not None
    if m.end() != len(raw):
        raise _invalid(f"{_GENERIC}: illegal base64 data at input byte {m.end()}")
    if len(raw) % 4 == 1:
        raise _invalid(f"{_GENERIC}: illegal base64 data at input byte {len(raw) - 1}")
    try:
        return base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
    except (binascii.Error, ValueError) as exc:  # pragma: no cover - excluded by the checks above
        raise _invalid(f"{_GENERIC}: {exc}") from None


def decode_continue(token: str, prefix: str) -> tuple[str, int]:
    """The full key to resume from and the revision to read at (``INCONSISTENT_RV`` for "the
    latest"). Raises StorageError(INVALID) with upstream's messages for a token that does not
    decode, has no start key or revision, or whose key would escape ``prefix``."""
    data = _b64decode(token)
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # Go's scanner's words, as upstream's json.Unmarshal gives them
        raise _invalid(f"{_GENERIC}: {gojson.syntax_error(data) or exc}") from None
    if parsed is None:
        parsed = {}  # Go: null leaves the struct zero (and so without a revision)
    if not isinstance(parsed, dict):
        kind = ("array" if isinstance(parsed, list) else "string" if isinstance(parsed, str)
                else "bool" if isinstance(parsed, bool) else "number")
        raise _invalid(f"{_GENERIC}: json: cannot unmarshal {kind} into Go value of type "
                       "storage.continueToken")
    version = parsed.get("v", "")
    if version != API_VERSION:
        raise _invalid(f"{_UNKNOWN_VERSION} {version}")
    rv = parsed.get("rv", 0)
    start = parsed.get("start", "")
    if isinstance(rv, int) and not -(2**63) <= rv < 2**63:
        raise _invalid(f"{_GENERIC}: json: cannot unmarshal number {rv} into Go struct field "
                       "continueToken.rv of type int64")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv == 0:
        raise _invalid(_BAD_RV)
    if not isinstance(start, str) or not start:
        raise _invalid(_EMPTY_KEY)
    # Defend against path traversal: the cleaned key must equal the given one, so the start
    # key (re-rooted under the prefix) can never range over anything outside the prefix.
    rooted = start if start.startswith("/") else "/" + start
    if posixpath.normpath(rooted) != rooted or rooted.startswith("//"):
        raise _invalid(f"{_GENERIC}: {start}")
    return prefix + rooted[1:], rv


def next_page(
    last_key: str, prefix: str, rv: int, *, more: bool, remaining: int | None
) -> tuple[str, int | None]:
    """Token and remainingItemCount of a page (upstream ``PrepareContinueToken``): when
    ``more``, a token resuming just after ``last_key`` and ``remaining`` (pass None when the
    request had a selector, whose count would be a lie); otherwise ("", None)."""
    if not more:
        return "", None
    token = encode_continue(last_key + "\x00", prefix, rv)
    return token, remaining if remaining is not None and remaining > 0 else None
