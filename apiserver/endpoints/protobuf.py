"""Protobuf request bodies (SPEC 4.3 envelope) for the few kinds whose schema is known here.

Stock kubectl's ``create <generator>`` commands send typed objects as protobuf
(``application/vnd.kubernetes.protobuf``, the name clients compiled against upstream use; the
renamed ``application/vnd.platform.protobuf`` is accepted alike). The envelope is the magic
``k8s\\0`` followed by a ``runtime.Unknown`` message: typeMeta (1: apiVersion 1, kind 2), raw
(2), contentEncoding (3), contentType (4). ``raw`` is the object's message, decoded here into
the same JSON form a JSON body would have (empty strings, zero times and empty collections
omitted, as Go's omitempty does). Kinds without a schema here are a 415, as before; the
types issue replaces these hand-written schemas with generated ones.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any, Final

import orjson

MAGIC: Final = b"k8s\x00"
MEDIA_TYPES: Final = frozenset({"application/vnd.kubernetes.protobuf",
                                "application/vnd.platform.protobuf"})


class ProtobufError(Exception):
    """Malformed protobuf."""


class UnknownKind(Exception):
    """A well-formed envelope for a kind without a schema here."""


# A schema maps field number -> (json name, type). Types: "string", "bytes", "int64",
# "int32", "bool", "time", "fieldsV1", "int64z" (a non-pointer int64: zero is omitted),
# ("message", schema), ("repeated", type), ("map", value type).
Schema = dict[int, tuple[str, Any]]

TIME: Final[Schema] = {1: ("seconds", "int64"), 2: ("nanos", "int32")}
OWNER_REFERENCE: Final[Schema] = {
    1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"),
    5: ("apiVersion", "string"), 6: ("controller", "bool"),
    7: ("blockOwnerDeletion", "bool"),
}
MANAGED_FIELDS_ENTRY: Final[Schema] = {
    1: ("manager", "string"), 2: ("operation", "string"), 3: ("apiVersion", "string"),
    4: ("time", "time"), 6: ("fieldsType", "string"), 7: ("fieldsV1", "fieldsV1"),
    8: ("subresource", "string"),
}
OBJECT_META: Final[Schema] = {
    1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
    4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
    7: ("generation", "int64z"), 8: ("creationTimestamp", "time"),
    9: ("deletionTimestamp", "time"), 10: ("deletionGracePeriodSeconds", "int64"),
    11: ("labels", ("map", "string")), 12: ("annotations", ("map", "string")),
    13: ("ownerReferences", ("repeated", ("message", OWNER_REFERENCE))),
    14: ("finalizers", ("repeated", "string")),
    17: ("managedFields", ("repeated", ("message", MANAGED_FIELDS_ENTRY))),
}
OBJECT_REFERENCE: Final[Schema] = {
    1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"),
    4: ("uid", "string"), 5: ("apiVersion", "string"), 6: ("resourceVersion", "string"),
    7: ("fieldPath", "string"),
}
_META: Final = ("metadata", ("message", OBJECT_META))

KINDS: Final[dict[tuple[str, str], Schema]] = {
    ("v1", "ConfigMap"): {1: _META, 2: ("data", ("map", "string")),
                          3: ("binaryData", ("map", "bytes")), 4: ("immutable", "bool")},
    ("v1", "Secret"): {1: _META, 2: ("data", ("map", "bytes")), 3: ("type", "string"),
                       4: ("stringData", ("map", "string")), 5: ("immutable", "bool")},
    ("v1", "Namespace"): {1: _META,
                          2: ("spec", ("message", {1: ("finalizers", ("repeated", "string"))})),
                          3: ("status", ("message", {1: ("phase", "string")}))},
    ("v1", "ServiceAccount"): {
        1: _META, 2: ("secrets", ("repeated", ("message", OBJECT_REFERENCE))),
        3: ("imagePullSecrets", ("repeated", ("message", {1: ("name", "string")}))),
        4: ("automountServiceAccountToken", "bool"),
    },
}
UNKNOWN: Final[Schema] = {1: ("typeMeta", ("message", {1: ("apiVersion", "string"),
                                                       2: ("kind", "string")})),
                          2: ("raw", "rawbytes"), 3: ("contentEncoding", "string"),
                          4: ("contentType", "string")}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ProtobufError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) in order; length-delimited values are bytes."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        value: Any
        if num == 0:
            raise ProtobufError("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ProtobufError("truncated length-delimited field")
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ProtobufError("truncated field")
        out.append((num, wire, value))
    return out


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _time(buf: bytes) -> str | None:
    t = _message(buf, TIME)
    seconds = t.get("seconds", 0)
    if not seconds and not t.get("nanos"):
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _scalar(typ: Any, wire: int, value: Any) -> Any:
    if isinstance(typ, tuple):
        if typ[0] == "message":
            _want(wire, 2)
            return _message(value, typ[1])
        raise ProtobufError("nested collection")
    if typ in ("string", "bytes", "rawbytes", "time", "fieldsV1"):
        _want(wire, 2)
        if typ == "string":
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                raise ProtobufError("invalid UTF-8 in a string field") from None
        if typ == "bytes":
            return base64.b64encode(value).decode("ascii")
        if typ == "time":
            return _time(value)
        if typ == "fieldsV1":
            raw = _message(value, {1: ("Raw", "rawbytes")}).get("Raw", b"{}")
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise ProtobufError("invalid fieldsV1") from None
        return value
    _want(wire, 0)
    if typ == "bool":
        return bool(value)
    if typ == "int64z":
        return _signed(value, 64) or None
    return _signed(value, 64 if typ == "int64" else 32)


def _want(wire: int, expected: int) -> None:
    if wire != expected:
        raise ProtobufError(f"wire type {wire}, expected {expected}")


def _message(buf: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for num, wire, value in _fields(buf):
        entry = schema.get(num)
        if entry is None:
            continue  # unknown fields are dropped, as upstream's protobuf decoding does
        name, typ = entry
        if isinstance(typ, tuple) and typ[0] == "repeated":
            out.setdefault(name, []).append(_scalar(typ[1], wire, value))
        elif isinstance(typ, tuple) and typ[0] == "map":
            _want(wire, 2)
            kv = _message(value, {1: ("key", "string"), 2: ("value", typ[1])})
            out.setdefault(name, {})[kv.get("key", "")] = kv.get(
                "value", "" if typ[1] == "string" else "")
        else:
            out[name] = _scalar(typ, wire, value)
    return {k: v for k, v in out.items() if v not in ("", None, [], {}) or v is False}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-enveloped object. Raises ProtobufError or UnknownKind."""
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, expected "
                            "prefix [107 56 115 0]")
    unknown = _message(body[len(MAGIC):], UNKNOWN)
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if unknown.get("contentEncoding"):
        raise ProtobufError("content encodings are not supported")
    schema = KINDS.get((api_version, kind))
    if schema is None:
        raise UnknownKind(f"{api_version}, Kind={kind}")
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    obj.update(_message(unknown.get("raw", b""), schema))
    return obj
