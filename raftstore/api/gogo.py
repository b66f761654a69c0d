"""Request bytes read as etcd reads them: the checks and error words of the ``Unmarshal``
methods gogo/protobuf generates for etcd's messages, so a malformed request gets the message
etcd gives ("grpc: error unmarshalling request: proto: wrong wireType = 0 for field Key").

Python's protobuf reads the same wire format with different rules: a known field with the
wrong wire type is kept as an unknown field (etcd refuses it), field numbers beyond 2**29 - 1
are an error (etcd skips them) and its error text is its own. ``check`` walks the bytes as the
generated Go code does, from the message's descriptor, and returns etcd's error, or None with
the bytes of the fields the message declares (unknown fields dropped, which is what etcd
keeps) for Python to parse when it refused the original.

The walk costs a few microseconds in Python, so the server runs it only when Python's parse
failed or kept unknown fields (``raftstore.api.server``); a request Python reads without
unknown fields is one etcd reads too.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf.descriptor import FieldDescriptor  # type: ignore[import-untyped]

ERR_EOF: Final = "unexpected EOF"  # io.ErrUnexpectedEOF
ERR_LENGTH: Final = "proto: negative length found during unmarshaling"  # ErrInvalidLengthRpc
ERR_OVERFLOW: Final = "proto: integer overflow"  # ErrIntOverflowRpc
ERR_END_GROUP: Final = "proto: unexpected end of group"  # ErrUnexpectedEndOfGroupRpc

_VARINT: Final = 0
_FIXED64: Final = 1
_BYTES: Final = 2
_START_GROUP: Final = 3
_END_GROUP: Final = 4
_FIXED32: Final = 5

_T = FieldDescriptor
_LENGTH_TYPES: Final = frozenset({_T.TYPE_STRING, _T.TYPE_BYTES, _T.TYPE_MESSAGE})
_FIXED64_TYPES: Final = frozenset({_T.TYPE_FIXED64, _T.TYPE_SFIXED64, _T.TYPE_DOUBLE})
_FIXED32_TYPES: Final = frozenset({_T.TYPE_FIXED32, _T.TYPE_SFIXED32, _T.TYPE_FLOAT})
_INT64_MAX: Final = (1 << 63) - 1


class GogoError(Exception):
    """What the generated ``Unmarshal`` returns for these bytes."""


def _go_int(v: int) -> int:
    """A uint64 as Go's ``int`` (two's complement, 64 bits)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _varint(data: bytes, i: int, n: int) -> tuple[int, int]:
    """The generated varint loop: ``shift >= 64`` is an overflow, running out of bytes an
    unexpected EOF; bits past 64 are lost as Go's shifts lose them."""
    value = 0
    shift = 0
    while True:
        if shift >= 64:
            raise GogoError(ERR_OVERFLOW)
        if i >= n:
            raise GogoError(ERR_EOF)
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & ((1 << 64) - 1), i
        shift += 7


def _skip(data: bytes, start: int, n: int) -> int:
    """gogo 1.3's ``skipRpc`` over ``data[start:n]``: the length of the field there."""
    i = start
    depth = 0
    while i < n:
        wire, i = _varint(data, i, n)
        wire_type = wire & 7
        if wire_type == _VARINT:
            _, i = _varint(data, i, n)
        elif wire_type == _FIXED64:
            i += 8
        elif wire_type == _BYTES:
            length, i = _varint(data, i, n)
            length = _go_int(length)
            if length < 0:
                raise GogoError(ERR_LENGTH)
            i += length
            if i > _INT64_MAX:  # Go's index wrapped below zero
                raise GogoError(ERR_LENGTH)
        elif wire_type == _START_GROUP:
            depth += 1
        elif wire_type == _END_GROUP:
            if depth == 0:
                raise GogoError(ERR_END_GROUP)
            depth -= 1
        elif wire_type == _FIXED32:
            i += 4
        else:
            raise GogoError(f"proto: illegal wireType {wire_type}")
        if depth == 0:
            return i - start
    raise GogoError(ERR_EOF)


def _go_name(field: Any) -> str:
    """protoc-gen-gogo's CamelCase of a field name (``range_end`` -> ``RangeEnd``)."""
    return "".join(p[:1].upper() + p[1:] for p in field.name.split("_"))


