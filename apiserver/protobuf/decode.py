"""Protobuf wire format -> the object's JSON form, driven by the schema tables.

The JSON form follows upstream's JSON encoding of the same Go object, with one deliberate
choice where the wire cannot tell: gogo writes every non-pointer scalar field even when it is
empty, and the schema data does not say which fields are pointers. An empty string or empty
bytes value is dropped (nearly every such field is ``omitempty`` in Go), as is Go's zero time;
zero numbers and ``false`` are kept, since for a pointer field (``replicas: 0``) they carry
meaning, except for the non-pointer ``omitempty`` fields listed in ``schema.OMITTED_ZEROS``.
Unknown field numbers are skipped, as every protobuf reader does.

Every malformed input raises ProtobufError: truncated varints or lengths, wrong wire types,
invalid UTF-8, embedded JSON that does not parse; nothing else escapes.
"""

from __future__ import annotations

import base64
from typing import Any, Final

import orjson

from apiserver.protobuf import schema, wellknown
from apiserver.protobuf.errors import ProtobufError
from apiserver.protobuf.schema import Field, Kind, MapType, Message, Special

MAGIC: Final = b"k8s\x00"
MAX_DEPTH: Final = 64  # RawExtensions may nest envelopes; the schema itself has no cycles

_INT64_SIGN: Final = 1 << 63
_UINT64: Final = 1 << 64
_INT32_SIGN: Final = 1 << 31
_UINT32: Final = 1 << 32

