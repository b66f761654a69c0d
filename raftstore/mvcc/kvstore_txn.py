"""The write transaction of ``KVStore`` (etcd's ``kvstore_txn.go``).

Changes go straight into the key index at revision ``begin_rev + 1`` while the transaction is
open: a range through the transaction therefore reads its own writes, and a range through
the store (which never reads above ``store.rev``) does not see them yet. ``end`` publishes the
revision; ``abort`` takes every change back out, so a caller that meets an error half-way
through a multi-operation transaction can keep the store unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raftstore.mvcc.key_index import (
    CREATE,
    LEASE,
    VERSION,
    KeyValues,
    Version,
    as_key_value,
    grown,
    latest,
    without_last,
)
from raftstore.mvcc.keyrange import bounds
from raftstore.mvcc.types import KeyValue, LeaseNotFoundError, RangeOptions, RangeResult

if TYPE_CHECKING:
    from raftstore.mvcc.kvstore import KVStore


class TxnClosedError(RuntimeError):
    """An operation on a transaction that already ended or aborted."""


class StoreTxnWrite:
    """Implements ``raftstore.mvcc.kv.TxnWrite``."""

    __slots__ = ("_store", "_begin_rev", "_changes", "_undo", "_done")

    def __init__(self, store: KVStore) -> None:
        self._store = store
        self._begin_rev = store.rev
        # Every version written, in operation order: the order of the txn's watch events.
        self._changes: list[Version] = []
        # (key, key index created by this txn, lease before, lease after) per change.
        self._undo: list[tuple[bytes, bool, int, int]] = []
        self._done = False

    def _check(self) -> None:
        if self._done:
            raise TxnClosedError("mvcc: transaction already ended")

    @property
    def view_rev(self) -> int:
        """The revision this transaction reads at: ``begin_rev`` until it changes something,
        ``begin_rev + 1`` after. etcd's ``storeTxnWrite`` reports the same one, as ``Range``'s
        revision and as ``DeleteRange``'s (so a delete that deletes nothing in a transaction
        that changed nothing yet answers ``begin_rev``)."""
        return self._begin_rev + 1 if self._changes else self._begin_rev

    def range(self, key: bytes, end: bytes | None, opts: RangeOptions) -> RangeResult:
        self._check()
        return self._store.range_at(key, end, opts, self.view_rev)

    def put(self, key: bytes, value: bytes, lease: int = 0) -> KeyValue | None:
        self._check()
        store = self._store
        lessor = store.lessor
        if lease and lease not in lessor:
            raise LeaseNotFoundError()
        rev = self._begin_rev + 1
        index = store.index
        entry = index.get(key)
        created = entry is None
        if entry is None:
            prev = None
        else:
            last = latest(entry)
            key = last[0]  # share one bytes object across the key's versions
            prev = last if last[VERSION] else None
        v: Version
        if prev is None:
            v = (key, rev, rev, 1, value, lease)
            old_lease = 0
        else:
            v = (key, prev[CREATE], rev, prev[VERSION] + 1, value, lease)
            old_lease = prev[LEASE]
        if entry is None:
            index[key] = v
            store.keys.add(key)
        elif entry.__class__ is list:
            store.own_versions(key, entry).append(v)  # type: ignore[union-attr]
        else:
            index[key] = new = grown(entry, v)
            if new.__class__ is list:
                store.owned.add(key)
        if old_lease != lease:
            if old_lease:
                lessor.detach(old_lease, key)
            if lease:
                lessor.attach(lease, key)
        self._changes.append(v)
        self._undo.append((key, created, old_lease, lease))
        return None if prev is None else as_key_value(prev)

    def delete_range(self, key: bytes, end: bytes | None) -> KeyValues:
        self._check()
        store = self._store
        index = store.index
        b = bounds(key, end)
        if b is None:
            return KeyValues([])
        # The index holds nothing above this txn's revision, so the latest version is the txn's
        # view of a key.
        live: list[Version]
        if end is None:
            entry = index.get(key)
            live = [last] if entry is not None and (last := latest(entry))[VERSION] else []
        else:
            live = [last for k in store.keys.irange(*b)
                    if (last := latest(index[k]))[VERSION]]
        rev = self._begin_rev + 1
        lessor = store.lessor
        # One loop iteration per key of a possibly large range (check perf's cleanup deletes
        # 60,000 keys in one request, which every member applies): ``key_index.tombstone``
        # and ``appended`` written out here.
        owned = store.owned
        changes = self._changes
        undo = self._undo
        for prev in live:
            key = prev[0]
            tomb: Version = (key, 0, rev, 0, b"", 0)
            entry = index[key]
            if entry.__class__ is not list:
                if entry[0].__class__ is not tuple:  # one version: a pair (grown, inline)
                    index[key] = (entry, tomb)  # type: ignore[assignment]
                else:
                    index[key] = new = grown(entry, tomb)
                    if new.__class__ is list:
                        owned.add(key)
            elif key in owned:
                entry.append(tomb)
            else:
                store.own_versions(key, entry).append(tomb)  # type: ignore[union-attr]
            if prev[LEASE]:
                lessor.detach(prev[LEASE], key)
            changes.append(tomb)
            undo.append((key, False, prev[LEASE], 0))
        return KeyValues(live)

    def end(self) -> int:
        """Commit. A transaction that changed nothing leaves the revision alone."""
        self._check()
        self._done = True
        if self._changes:
            self._store.commit(self._begin_rev, self._changes)
        self._undo = []
        return self._store.rev

    def abort(self) -> None:
        """Undo every change of this transaction (not part of the Protocol; for appliers that
        must leave the store untouched when an operation fails mid-transaction)."""
        self._check()
        self._done = True
        store = self._store
        lessor = store.lessor
        for key, created, old_lease, new_lease in reversed(self._undo):
            entry = store.own_versions(key, store.index[key])
            store.set_versions(key, entry, without_last(entry))
            if created:
                store.keys.remove(key)
            if old_lease != new_lease:
                if new_lease and new_lease in lessor:
                    lessor.detach(new_lease, key)
                if old_lease and old_lease in lessor:
                    lessor.attach(old_lease, key)
        self._changes = []
        self._undo = []