def _tag(number: int, wire_type: int) -> bytes:
    return _uvarint((number << 3) | wire_type)


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _walk(desc: Any, data: bytes, start: int, end: int, out: bytearray) -> None:
    """The generated ``Unmarshal`` of ``desc`` over ``data[start:end]``; appends the fields it
    declares to ``out``."""
    i = start
    fields = desc.fields_by_number
    while i < end:
        pre = i
        wire, i = _varint(data, i, end)
        # int32(wire >> 3): the low 32 bits, signed
        number = (((wire >> 3) & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000
        wire_type = wire & 7
        if wire_type == _END_GROUP:
            raise GogoError(f"proto: {desc.name}: wiretype end group for non-group")
        if number <= 0:
            raise GogoError(f"proto: {desc.name}: illegal tag {number} (wire type {wire})")
        field = fields.get(number)
        if field is None:
            skip = _skip(data, pre, end)
            if skip < 0:
                raise GogoError(ERR_LENGTH)
            if pre + skip > end:
                raise GogoError(ERR_EOF)
            i = pre + skip
            continue
        i = _field(field, wire_type, data, i, end, out)
    if i > end:
        raise GogoError(ERR_EOF)


def _field(field: Any, wire_type: int, data: bytes, i: int, end: int, out: bytearray) -> int:
    ftype = field.type
    repeated = bool(getattr(field, "is_repeated", False))
    if ftype in _LENGTH_TYPES:
        if wire_type != _BYTES:
            raise GogoError(f"proto: wrong wireType = {wire_type} for field {_go_name(field)}")
        length, i = _varint(data, i, end)
        length = _go_int(length)
        if length < 0:
            raise GogoError(ERR_LENGTH)
        post = i + length
        if post > _INT64_MAX:  # Go's int wrapped below zero
            raise GogoError(ERR_LENGTH)
        if post > end:
            raise GogoError(ERR_EOF)
        if ftype == _T.TYPE_MESSAGE:
            inner = bytearray()
            _walk(field.message_type, data, i, post, inner)
            payload = bytes(inner)
        else:
            payload = data[i:post]
        out += _tag(field.number, _BYTES) + _uvarint(len(payload)) + payload
        return post
    if ftype in _FIXED64_TYPES or ftype in _FIXED32_TYPES:
        want, size = (_FIXED64, 8) if ftype in _FIXED64_TYPES else (_FIXED32, 4)
        if wire_type == want:
            if i + size > end:
                raise GogoError(ERR_EOF)
            out += _tag(field.number, want) + data[i:i + size]
            return i + size
        if not (repeated and wire_type == _BYTES):
            raise GogoError(f"proto: wrong wireType = {wire_type} for field {_go_name(field)}")
        return _packed(field, data, i, end, out, size)
    # varint kinds: ints, bool, enum
    if wire_type == _VARINT:
        begin = i
        _, i = _varint(data, i, end)
        out += _tag(field.number, _VARINT) + data[begin:i]
        return i
    if not (repeated and wire_type == _BYTES):
        raise GogoError(f"proto: wrong wireType = {wire_type} for field {_go_name(field)}")
    return _packed(field, data, i, end, out, 0)


def _packed(field: Any, data: bytes, i: int, end: int, out: bytearray, size: int) -> int:
    """A packed repeated scalar (``size`` 0 for varints): each value read while ``i`` is
    before the packed length's end, as the generated loop does (a varint may run past it)."""
    length, i = _varint(data, i, end)
    length = _go_int(length)
    if length < 0:
        raise GogoError(ERR_LENGTH)
    post = i + length
    if post > end:
        raise GogoError(ERR_EOF)
    while i < post:
        begin = i
        if size:
            if i + size > end:
                raise GogoError(ERR_EOF)
            i += size
            out += _tag(field.number, _FIXED64 if size == 8 else _FIXED32) + data[begin:i]
        else:
            _, i = _varint(data, i, end)
            out += _tag(field.number, _VARINT) + data[begin:i]
    return i


def check(desc: Any, data: bytes) -> tuple[str | None, bytes]:
    """(etcd's error for ``data`` as a ``desc`` message, or None; the declared fields)."""
    out = bytearray()
    try:
        _walk(desc, data, 0, len(data), out)
    except GogoError as e:
        return str(e), b""
    return None, bytes(out)
