"""The write transaction of ``KVStore`` (etcd's ``kvstore_txn.go``).

Changes go straight into the key index at revision ``begin_rev + 1`` while the transaction is
open: a range through the transaction therefore reads its own writes, and a range through
the store (which never reads above ``store.rev``) does not see them yet. ``end`` publishes the
revision; ``abort`` takes every change back out, so a caller that meets an error half-way
through a multi-operation transaction can keep the store unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raftstore.mvcc.key_index import KeyIndex
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
        self._changes: list[KeyValue] = []
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
        ki = store.index.get(key)
        created = ki is None
        if ki is None:
            prev = None
        else:
            key = ki.revs[-1].key  # share one bytes object across the key's versions
            prev = ki.latest_live()
        if prev is None:
            kv = KeyValue(
                key=key, create_revision=rev, mod_revision=rev, version=1, value=value,
                lease=lease,
            )
            old_lease = 0
        else:
            kv = KeyValue(
                key=key, create_revision=prev.create_revision, mod_revision=rev,
                version=prev.version + 1, value=value, lease=lease,
            )
            old_lease = prev.lease
        if ki is None:
            store.index[key] = KeyIndex(kv, store.view_epoch)
            store.keys.add(key)
        else:
            store.own_key_index(key, ki).append(kv)
        if old_lease != lease:
            if old_lease:
                lessor.detach(old_lease, key)
            if lease:
                lessor.attach(lease, key)
        self._changes.append(kv)
        self._undo.append((key, created, old_lease, lease))
        return prev

    def delete_range(self, key: bytes, end: bytes | None) -> list[KeyValue]:
        self._check()
        store = self._store
        index = store.index
        b = bounds(key, end)
        if b is None:
            return []
        # The index holds nothing above this txn's revision, so "latest" is the txn's view.
        if end is None:
            ki = index.get(key)
            live = [ki] if ki is not None and ki.latest_live() is not None else []
        else:
            live = [ki for k in store.keys.irange(*b) if (ki := index[k]).latest_live()]
        rev = self._begin_rev + 1
        lessor = store.lessor
        deleted: list[KeyValue] = []
        # One loop iteration per key of a possibly large range (check perf's cleanup deletes
        # 60,000 keys in one request, which every member applies): ``tombstone`` and
        # ``own_key_index``'s common case (no snapshot view holds the key) written out here.
        epoch = store.view_epoch
        own = store.own_key_index
        changes = self._changes
        undo = self._undo
        for ki in live:
            prev = ki.revs[-1]
            key = prev.key
            tomb = KeyValue(key=key, create_revision=0, mod_revision=rev, version=0, value=b"")
            (ki if ki.epoch == epoch else own(key, ki)).revs.append(tomb)
            if prev.lease:
                lessor.detach(prev.lease, key)
            changes.append(tomb)
            undo.append((key, False, prev.lease, 0))
            deleted.append(prev)
        return deleted

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
            store.own_key_index(key, store.index[key]).revs.pop()
            if created:
                del store.index[key]
                store.keys.remove(key)
            if old_lease != new_lease:
                if new_lease and new_lease in lessor:
                    lessor.detach(new_lease, key)
                if old_lease and old_lease in lessor:
                    lessor.attach(old_lease, key)
        self._changes = []
        self._undo = []
