"""Value types of the MVCC store: key-values, events, range results and errors.

These mirror etcd's ``mvccpb.KeyValue`` / ``mvccpb.Event`` field for field so that the
gRPC layer converts them one to one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple


class KeyValue(NamedTuple):
    """One version of one key, as etcd's ``mvccpb.KeyValue``.

    For a DELETE event's ``kv`` only ``key`` and ``mod_revision`` (the deleting revision) are
    set, the rest are zero, exactly as etcd sends them.

    A named tuple: the store keeps each version as a plain tuple of these fields in this
    order, which the cyclic garbage collector does not track, and hands out a ``KeyValue``
    built from it in one step (``raftstore.mvcc.key_index``).
    """

    key: bytes
    create_revision: int
    mod_revision: int
    version: int
    value: bytes
    lease: int = 0


class EventType(enum.IntEnum):
    PUT = 0
    DELETE = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One change at one revision. ``prev_kv`` is the key's previous live version (None when
    the key did not exist before); the store always fills it, the watch API strips it unless
    the watcher asked for it."""

    type: EventType
    kv: KeyValue
    prev_kv: KeyValue | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RangeOptions:
    """``limit`` 0 means no limit; ``rev`` 0 means the current revision (or, inside a write
    transaction, the transaction's own view); ``count_only`` returns no kvs."""

    limit: int = 0
    rev: int = 0
    count_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RangeResult:
    """``kvs`` sorted by key, at most ``limit``; ``count`` is the number of keys in the range
    at that revision regardless of limit; ``rev`` is the store's current revision (the view's
    revision inside a write transaction), also when ``RangeOptions.rev`` read an older one:
    etcd's ``rangeKeys`` returns ``curRev`` and its response header carries it."""

    kvs: list[KeyValue]
    rev: int
    count: int


class MVCCError(Exception):
    """Base of the store's errors. The gRPC layer maps each subclass to etcd's code/message
    in one table (raftstore/errors.py)."""


class CompactedError(MVCCError):
    """The requested revision was compacted away (ranges: below the compacted revision;
    compact and hash: at or below it). ``compact_revision`` is the store's."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__("mvcc: required revision has been compacted")
        self.compact_revision = compact_revision


class FutureRevError(MVCCError):
    """The requested revision is above the current revision."""

    def __init__(self) -> None:
        super().__init__("mvcc: required revision is a future revision")


class LeaseNotFoundError(MVCCError):
    """A put named a lease that does not exist, or a lease operation named an unknown id."""

    def __init__(self) -> None:
        super().__init__("lease not found")


class LeaseExistsError(MVCCError):
    def __init__(self) -> None:
        super().__init__("lease already exists")


class KeyNotFoundError(MVCCError):
    """ignore_value / ignore_lease on a put of a key that does not exist."""

    def __init__(self) -> None:
        super().__init__("key not found")


class LeaseTTLTooLargeError(MVCCError):
    """A grant asked for more than MAX_LEASE_TTL seconds (etcd's ErrLeaseTTLTooLarge)."""

    def __init__(self) -> None:
        super().__init__("too large lease TTL")
