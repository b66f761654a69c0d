"""The in-memory MVCC store (etcd's ``kvstore.go``): ``KVStore`` implements ``KV``.

State, and the invariants that hold between two calls:

- ``index`` maps every key that has at least one kept version to its versions (an ``Entry``
  of ``raftstore.mvcc.key_index``: the one version itself, a tuple of a few, or a list of
  more); ``keys`` holds exactly the same keys in byte order, so a range visits only the keys
  it selects.
- ``rev`` is the revision of the last committed write transaction, 1 on an empty store; no
  version above ``rev`` is in the index except those of the one open write transaction.
- ``log[i]`` names the keys changed at revision ``log_start + i`` (one bytes object when a
  single key changed, else a tuple in operation order), for every revision from
  ``log_start = max(compact_rev, 2)`` to ``rev``: the revision-ordered side of the store that
  watch history and compaction walk instead of the whole keyspace.
- After ``compact(c)`` no key keeps a version below its newest version at or below ``c``, and
  none keeps a tombstone at or below ``c``; ``log`` then names only keys whose version at
  ``c`` survived.
- ``view_epoch`` counts ``snapshot_view`` calls. A list entry may be held by a ``SnapshotView``
  and is changed in place only when its key is in ``owned`` (the list was made after the last
  view); ``own_versions`` swaps in a copy first. Tuple entries (one version or a few) are
  immutable. The key chunks of ``keys`` and the lessor's key sets are copy-on-write too, by
  the epoch.

Construct with ``KVStore()``: it owns its lessor as ``store.lessor``.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final

import msgpack

from raftstore.mvcc.key_index import (
    CREATE,
    LEASE,
    MOD,
    VALUE,
    VERSION,
    Entry,
    Version,
    as_key_value,
    from_versions,
    latest_live,
    live_at,
    versions,
)
from raftstore.mvcc.keyrange import bounds
from raftstore.mvcc.kvstore_compaction import compact_store
from raftstore.mvcc.kvstore_txn import StoreTxnWrite
from raftstore.mvcc.lessor import LessorImpl
from raftstore.mvcc.snapshot import SNAPSHOT_FORMAT, SnapshotView
from raftstore.mvcc.sorted_keys import SortedKeys
from raftstore.mvcc.types import (
    CompactedError,
    Event,
    EventType,
    FutureRevError,
    KeyValue,
    RangeOptions,
    RangeResult,
)
from raftstore.mvcc.watchable_store import WatcherGroup, history

if TYPE_CHECKING:
    from raftstore.mvcc.kv import KV, TxnWrite
    from raftstore.mvcc.lease import Lessor

_HASH_FIELDS: Final = struct.Struct(">QqqqqQ")
_KEY_OF: Final = itemgetter(0)

LogEntry = bytes | tuple[bytes, ...] | None


class KVStore:
    """Implements ``raftstore.mvcc.kv.KV``. Not thread-safe: the caller serialises calls."""

    def __init__(self) -> None:
        self.index: dict[bytes, Entry] = {}
        self.keys = SortedKeys()
        self._rev = 1
        # etcd's compactMainRev starts at -1: Compact(0) on a store never compacted succeeds
        # (and sets it to 0), HashKV reports compact_revision -1 until then.
        self._compact_rev = -1
        self.log: list[LogEntry] = []
        self.log_start = 2
        self.watchers = WatcherGroup()
        self.lessor = LessorImpl(self)
        # Bumped by every snapshot_view (the lessor's copy-on-write goes by it).
        self.view_epoch = 0
        # Keys whose list entry was made after the last snapshot_view: only those lists may be
        # changed in place (own_versions).
        self.owned: set[bytes] = set()

    # -- reads ---------------------------------------------------------------------------

    @property
    def rev(self) -> int:
        return self._rev

    @property
    def compact_rev(self) -> int:
        return self._compact_rev

    def range(self, key: bytes, end: bytes | None, opts: RangeOptions) -> RangeResult:
        return self.range_at(key, end, opts, self._rev)

    def range_at(
        self, key: bytes, end: bytes | None, opts: RangeOptions, cur_rev: int
    ) -> RangeResult:
        """A range over the view at ``cur_rev`` (the store's revision, or a write txn's).
        Mirrors etcd's ``rangeKeys``: the result's ``rev`` is ``cur_rev`` even when reading
        an older ``opts.rev``; reading exactly at the compacted revision is allowed."""
        rev = opts.rev
        if rev > cur_rev:
            raise FutureRevError()
        if rev <= 0:
            rev = cur_rev
        if rev < self._compact_rev:
            raise CompactedError(self._compact_rev)
        kvs: list[KeyValue] = []
        if end is None:  # a single key, no scan
            entry = self.index.get(key)
            v = live_at(entry, rev) if entry is not None else None
            if v is None:
                return RangeResult(kvs=kvs, rev=cur_rev, count=0)
            if not opts.count_only:
                kvs.append(as_key_value(v))
            return RangeResult(kvs=kvs, rev=cur_rev, count=1)
        b = bounds(key, end)
        if b is None:
            return RangeResult(kvs=kvs, rev=cur_rev, count=0)
        index = self.index
        limit = 0 if opts.count_only else (opts.limit if opts.limit > 0 else -1)
        count = 0
        for k in self.keys.irange(*b):
            v = live_at(index[k], rev)
            if v is None:
                continue
            count += 1
            if limit < 0 or len(kvs) < limit:
                kvs.append(as_key_value(v))
        return RangeResult(kvs=kvs, rev=cur_rev, count=count)

    # -- writes --------------------------------------------------------------------------

    def write(self) -> StoreTxnWrite:
        return StoreTxnWrite(self)

    def commit(self, begin_rev: int, changes: list[Version]) -> None:
        """Publish a write transaction's ``changes`` (all at ``begin_rev + 1``): bump the
        revision, log the keys, hand the events to the watchers."""
        rev = begin_rev + 1
        self._rev = rev
        if len(changes) == 1:
            self.log.append(changes[0][0])
        else:
            self.log.append(tuple(map(_KEY_OF, changes)))
        if self.watchers:
            index = self.index
            events = []
            for v in changes:
                # etcd fills prev_kv with the key read at rev - 1.
                prev = live_at(index[v[0]], begin_rev)
                events.append(Event(
                    type=EventType.DELETE if v[VERSION] == 0 else EventType.PUT,
                    kv=as_key_value(v),
                    prev_kv=None if prev is None else as_key_value(prev),
                ))
            self.watchers.notify(rev, events)

    def compact(self, rev: int) -> None:
        if rev <= self._compact_rev:
            raise CompactedError(self._compact_rev)
        if rev > self._rev:
            raise FutureRevError()
        compact_store(self, self._compact_rev, rev)
        self._compact_rev = rev

    # -- watch ---------------------------------------------------------------------------

    def watch(
        self,
        key: bytes,
        end: bytes | None,
        start_rev: int,
        callback: Callable[[list[Event]], None],
        on_compacted: Callable[[int], None] | None = None,
    ) -> tuple[int, list[Event]]:
        """``KV.watch``. ``on_compacted`` (an extension) is called with the compacted
        revision, and the watcher cancelled, if a ``restore`` jumps past events the watcher
        has not seen and that the restored state no longer holds."""
        # etcd's chooseAll: a watcher is compacted when minRev < compactRev. minRev is
        # start_rev unless start_rev is 0 (or in the future): a negative one is compacted as
        # soon as it is below compactRev, which is -1 before any compaction.
        if start_rev != 0 and start_rev < self._compact_rev:
            raise CompactedError(self._compact_rev)
        if start_rev <= 0:
            events: list[Event] = []
            next_rev = self._rev + 1
        else:
            events = history(self, key, end, start_rev)
            next_rev = max(start_rev, self._rev + 1)
        return self.watchers.add(key, end, next_rev, callback, on_compacted), events

    def cancel_watch(self, watcher_id: int) -> None:
        self.watchers.cancel(watcher_id)

    # -- integrity and snapshots ---------------------------------------------------------

    def hash_kv(self, rev: int = 0) -> tuple[int, int, int]:
        """CRC-32 over every kept version with mod_revision <= ``rev``, in key then revision
        order. Errors as etcd's ``HashByRev`` (there ``rev == compact_rev`` is compacted)."""
        if 0 < rev <= self._compact_rev:
            raise CompactedError(self._compact_rev)
        if rev > self._rev:
            raise FutureRevError()
        if rev <= 0:
            rev = self._rev
        pack = _HASH_FIELDS.pack
        crc = zlib.crc32
        h = crc(b"mvcc-kv")
        index = self.index
        for k in self.keys:
            for v in versions(index[k]):
                if v[MOD] > rev:
                    break
                h = crc(
                    pack(len(k), v[MOD], v[CREATE], v[VERSION], v[LEASE], len(v[VALUE])), h)
                h = crc(k, h)
                h = crc(v[VALUE], h)
        return h, self._compact_rev, self._rev

    def version_count(self) -> int:
        """Versions kept (tombstones included): what compaction frees."""
        return sum(len(versions(e)) for e in self.index.values())

    def key_count(self) -> int:
        """Keys live at the current revision."""
        return sum(1 for e in self.index.values() if latest_live(e) is not None)

    def own_versions(self, key: bytes, entry: Entry) -> Entry:
        """``entry`` (which is ``index[key]``) ready to be changed in place by the functions of
        ``key_index``: a tuple as it is (they replace it), a list no snapshot view can hold as
        it is, else a copy that replaces it in the index (copy-on-write). Every change to a
        key's versions goes through here, and through ``set_versions`` after."""
        if entry.__class__ is not list or key in self.owned:
            return entry
        copy: list[Version] = entry[:]
        self.index[key] = copy
        self.owned.add(key)
        return copy

    def set_versions(self, key: bytes, old: Entry, new: Entry | None) -> None:
        """Put what a ``key_index`` function made of ``old`` (``own_versions``' result) in
        the index; None drops the key from the index (not from ``keys``: the caller's)."""
        if new is None:
            del self.index[key]
            self.owned.discard(key)  # the set holds no key the index dropped
        elif new is not old:
            self.index[key] = new
            if new.__class__ is list:
                self.owned.add(key)

    def snapshot_view(self) -> SnapshotView:
        """A consistent capture of the whole state, cheap enough for the raft thread: shallow
        copies of the index dict (key -> versions), of the sorted keys' chunk list, of the log
        and of the lease table; a few ms for 100,000 keys. What those copies point to (version
        lists, key chunks, lease key sets) is shared copy-on-write: ``owned`` is emptied and the
        view epoch bumped, so the store copies each one before its next change
        (``own_versions``, the lessor, ``SortedKeys.share``). Later writes, compactions, lease
        changes and restores therefore leave the view alone. ``view.write(f)`` streams the
        same bytes as ``snapshot`` from any thread (see ``raftstore.mvcc.snapshot``)."""
        view = self._capture(shared=True)
        self.view_epoch += 1
        self.owned = set()
        return view

    def _capture(self, shared: bool) -> SnapshotView:
        return SnapshotView(
            rev=self._rev,
            compact_rev=self._compact_rev,
            log_start=self.log_start,
            key_chunks=self.keys.share() if shared else self.keys.chunks(),
            key_count=len(self.keys),
            index=self.index.copy(),
            log=self.log[:],
            leases=self.lessor.capture(),
        )

    def snapshot(self) -> bytes:
        """Deterministic msgpack: maps in a fixed insertion order, keys sorted, leases by id.
        Two stores with the same history give the same bytes. The same encoder as
        ``snapshot_view().write``; the store must not change until this returns (it yields the
        GIL between chunks), so the capture is not marked shared and costs no later copies."""
        buf = io.BytesIO()
        self._capture(shared=False).write(buf)
        return buf.getvalue()

    def restore(self, data: bytes, deltas: Sequence[bytes] = ()) -> None:
        """Replace the whole state with a ``snapshot`` followed by ``deltas``, each written by
        ``SnapshotView.write_delta`` over the state the ones before it give. Raises
        ValueError, leaving the store as it was, for a snapshot it cannot read or a delta
        that does not follow."""
        state = _unpack_snapshot(data)
        index: dict[bytes, Entry] = {}
        for key, rows in state["kvs"]:
            entry = from_versions(_versions(key, rows))
            if entry is not None:
                index[key] = entry
        rev = int(state["rev"])
        compact_rev = int(state["compact_rev"])
        log_start = int(state["log_start"])
        log = [_logfrom_versions(e) for e in state["log"]]
        leases = state["leases"]
        for n, delta in enumerate(deltas, 1):
            d = _unpack_snapshot(delta)
            if d.get("base_rev") != rev or d.get("compact_rev") != compact_rev:
                raise ValueError(
                    f"mvcc: snapshot delta {n} applies to revision {d.get('base_rev')} "
                    f"(compacted at {d.get('compact_rev')}), not {rev} ({compact_rev})")
            dkeys = [key for key, _ in d["kvs"]]
            for key, rows in d["kvs"]:
                vs = _versions(key, rows)
                if not vs:
                    raise ValueError(f"mvcc: snapshot delta {n} names a key without versions")
                old = index.get(key)
                if old is not None:
                    kept = versions(old)
                    if vs[0][MOD] <= kept[-1][MOD]:
                        raise ValueError(f"mvcc: snapshot delta {n} rewrites a version")
                    vs[:0] = kept
                index[key] = from_versions(vs)  # type: ignore[assignment]
            try:
                log.extend(_logfrom_versions([dkeys[i] for i in e]) for e in d["log"])
            except (IndexError, TypeError):
                raise ValueError(f"mvcc: snapshot delta {n} logs a key it does not hold") from None
            rev = int(d["rev"])
            leases = d["leases"]
        if len(log) != rev + 1 - log_start:
            raise ValueError("mvcc: snapshot log does not cover its revisions")
        self.index = index
        self.owned = set()
        self.keys = SortedKeys(sorted(index))
        self._rev = rev
        self._compact_rev = compact_rev
        self.log_start = log_start
        self.log = log
        self.lessor.load(leases)
        self.watchers.after_restore(self)


def _unpack_snapshot(data: bytes) -> dict[str, Any]:
    try:
        state = msgpack.unpackb(data, raw=False, use_list=True)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        raise ValueError("mvcc: unreadable snapshot") from None
    if not isinstance(state, dict) or state.get("format") != SNAPSHOT_FORMAT:
        raise ValueError("mvcc: unknown snapshot format")
    return state


def _versions(key: bytes, rows: list[list[Any]]) -> list[Version]:
    return [(key, create, mod, version, value, lease)
            for mod, create, version, value, lease in rows]



def _logfrom_versions(e: list[bytes]) -> LogEntry:
    return None if not e else e[0] if len(e) == 1 else tuple(e)

if TYPE_CHECKING:  # mypy proves the classes satisfy the boundary Protocols

    def _conforms(store: KVStore) -> tuple[KV, TxnWrite, Lessor]:
        return store, store.write(), store.lessor
