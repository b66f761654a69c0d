"""Protobuf watch frames, as upstream's protobuf stream serializer writes them.

A protobuf watch response (``Content-Type: application/vnd.platform.protobuf;stream=watch``)
is a sequence of frames: a 4-byte big-endian length, then a ``meta.v1.WatchEvent`` message
written raw (no magic, no Unknown envelope), whose ``object`` RawExtension holds the object's
full envelope (magic + Unknown), as the encoders of the golden WatchEvent and of a live watch
differ only in that embedded encoding.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from apiserver.protobuf.decode import decode_message
from apiserver.protobuf.encode import encode
from apiserver.protobuf.errors import ProtobufError
from apiserver.protobuf.schema import META_V1

WATCH_EVENT: Final = f"{META_V1}.WatchEvent"
_LENGTH: Final = struct.Struct(">I")


def _len_field(tag: int, payload: bytes) -> bytes:
    size = bytearray()
    value = len(payload)
    while value > 0x7F:
        size.append((value & 0x7F) | 0x80)
        value >>= 7
    size.append(value)
    return bytes([tag]) + bytes(size) + payload


def encode_watch_event(event_type: str, obj: dict[str, Any]) -> bytes:
    """One length-prefixed frame: WatchEvent{type, object: RawExtension{raw: encode(obj)}}.
    ``obj`` carries its apiVersion/kind (a Status for ERROR events)."""
    message = _len_field(0x0A, event_type.encode("utf-8")) + _len_field(
        0x12, _len_field(0x0A, encode(obj)))
    return _LENGTH.pack(len(message)) + message


def decode_watch_event(frame: bytes) -> dict[str, Any]:
    """{"type": ..., "object": {...}} of one frame (with its 4-byte length prefix)."""
    if len(frame) < _LENGTH.size:
        raise ProtobufError("watch frame shorter than its length prefix")
    (size,) = _LENGTH.unpack_from(frame)
    if size != len(frame) - _LENGTH.size:
        raise ProtobufError(f"watch frame length {size} does not match its "
                            f"{len(frame) - _LENGTH.size} bytes")
    return decode_message(WATCH_EVENT, frame[_LENGTH.size:])
