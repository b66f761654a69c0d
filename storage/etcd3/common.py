"""Helpers shared by the etcd3 store, lister and watcher: value encoding, revision parsing,
error translation and upstream's error texts."""

from __future__ import annotations

from typing import Final

import orjson

from storage.errors import Code, StorageError
from storage.etcd3.kvclient import COMPACTED, FUTURE, TOO_LARGE_REQUEST, UNAVAILABLE, KVError
from storage.interface import Object, Preconditions

MAX_LIMIT: Final = 10_000  # upstream maxLimit: the largest page size paging grows to
MAX_REVISION: Final = 2**63 - 1
TOO_LARGE_WAIT: Final = 3.0  # seconds a request for a future revision waits before 504

# Upstream's 410 texts (etcd3/errors.go).
EXPIRED_LIST: Final = "The resourceVersion for the provided list is too old."
CONTINUE_EXPIRED: Final = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter."
)
INCONSISTENT_CONTINUE: Final = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)

# Groups without a dot in their name: the segment after /registry is a group, not a resource.
_DOTLESS_GROUPS: Final = frozenset({"apps", "batch", "policy", "autoscaling", "extensions"})


def prefix_end(prefix: bytes) -> bytes:
    """etcd's range end for "every key starting with prefix"."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


def resource_label(key: str) -> str:
    """The ``type`` label of etcd_request_duration_seconds: ``configmaps``,
    ``statefulsets.apps`` (upstream's GroupResource string) from a storage key."""
    parts = key.split("/", 4)
    if len(parts) < 3 or not parts[2]:
        return "unknown"
    first = parts[2]
    if ("." in first or first in _DOTLESS_GROUPS) and len(parts) > 3 and parts[3]:
        return f"{parts[3]}.{first}"
    return first


def parse_rv(rv: str) -> int | None:
    """"" -> None; a decimal string -> its value; anything else -> StorageError(INVALID)
    with upstream's message."""
    if rv == "":
        return None
    reason = "invalid syntax"
    if rv.isascii() and rv.isdigit():
        value = int(rv)
        if value <= MAX_REVISION:
            return value
        reason = "value out of range"  # etcd revisions are int64
    raise StorageError(
        Code.INVALID,
        f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
        f'strconv.ParseUint: parsing "{rv}": {reason}',
    )


def too_large(rv: int, current: int) -> StorageError:
    return StorageError(
        Code.TOO_LARGE_RESOURCE_VERSION,
        f"Too large resource version: {rv}, current: {current}",
        resource_version=rv,
        retry_after_seconds=1,
    )


def storage_error(err: KVError, key: str = "") -> StorageError:
    """The one translation from the KV layer's errors to StorageError."""
    if err.kind == COMPACTED:
        return StorageError(Code.RESOURCE_EXPIRED, EXPIRED_LIST, key=key)
    if err.kind == UNAVAILABLE:
        return StorageError(Code.UNREACHABLE, f"etcd unreachable: {err.message}", key=key)
    if err.kind == TOO_LARGE_REQUEST:
        # An object the store cannot hold is bad input (400), never a 500.
        return StorageError(Code.INVALID, err.message, key=key)
    if err.kind == FUTURE:
        return StorageError(Code.TOO_LARGE_RESOURCE_VERSION, err.message, key=key,
                            retry_after_seconds=1)
    return StorageError(Code.INTERNAL, err.message, key=key)


def encode(obj: Object) -> bytes:
    """JSON bytes as stored: the object without metadata.resourceVersion."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "resourceVersion" in meta:
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in meta.items() if k != "resourceVersion"}
    try:
        return orjson.dumps(obj)
    except TypeError as exc:
        raise StorageError(Code.INTERNAL, f"cannot encode object: {exc}") from None


def decode(data: bytes, rev: int, key: str | bytes) -> Object:
    """A stored value with metadata.resourceVersion set to ``rev``."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StorageError(Code.INTERNAL, f"unable to decode stored object at {key!r}: {exc}",
                           key=str(key)) from None
    if not isinstance(obj, dict):
        raise StorageError(Code.INTERNAL, f"stored value at {key!r} is not an object",
                           key=str(key))
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    meta["resourceVersion"] = str(rev)
    return obj


def metadata(obj: Object | None) -> dict[str, object]:
    """``obj.metadata`` when it is a mapping, else empty (never raises on odd objects)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def check_preconditions(p: Preconditions | None, key: str, obj: Object | None) -> None:
    """Upstream ``Preconditions.Check``; an absent object has an empty uid and version."""
    if p is None:
        return
    meta = metadata(obj)
    uid = str(meta.get("uid", ""))
    if p.uid is not None and p.uid != uid:
        raise StorageError(
            Code.CONFLICT,
            f"Precondition failed: UID in precondition: {p.uid}, UID in object meta: {uid}",
            key=key,
        )
    rv = str(meta.get("resourceVersion", ""))
    if p.resource_version is not None and p.resource_version != rv:
        raise StorageError(
            Code.CONFLICT,
            "Precondition failed: ResourceVersion in precondition: "
            f"{p.resource_version}, ResourceVersion in object meta: {rv}",
            key=key,
        )


