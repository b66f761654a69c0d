"""The MVCC store's boundary: what the applier (raftstore/applier.py) may call.

Threading: the store is not thread-safe by itself. The owner (the state machine) serialises
every call with one lock; watch callbacks therefore run in the writer's thread while that lock
is held and must not block (hand the events to another thread or loop and return).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from raftstore.mvcc.types import Event, KeyValue, RangeOptions, RangeResult


class TxnWrite(Protocol):
    """One write transaction: every change made through it gets the same new revision
    (current + 1), assigned at ``end`` only if at least one key changed. Ranges inside the
    transaction see its own earlier writes (etcd's txn semantics)."""

    def range(self, key: bytes, end: bytes | None, opts: RangeOptions) -> RangeResult:
        """As ``KV.range`` but over this transaction's view. ``opts.rev`` other than 0 reads
        history (raises CompactedError / FutureRevError as ``KV.range``)."""

    def put(self, key: bytes, value: bytes, lease: int = 0) -> KeyValue | None:
        """Write key=value attached to ``lease`` (0: none; detaches from any previous lease).
        Returns the previous live KeyValue or None. Raises LeaseNotFoundError when ``lease``
        is not 0 and unknown. The key must be non-empty (checked by the caller)."""

    def delete_range(self, key: bytes, end: bytes | None) -> Sequence[KeyValue]:
        """Delete every live key in [key, end) (``end`` None: only ``key``; ``end`` == b"\\0":
        every key >= ``key``). Returns the deleted KeyValues (their last live versions), in
        key order. Writes tombstones; detaches keys from their leases."""

    def end(self) -> int:
        """Commit: bump the revision if anything changed, record events, notify watchers.
        Returns the store's revision after the transaction."""


class KV(Protocol):
    @property
    def rev(self) -> int:
        """Current revision. 1 on an empty store (etcd starts at 1)."""

    @property
    def compact_rev(self) -> int:
        """Last compacted revision (-1 when never compacted, as etcd's compactMainRev)."""

    def range(self, key: bytes, end: bytes | None, opts: RangeOptions) -> RangeResult:
        """Live keys in [key, end) at ``opts.rev`` (0: current). ``end`` None means just
        ``key``; ``end`` == b"\\0" means every key >= ``key``; an ``end`` <= ``key`` gives an
        empty result. Raises CompactedError if 0 < rev < compact_rev (reading exactly at
        compact_rev is allowed: etcd's ``rangeKeys`` checks ``rev < compactMainRev``),
        FutureRevError if rev > current revision. The result's ``rev`` is the current
        revision, as etcd's response header, even when reading an older ``opts.rev``."""

    def write(self) -> TxnWrite:
        """Begin a write transaction (the caller calls ``end``)."""

    def compact(self, rev: int) -> None:
        """Physically drop every version superseded at or before ``rev`` (a key's newest
        version at or below ``rev`` survives unless it is a tombstone) and the event history up
        to ``rev``. Raises CompactedError if rev <= compact_rev, FutureRevError if
        rev > current revision."""

    def hash_kv(self, rev: int) -> tuple[int, int, int]:
        """(hash, compact_rev, current rev) over every version kept with mod_revision <= rev
        (0: current), deterministic across members that applied the same commands. Raises
        CompactedError if 0 < rev <= compact_rev (etcd's ``HashByRev``), FutureRevError if
        rev > current revision."""

    def watch(
        self,
        key: bytes,
        end: bytes | None,
        start_rev: int,
        callback: Callable[[list[Event]], None],
    ) -> tuple[int, list[Event]]:
        """Subscribe to changes of [key, end) (same conventions as ``range``).

        Returns (watcher_id, history): ``history`` holds every stored event with revision >=
        ``start_rev`` in revision order (``start_rev`` 0: none, start at current + 1); after
        that, ``callback`` receives the events of each committed transaction that touch the
        range, in revision order, from the writer's thread. No event is lost or repeated
        between history and callback. Raises CompactedError when start_rev != 0 and
        start_rev < compact_rev (etcd's ``minRev < compactRev``, negative start revisions
        included; a watch from exactly compact_rev gets the puts that survived there, without
        their compacted prev_kv).
        A ``start_rev`` in the future is allowed (events arrive once the store reaches it)."""

    def cancel_watch(self, watcher_id: int) -> None:
        """Stop a watcher; unknown ids are ignored."""

    def snapshot(self) -> bytes:
        """The whole state (keys with all kept versions, revisions, leases) as msgpack."""

    def restore(self, data: bytes) -> None:
        """Replace the whole state with a ``snapshot``. Existing watchers stay registered and
        continue from the restored revision."""
