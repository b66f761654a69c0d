"""Protobuf serializer for the API objects, built from the v1.33 schema data.

Entry points: ``decode`` / ``encode`` for the SPEC 4.3 envelope (magic ``k8s\\0`` then a
``runtime.Unknown``), ``decode_message`` / ``encode_message`` for one typed message, and
``type_name_for`` from apiVersion/kind to the message's full name. Errors are
``ProtobufError`` (bad bytes or an object that does not fit) and ``UnknownKind`` (no
message for that apiVersion/kind), both ValueErrors. ``encode_watch_event`` /
``decode_watch_event`` handle one length-prefixed frame of a protobuf watch stream.
"""

from __future__ import annotations

from typing import Final

from apiserver.protobuf.decode import MAGIC, decode, decode_message
from apiserver.protobuf.encode import encode, encode_message
from apiserver.protobuf.errors import ProtobufError, UnknownKind
from apiserver.protobuf.schema import type_name_for
from apiserver.protobuf.watch import decode_watch_event, encode_watch_event

# The upstream media type (what stock clients send) and the renamed one (SPEC 4.3).
MEDIA_TYPE: Final = "application/vnd.platform.protobuf"
MEDIA_TYPES: Final = frozenset({"application/vnd.kubernetes.protobuf", MEDIA_TYPE})

__all__ = [
    "MAGIC", "MEDIA_TYPE", "MEDIA_TYPES", "ProtobufError", "UnknownKind", "decode",
    "decode_message", "decode_watch_event", "encode", "encode_message", "encode_watch_event",
    "type_name_for",
]