_STRING: Final = Kind.STRING
_BYTES: Final = Kind.BYTES
_INT32: Final = Kind.INT32
_INT64: Final = Kind.INT64
_BOOL: Final = Kind.BOOL
_MESSAGE: Final = Kind.MESSAGE
_MAP: Final = Kind.MAP
_NONE: Final = Special.NONE
_TIME: Final = Special.TIME
_MICROTIME: Final = Special.MICROTIME
_DURATION: Final = Special.DURATION
_INT_OR_STRING: Final = Special.INT_OR_STRING
_QUANTITY: Final = Special.QUANTITY
_RAW_EXTENSION: Final = Special.RAW_EXTENSION
_FIELDS_V1: Final = Special.FIELDS_V1
_STRING_LIST: Final = Special.STRING_LIST


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ProtobufError("unexpected end of data in varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if shift > 63 or result >= _UINT64:
                raise ProtobufError("varint overflows 64 bits")
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint overflows 64 bits")


def _skip(buf: bytes, pos: int, end: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 2:
        length, pos = _varint(buf, pos, end)
        pos += length
    elif wire == 1:
        pos += 8
    elif wire == 5:
        pos += 4
    else:
        raise ProtobufError(f"unsupported wire type {wire}")
    if pos > end:
        raise ProtobufError("unexpected end of data in skipped field")
    return pos


def _text(buf: bytes, start: int, stop: int, what: str) -> str:
    try:
        return buf[start:stop].decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError(f"invalid UTF-8 in {what}") from None


def _int(value: int, kind: Kind) -> int | bool:
    if kind == _BOOL:
        return value != 0
    if kind == _INT32:
        value &= _UINT32 - 1
        return value - _UINT32 if value >= _INT32_SIGN else value
    return value - _UINT64 if value >= _INT64_SIGN else value


def _embedded_json(buf: bytes, start: int, stop: int, what: str, depth: int) -> Any:
    raw = buf[start:stop]
    if not raw:
        return None
    if raw[:4] == MAGIC:
        # A RawExtension may carry a protobuf-encoded object (watch events in protobuf).
        return decode_envelope(raw, depth=depth + 1)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ProtobufError(f"{what}: embedded JSON does not parse: {e}") from None


def _special(special: Special, buf: bytes, start: int, stop: int, depth: int) -> Any:
    """The JSON value of a message with a JSON form of its own."""
    if special == _QUANTITY:
        value = _fields(buf, start, stop).get(1)
        return _text(buf, value[0], value[1], "quantity") if isinstance(value, tuple) else ""
    if special in (_TIME, _MICROTIME):
        parts = _fields(buf, start, stop)
        if start == stop:  # upstream marshals Go's zero time as an empty message
            return None
        seconds = _int(_scalar(parts.get(1, 0)), _INT64)
        nanos = _int(_scalar(parts.get(2, 0)), _INT32)
        if seconds == wellknown.ZERO_TIME_SECONDS and not nanos:
            return None
        return wellknown.format_time(int(seconds), int(nanos),
                                     micro=special == _MICROTIME)
    if special == _DURATION:
        return wellknown.format_duration(int(_int(_scalar(_fields(buf, start, stop).get(1, 0)),
                                                  _INT64)))
    if special == _INT_OR_STRING:
        parts = _fields(buf, start, stop)
        if _scalar(parts.get(1, 0)) == 1:
            value = parts.get(3)
            return _text(buf, value[0], value[1], "IntOrString") if isinstance(
                value, tuple) else ""
        return _int(_scalar(parts.get(2, 0)), _INT32)
    if special in (_RAW_EXTENSION, _FIELDS_V1):
        value = _fields(buf, start, stop).get(1)
        if not isinstance(value, tuple):
            return None if special == _RAW_EXTENSION else {}
        return _embedded_json(buf, value[0], value[1], "raw", depth)
    if special == _STRING_LIST:
        items: list[str] = []
        pos = start
        while pos < stop:
            key, pos = _varint(buf, pos, stop)
            if key == 0x0A:
                length, pos = _varint(buf, pos, stop)
                if pos + length > stop:
                    raise ProtobufError("unexpected end of data in string list")
                items.append(_text(buf, pos, pos + length, "string list"))
                pos += length
            else:
                pos = _skip(buf, pos, stop, key & 7)
        return items
    raise AssertionError(special)


def _scalar(value: int | tuple[int, int]) -> int:
    if isinstance(value, tuple):
        raise ProtobufError("wrong wire type for a scalar field")
    return value


def _fields(buf: bytes, start: int, stop: int) -> dict[int, int | tuple[int, int]]:
    """Last value of each field of a small message: ints for varints, (start, stop) spans
    for length-delimited values."""
    out: dict[int, int | tuple[int, int]] = {}
    pos = start
    while pos < stop:
        key, pos = _varint(buf, pos, stop)
        wire = key & 7
        if wire == 0:
            out[key >> 3], pos = _varint(buf, pos, stop)
        elif wire == 2:
            length, pos = _varint(buf, pos, stop)
            if pos + length > stop:
                raise ProtobufError("unexpected end of data in length-delimited field")
            out[key >> 3] = (pos, pos + length)
            pos += length
        else:
            pos = _skip(buf, pos, stop, wire)
    return out


def _map_entry(mt: MapType, buf: bytes, start: int, stop: int, depth: int) -> tuple[str, Any]:
    key = ""
    value: Any = None
    seen = False
    pos = start
    while pos < stop:
        tag, pos = _varint(buf, pos, stop)
        wire = tag & 7
        if wire != 2:
            pos = _skip(buf, pos, stop, wire)
            continue
        length, pos = _varint(buf, pos, stop)
        end = pos + length
        if end > stop:
            raise ProtobufError("unexpected end of data in map entry")
        if tag == 0x0A:
            key = _text(buf, pos, end, "map key")
        elif tag == 0x12:
            seen = True
            if mt.value == _STRING:
                value = _text(buf, pos, end, "map value")
            elif mt.value == _BYTES:
                value = base64.b64encode(buf[pos:end]).decode("ascii")
            elif mt.value_special != _NONE:
                value = _special(mt.value_special, buf, pos, end, depth)
            else:
                assert mt.value_message is not None
                value = _message(schema.message(mt.value_message), buf, pos, end, depth + 1)
        pos = end
    if not seen:  # an entry without a value holds the value type's zero
        if mt.value in (_STRING, _BYTES):
            value = ""
        elif mt.value_special != _NONE:
            value = _special(mt.value_special, b"", 0, 0, depth)
        else:
            value = {}
    return key, value


def _length_value(f: Field, buf: bytes, pos: int, end: int, depth: int) -> Any:
    kind = f.kind
    if kind == _STRING:
        return _text(buf, pos, end, f.name)
    if kind == _BYTES:
        return base64.b64encode(buf[pos:end]).decode("ascii")
    if f.special != _NONE:
        return _special(f.special, buf, pos, end, depth)
    assert f.message is not None
    return _message(schema.message(f.message), buf, pos, end, depth + 1)


def _packed(f: Field, buf: bytes, pos: int, end: int, out: dict[str, Any]) -> None:
    items = out.setdefault(f.name, [])
    while pos < end:
        value, pos = _varint(buf, pos, end)
        items.append(_int(value, f.kind))


def _message(msg: Message, buf: bytes, pos: int, end: int, depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise ProtobufError("message nesting too deep")
    out: dict[str, Any] = {}
    by_number = msg.by_number
    while pos < end:
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos, end)
        wire = key & 7
        f = by_number.get(key >> 3)
        if f is None:
            if key >> 3 == 0:
                raise ProtobufError(f"invalid field number 0 in {msg.name}")
            pos = _skip(buf, pos, end, wire)
            continue
        if wire == 2:
            length = buf[pos] if pos < end else 0x80
            if length < 0x80:
                pos += 1
            else:
                length, pos = _varint(buf, pos, end)
            stop = pos + length
            if stop > end:
                raise ProtobufError(f"unexpected end of data in field {f.name!r} of "
                                    f"{msg.name}")
            kind = f.kind
            if kind == _MAP:
                assert f.map is not None
                k, v = _map_entry(f.map, buf, pos, stop, depth)
                out.setdefault(f.name, {})[k] = v
            elif f.repeated:
                if kind in (_INT32, _INT64, _BOOL):
                    _packed(f, buf, pos, stop, out)
                else:
                    out.setdefault(f.name, []).append(_length_value(f, buf, pos, stop, depth))
            elif kind in (_INT32, _INT64, _BOOL):
                raise ProtobufError(f"wrong wire type for field {f.name!r} of {msg.name}")
            elif f.inline:
                out.update(_length_value(f, buf, pos, stop, depth))
            else:
                value = _length_value(f, buf, pos, stop, depth)
                if value is None or (value == "" and kind != _MESSAGE and not f.keep_empty):
                    out.pop(f.name, None)
                else:
                    out[f.name] = value
            pos = stop
        elif wire == 0 and f.kind in (_INT32, _INT64, _BOOL):
            value, pos = _varint(buf, pos, end)
            if f.repeated:
                out.setdefault(f.name, []).append(_int(value, f.kind))
            elif value == 0 and f.omit_zero:
                out.pop(f.name, None)
            else:
                out[f.name] = _int(value, f.kind)
        else:
            raise ProtobufError(f"wrong wire type {wire} for field {f.name!r} of {msg.name}")
    return out


def decode_message(type_name: str, raw: bytes) -> dict[str, Any]:
    """The JSON form of ``raw``, an encoded ``type_name`` message (a full name such as
    "plat.io.api.core.v1.ConfigMap"). Raises UnknownKind for a name not in the schema and
    ProtobufError for malformed bytes."""
    msg = schema.message(type_name)
    return _decode_top(msg, bytes(raw), 0)


def _decode_top(msg: Message, raw: bytes, depth: int) -> dict[str, Any]:
    try:
        if msg.special != _NONE:
            value = _special(msg.special, raw, 0, len(raw), depth)
            return value if isinstance(value, dict) else {"value": value}
        return _message(msg, raw, 0, len(raw), depth)
    except (IndexError, RecursionError):
        raise ProtobufError(f"malformed {msg.name} message") from None


def _span_text(buf: bytes, parts: dict[int, int | tuple[int, int]], number: int,
               what: str) -> str:
    value = parts.get(number)
    if value is None:
        return ""
    if not isinstance(value, tuple):
        raise ProtobufError(f"wrong wire type for {what} in the protobuf envelope")
    return _text(buf, value[0], value[1], what)


def decode_envelope(body: bytes, *, depth: int = 0, api_version: str = "",
                    kind: str = "") -> dict[str, Any]:
    """Decode a full envelope (see ``decode``)."""
    if depth > MAX_DEPTH:
        raise ProtobufError("envelopes nested too deep")
    data = bytes(body)
    if data[:4] != MAGIC:
        raise ProtobufError("provided data does not have the protobuf message prefix")
    try:
        envelope = _fields(data, 4, len(data))
        encoding = _span_text(data, envelope, 3, "contentEncoding")
        if encoding:
            raise ProtobufError(f"unsupported content encoding {encoding!r} in the "
                                "protobuf envelope")
        type_meta = envelope.get(1)
        if isinstance(type_meta, int):
            raise ProtobufError("wrong wire type for typeMeta in the protobuf envelope")
        tm = _fields(data, type_meta[0], type_meta[1]) if type_meta else {}
        found_version = _span_text(data, tm, 1, "apiVersion")
        found_kind = _span_text(data, tm, 2, "kind")
        raw = envelope.get(2, (0, 0))
        if isinstance(raw, int):
            raise ProtobufError("wrong wire type for raw in the protobuf envelope")
    except IndexError:
        raise ProtobufError("malformed protobuf envelope") from None
    if not (found_kind or kind):
        raise ProtobufError("Object 'Kind' is missing in the protobuf envelope")
    type_name = schema.type_name_for(found_version or api_version, found_kind or kind)
    obj = _decode_top(schema.message(type_name), data[raw[0]:raw[1]], depth)
    if not found_version and not found_kind:
        return obj
    result: dict[str, Any] = {"kind": found_kind, "apiVersion": found_version}
    result.update(obj)
    return result


def decode(body: bytes, *, api_version: str = "", kind: str = "") -> dict[str, Any]:
    """The object of a Protobuf envelope (magic ``k8s\\0`` + runtime.Unknown) in its JSON
    form, with ``apiVersion`` and ``kind`` from the envelope's typeMeta first.

    ``api_version``/``kind`` name the type when the envelope's typeMeta is empty (upstream
    leaves it empty for WatchEvent); the result then has no apiVersion/kind. Raises
    ProtobufError on garbage and UnknownKind when no message matches the apiVersion/kind."""
    return decode_envelope(body, api_version=api_version, kind=kind)
