"""Errors of the Protobuf codec.

Both are ``ValueError`` subclasses so that callers that only know "bad input" can catch
that; the endpoints tell them apart: garbage is a 400 (decode error), a well-formed envelope
for a kind that has no Protobuf schema is a 415 (as upstream answers for custom resources).
"""

from __future__ import annotations


class ProtobufError(ValueError):
    """The bytes are not a valid Protobuf encoding of the expected message (or, when
    encoding, the object does not fit the message's schema)."""


class UnknownKind(ValueError):
    """A well-formed envelope (or object) whose apiVersion/kind has no Protobuf message."""
