"""``KVClient``: the few etcd v3 calls the store needs, in etcd's protobuf terms.

Two implementations: ``storage.etcd3.grpcclient.GrpcKVClient`` (network, raftstore or etcd)
and ``storage.embedded.LocalKVClient`` (the raftstore state machine in process). The store
(``storage.etcd3.store.Etcd3Store``) holds every line of the storage semantics on top of this
boundary, so the two backends cannot drift.

Errors: every method raises ``KVError`` (and nothing else) for store failures, with ``kind``
one of ``COMPACTED`` (a revision older than the compaction; ``compact_revision`` set when
known), ``FUTURE`` (a revision the store has not reached), ``UNAVAILABLE`` (no member
answered in time), ``TOO_LARGE_REQUEST`` (a write over etcd's request size limit) or
``OTHER``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from raftstore.api.pb import rpc_pb2 as pb

COMPACTED: Final = "compacted"
FUTURE: Final = "future"
UNAVAILABLE: Final = "unavailable"
TOO_LARGE_REQUEST: Final = "request_too_large"  # etcd --max-request-bytes (1.5 MiB)
OTHER: Final = "other"


class KVError(Exception):
    def __init__(self, kind: str, message: str, *, compact_revision: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.compact_revision = compact_revision

    def __repr__(self) -> str:
        return f"KVError({self.kind}, {self.message!r})"


class KeyValueLike(Protocol):
    """etcd's mvccpb.KeyValue as the store reads it (the protobuf message, or raftstore's
    MVCC KeyValue in process)."""

    @property
    def key(self) -> bytes: ...
    @property
    def value(self) -> bytes: ...
    @property
    def create_revision(self) -> int: ...
    @property
    def mod_revision(self) -> int: ...
    @property
    def version(self) -> int: ...


class HeaderLike(Protocol):
    @property
    def revision(self) -> int: ...


class RangeReply(Protocol):
    """etcd's RangeResponse as the store reads it."""

    @property
    def kvs(self) -> Sequence[KeyValueLike]: ...
    @property
    def more(self) -> bool: ...
    @property
    def count(self) -> int: ...
    @property
    def header(self) -> HeaderLike: ...


class KVWatch(Protocol):
    """One etcd watch. Iterating yields its WatchResponses after the ``created`` one (which
    ``KVClient.watch`` consumed): events, progress notifications (no events, not canceled)
    and at most one final ``canceled`` response (``compact_revision`` set when the start
    revision was compacted). Iteration ends after ``close()`` or the canceled response."""

    @property
    def created_revision(self) -> int:
        """header.revision of the created response: the store's revision at creation."""

    def __aiter__(self) -> AsyncIterator[pb.WatchResponse]: ...

    async def request_progress(self) -> None:
        """Ask for a progress notification (a response with the current revision and no
        events, ordered after every event at or below that revision)."""

    def close(self) -> None:
        """Cancel the watch; idempotent."""


class KVClient(Protocol):
    async def range(self, req: pb.RangeRequest) -> RangeReply:
        """etcd Range (linearizable unless ``req.serializable``). Raises KVError."""

    async def txn(self, req: pb.TxnRequest) -> pb.TxnResponse:
        """etcd Txn. Raises KVError."""

    async def compact(self, revision: int) -> None:
        """etcd Compact. Raises KVError (COMPACTED when ``revision`` is already compacted)."""

    async def compacted_revision(self) -> int:
        """The store's compaction revision (0 when never compacted). Raises KVError."""

    async def watch(self, req: pb.WatchCreateRequest) -> KVWatch:
        """Create a watch and wait for its created response. A start revision older than the
        compaction does not raise: the watch yields one canceled response with
        compact_revision. Raises KVError (UNAVAILABLE)."""

    async def lease_grant(self, ttl: int) -> int:
        """etcd LeaseGrant with a store-chosen id; returns the id. Keys put with it are
        deleted when it expires (``ttl`` seconds). Raises KVError."""

    async def progress_supported(self) -> bool:
        """Whether the store orders a progress response after every event at or below its
        revision (etcd >= 3.4.31 / 3.5.13, upstream's feature check for
        RequestWatchProgress). Raises KVError."""

    async def close(self) -> None:
        """Close connections; idempotent."""
