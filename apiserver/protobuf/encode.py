"""JSON form of an object -> Protobuf wire format, as upstream's gogo-generated marshalers.

Write order and presence follow gogo: fields in ascending number; map entries sorted by key,
each with both key and value; repeated scalars unpacked (proto2); embedded (inline) structs and
the special messages written whole. A field absent from the JSON object is not written: for a
Go pointer field that is what gogo does, and for a non-pointer field a Go reader decodes the
same zero value either way (gogo itself would write the zero value; the bytes then differ from
upstream's but the object does not).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Final

import orjson

from apiserver.protobuf import schema, wellknown
from apiserver.protobuf.decode import MAGIC
from apiserver.protobuf.errors import ProtobufError
from apiserver.protobuf.schema import Field, Kind, MapType, Message, Special

_UINT64_MASK: Final = (1 << 64) - 1
_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
MAX_DEPTH: Final = 64
# Enum members bound once: attribute lookups on the enum classes are slow in hot loops.
_STRING: Final = Kind.STRING
_BYTES: Final = Kind.BYTES
_INT32: Final = Kind.INT32
_INT64: Final = Kind.INT64
_BOOL: Final = Kind.BOOL
_MAP: Final = Kind.MAP
_NONE: Final = Special.NONE


def _varint(out: bytearray, value: int) -> None:
    value &= _UINT64_MASK
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _len_field(out: bytearray, tag: bytes, payload: bytes | bytearray) -> None:
    out += tag
    _varint(out, len(payload))
    out += payload


def _type_error(where: str, want: str, value: Any) -> ProtobufError:
    return ProtobufError(f"{where}: expected {want}, got {type(value).__name__}")


def _as_int(value: Any, kind: Kind, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(where, "an integer", value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ProtobufError(f"{where}: {value} is not an integer")
        value = int(value)
    low, high = (_INT32_MIN, _INT32_MAX) if kind == Kind.INT32 else (_INT64_MIN, _INT64_MAX)
    if not low <= value <= high:
        raise ProtobufError(f"{where}: {value} overflows {kind.name.lower()}")
    return int(value)


def _as_str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _type_error(where, "a string", value)
    return value


def _utf8(value: str, where: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        raise ProtobufError(f"{where}: string is not valid UTF-8") from None


def _as_bytes(value: Any, where: str) -> bytes:
    text = _as_str(value, where)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ProtobufError(f"{where}: illegal base64 data") from None


def _time(seconds: int, nanos: int) -> bytearray:
    out = bytearray(b"\x08")
    _varint(out, seconds)
    out.append(0x10)
    _varint(out, nanos)
    return out


def _json_bytes(value: Any, where: str) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError as e:
        raise ProtobufError(f"{where}: {e}") from None


def _special(special: Special, value: Any, where: str) -> bytearray:
    """The message bytes of a value in its special JSON form."""
    out = bytearray()
    if special == Special.TIME:
        seconds, _ = wellknown.parse_time(_as_str(value, where))
        return _time(seconds, 0)  # upstream's Time marshals whole seconds only
    if special == Special.MICROTIME:
        seconds, nanos = wellknown.parse_time(_as_str(value, where))
        return _time(seconds, nanos)
    if special == Special.DURATION:
        out.append(0x08)
        _varint(out, wellknown.parse_duration(_as_str(value, where)))
    elif special == Special.INT_OR_STRING:
        if isinstance(value, str):
            out += b"\x08\x01\x10\x00"
            _len_field(out, b"\x1a", _utf8(value, where))
        else:
            out += b"\x08\x00\x10"
            _varint(out, _as_int(value, Kind.INT32, where))
            out += b"\x1a\x00"
    elif special == Special.QUANTITY:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        _len_field(out, b"\x0a", _utf8(_as_str(value, where), where))
    elif special in (Special.RAW_EXTENSION, Special.FIELDS_V1):
        _len_field(out, b"\x0a", _json_bytes(value, where))
    elif special == Special.STRING_LIST:
        if not isinstance(value, list):
            raise _type_error(where, "an array", value)
        for item in value:
            _len_field(out, b"\x0a", _utf8(_as_str(item, where), where))
    else:  # pragma: no cover - every Special is handled above
        raise AssertionError(special)
    return out


def _map_value(mt: MapType, value: Any, where: str, depth: int) -> bytes | bytearray:
    if value is None and mt.value_special in (Special.TIME, Special.MICROTIME):
        return b""  # Go's zero time: an empty message
    if mt.value == _STRING:
        return _utf8(_as_str(value, where), where)
    if mt.value == _BYTES:
        return _as_bytes(value, where)
    if mt.value_special != _NONE:
        return _special(mt.value_special, value, where)
    assert mt.value_message is not None
    return _encode(schema.message(mt.value_message), value, where, depth + 1)


def _write_value(f: Field, value: Any, out: bytearray, where: str, depth: int) -> None:
    kind = f.kind
    if kind == _STRING:
        _len_field(out, f.tag, _utf8(_as_str(value, where), where))
    elif kind == _BYTES:
        _len_field(out, f.tag, _as_bytes(value, where))
    elif kind == _BOOL:
        if not isinstance(value, bool):
            raise _type_error(where, "a boolean", value)
        out += f.tag
        out.append(1 if value else 0)
    elif kind in (_INT32, _INT64):
        out += f.tag
        _varint(out, _as_int(value, kind, where))
    elif f.special != _NONE:
        _len_field(out, f.tag, _special(f.special, value, where))
    else:
        assert f.message is not None
        _len_field(out, f.tag, _encode(schema.message(f.message), value, where, depth + 1))


def _encode(msg: Message, obj: Any, where: str, depth: int) -> bytearray:
    if depth > MAX_DEPTH:
        raise ProtobufError(f"{where}: nesting too deep")
    if msg.special != _NONE:
        return _special(msg.special, obj, where)
    if not isinstance(obj, dict):
        raise _type_error(where, "an object", obj)
    out = bytearray()
    for f in msg.ordered:
        if f.inline:
            assert f.message is not None
            _len_field(out, f.tag, _encode(schema.message(f.message), obj, where, depth + 1))
            continue
        value = obj.get(f.name)
        if value is None:
            continue
        here = f"{where}.{f.name}"
        if f.kind == _MAP:
            assert f.map is not None
            if not isinstance(value, dict):
                raise _type_error(here, "an object", value)
            for key in sorted(value):
                entry = bytearray()
                _len_field(entry, b"\x0a", _utf8(_as_str(key, here), here))
                _len_field(entry, b"\x12", _map_value(f.map, value[key], f"{here}[{key}]",
                                                      depth))
                _len_field(out, f.tag, entry)
        elif f.repeated:
            if not isinstance(value, list):
                raise _type_error(here, "an array", value)
            for index, item in enumerate(value):
                if item is None:
                    # what Go holds for a null item: the zero value (an object stored
                    # before the decoder wrote nulls in lists as zero values)
                    out += f.tag
                    out.append(0)  # a zero varint or an empty length-delimited value
                    continue
                _write_value(f, item, out, f"{here}[{index}]", depth)
        else:
            _write_value(f, value, out, here, depth)
    return out


def encode_message(type_name: str, obj: dict[str, Any]) -> bytes:
    """The wire bytes of ``obj`` (JSON form) as message ``type_name``. Raises UnknownKind for
    a name not in the schema and ProtobufError when the object does not fit the schema."""
    msg = schema.message(type_name)
    return bytes(_encode(msg, obj, msg.name.rsplit(".", 1)[-1], 0))


def encode(obj: dict[str, Any], *, api_version: str = "", kind: str = "") -> bytes:
    """The Protobuf envelope of ``obj``: magic, then runtime.Unknown with typeMeta from the
    object's apiVersion/kind, raw the typed message, and empty contentEncoding/contentType.

    ``api_version``/``kind`` name the type of an object that carries no apiVersion/kind
    (a WatchEvent); the envelope's typeMeta then stays empty, as upstream writes it."""
    if not isinstance(obj, dict):
        raise _type_error("object", "an object", obj)
    own_version = obj.get("apiVersion") or ""
    own_kind = obj.get("kind") or ""
    if not isinstance(own_version, str) or not isinstance(own_kind, str):
        raise ProtobufError("apiVersion and kind must be strings")
    type_name = schema.type_name_for(own_version or api_version, own_kind or kind)
    raw = encode_message(type_name, obj)
    type_meta = bytearray()
    _len_field(type_meta, b"\x0a", _utf8(own_version, "apiVersion"))
    _len_field(type_meta, b"\x12", _utf8(own_kind, "kind"))
    out = bytearray(MAGIC)
    _len_field(out, b"\x0a", type_meta)
    _len_field(out, b"\x12", raw)
    out += b"\x1a\x00\x22\x00"
    return bytes(out)
