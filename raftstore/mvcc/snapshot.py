"""``SnapshotView``: a frozen capture of a ``KVStore``, serialised later, in chunks.

Packing the whole store in one ``msgpack.packb`` call holds the GIL for as long as it takes
(about a second for 100,000 keys of 1 KiB), which stalls every other thread, the raft thread
among them. So a snapshot is taken in two steps:

1. ``KVStore.snapshot_view()``, in the thread that owns the store (between two applies), makes
   shallow copies only: the index dict (key -> its versions), the list of sorted-key chunks,
   the revision log (its entries are bytes, tuples or None, replaced and never mutated in
   place), the lease table (id, ttl, key set), and the revisions. What they point to is shared
   copy-on-write: the store copies a list of versions (``KVStore.own_versions``), a key chunk
   (``SortedKeys``) or a lease's key set (``LessorImpl``) captured before it, before changing
   it; versions are tuples. Nothing the store does afterwards (writes, aborts, compaction,
   lease revokes, a restore) reaches into what the view holds.
2. ``SnapshotView.write(f)``, in any thread, streams the msgpack document with explicit map and
   array headers, one batch of keys (or log entries, or lease keys) per ``Packer`` round, and
   yields the GIL between batches. The bytes are exactly what one ``msgpack.packb`` of the
   snapshot state would produce; ``KVStore.snapshot`` is this writer into a ``BytesIO``.

Format (a map, keys in this order):

    format       SNAPSHOT_FORMAT
    rev          the store's revision
    compact_rev  the last compacted revision
    kvs          [[key, [[mod_revision, create_revision, version, value, lease], ...]], ...]
                 keys ascending, versions by revision
    log_start    revision of log[0]
    log          [[key, ...], ...] the keys changed at each revision from log_start
    leases       [[id, ttl, [key, ...]], ...] by id, keys ascending

``SnapshotView.write_delta(f, base_rev)`` writes only what changed after an earlier capture
(format in its doc), which ``KVStore.restore`` applies after the full snapshot: the snapshot
file of a raftstore member is a full snapshot followed by such deltas (raftstore's
snapshot_file.py).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterator, Sequence, Set
from itertools import chain, islice
from typing import TYPE_CHECKING, BinaryIO, Final, TypeVar

import msgpack

from raftstore.mvcc.key_index import CREATE, LEASE, MOD, VALUE, VERSION, since, versions

if TYPE_CHECKING:
    from raftstore.mvcc.key_index import Entry
    from raftstore.mvcc.kvstore import LogEntry

SNAPSHOT_FORMAT: Final = 1

_T = TypeVar("_T")

# One batch is packed and written to the file: keys (their versions' values also count
# against the byte budget), log entries, lease keys per sort / merge step.
_KEYS_PER_BATCH: Final = 512
_BYTES_PER_BATCH: Final = 1 << 20
_LOG_PER_BATCH: Final = 1024
_SORT_RUN: Final = 4096
# The writer gives up the GIL far more often than it writes: after this many keys' rows (a
# tenth to a fifth of a millisecond here), or this many log positions. The member's event
# loop, raft thread and gRPC threads each take the GIL many times per request, and every time
# the writer held it they waited until it let go. Puts sent to a member writing a delta
# during `check perf`, with a yield per 512 keys (a few ms): p50 90-125 ms, p99 466-712 ms;
# per 32 keys: 44-46 and 239-260 ms (docs/benchmarks.md, twelfth session).
_KEYS_PER_YIELD: Final = 32
_ITEMS_PER_YIELD: Final = 1024


def _yield() -> None:
    time.sleep(0)  # releases the GIL: a waiting thread (the raft thread) runs now


def _stepped(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """``items`` in slices of ``_ITEMS_PER_YIELD``, with a GIL yield between two (a log entry
    of a DeleteRange names every key it deleted: tens of thousands)."""
    step = _ITEMS_PER_YIELD
    for lo in range(0, len(items), step):
        if lo:
            _yield()
        yield items[lo : lo + step]


class SnapshotView:
    """The whole state of a store at one revision; immutable once captured."""

    __slots__ = ("rev", "compact_rev", "log_start", "_key_chunks", "_key_count", "_index",
                 "_log", "_leases")

    def __init__(
        self,
        *,
        rev: int,
        compact_rev: int,
        log_start: int,
        key_chunks: list[list[bytes]],
        key_count: int,
        index: dict[bytes, Entry],
        log: list[LogEntry],
        leases: Sequence[tuple[int, int, Set[bytes]]],
    ) -> None:
        """Built by ``KVStore.snapshot_view``: ``key_chunks`` the keys ascending (``key_count``
        of them), ``index`` holding each of them, ``leases`` as (id, ttl, attached keys) by
        id. The outer containers belong to the view; what they hold is never changed again
        (the store's copy-on-write)."""
        self.rev = rev
        self.compact_rev = compact_rev
        self.log_start = log_start
        self._key_chunks = key_chunks
        self._key_count = key_count
        self._index = index
        self._log = log
        self._leases = leases

    def __len__(self) -> int:
        """Keys with at least one kept version (tombstones included)."""
        return self._key_count

    def write(self, f: BinaryIO) -> None:
        """Write the snapshot's msgpack bytes to ``f`` in batches, yielding the GIL after
        each one. Safe in any thread, any number of times."""
        out = _BatchWriter(f)
        out.packer.pack_map_header(7)
        out.pack("format")
        out.pack(SNAPSHOT_FORMAT)
        out.pack("rev")
        out.pack(self.rev)
        out.pack("compact_rev")
        out.pack(self.compact_rev)
        out.pack("kvs")
        out.versions(self._index, chain.from_iterable(self._key_chunks), self._key_count, 0)
        out.pack("log_start")
        out.pack(self.log_start)
        out.pack("log")
        out.log(self._log)
        out.pack("leases")
        out.leases(self._leases)

    def can_follow(self, base_rev: int) -> bool:
        """Whether ``write_delta(f, base_rev)`` can be written: the view still logs every
        revision after ``base_rev`` (no compaction trimmed them) and is not behind it."""
        return self.log_start - 1 <= base_rev <= self.rev

    def write_delta(self, f: BinaryIO, base_rev: int) -> int:
        """Write what changed after ``base_rev`` (an earlier capture of the same store, with
        the same compacted revision: see ``can_follow``), in batches as ``write`` does: each
        key the log names after ``base_rev`` with its versions above it, the log entries
        after it, and the whole lease table. ``KVStore.restore`` applies it on top of the
        state at ``base_rev``. Format (a map, keys in this order):

            format       SNAPSHOT_FORMAT
            base_rev     the revision of the state this applies to
            rev          the store's revision
            compact_rev  the last compacted revision (unchanged since base_rev)
            kvs          [[key, [version, ...]], ...] as in ``write``, versions > base_rev,
                         keys in the order of their first change
            log          [[i, ...], ...] the keys changed at each revision after base_rev,
                         each as its position in kvs (keys are often long: a DeleteRange of
                         many keys would otherwise write them all twice)
            leases       as in ``write``

        Returns the bytes of the lease table: what the delta repeats of earlier frames.
        """
        log = self._log[base_rev + 1 - self.log_start :]
        # Each changed key once, in the order of its first change, with its position: no
        # sort (52,000 keys cost half a second of CPU in runs merged by heapq), the restore
        # sorts the keys once anyway.
        position: dict[bytes, int] = {}
        setdefault = position.setdefault
        for entries in _stepped(log):
            for e in entries:
                if isinstance(e, bytes):
                    setdefault(e, len(position))
                elif not e:
                    continue
                elif len(e) <= _ITEMS_PER_YIELD:
                    for k in e:
                        setdefault(k, len(position))
                else:
                    for keys in _stepped(e):
                        for k in keys:
                            setdefault(k, len(position))
        _yield()
        out = _BatchWriter(f)
        out.packer.pack_map_header(7)
        out.pack("format")
        out.pack(SNAPSHOT_FORMAT)
        out.pack("base_rev")
        out.pack(base_rev)
        out.pack("rev")
        out.pack(self.rev)
        out.pack("compact_rev")
        out.pack(self.compact_rev)
        out.pack("kvs")
        out.versions(self._index, iter(position), len(position), base_rev)
        out.pack("log")
        out.log(log, position)
        out.pack("leases")
        out.flush()
        before = out.written
        out.leases(self._leases)
        return out.written - before


class _BatchWriter:
    """A msgpack stream to a file, written one batch at a time with a GIL yield after each."""

    __slots__ = ("_f", "packer", "pack", "written")

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.packer = msgpack.Packer(use_bin_type=True, autoreset=False)
        self.pack = self.packer.pack
        self.written = 0

    def flush(self) -> None:
        data = self.packer.bytes()
        self._f.write(data)
        self.written += len(data)
        self.packer.reset()
        _yield()

    def versions(self, index: dict[bytes, Entry], keys: Iterator[bytes], count: int,
                 above: int) -> None:
        """``count`` keys (``keys``), each with its versions of mod_revision above
        ``above`` as [mod_revision, create_revision, version, value, lease] rows."""
        pack = self.pack
        self.packer.pack_array_header(count)
        size = 0
        for n, key in enumerate(keys, 1):
            row = []
            entry = index[key]
            for v in since(entry, above) if above else versions(entry):
                value = v[VALUE]
                size += len(value)
                row.append([v[MOD], v[CREATE], v[VERSION], value, v[LEASE]])
            pack([key, row])
            if size >= _BYTES_PER_BATCH or not n % _KEYS_PER_BATCH:
                self.flush()
                size = 0
            elif not n % _KEYS_PER_YIELD:
                _yield()
        self.flush()

    def log(self, log: list[LogEntry], position: dict[bytes, int] | None = None) -> None:
        """The log entries, each as the list of its keys, or of their ``position``s."""
        packer = self.packer
        pack = self.pack
        packer.pack_array_header(len(log))
        for lo in range(0, len(log), _LOG_PER_BATCH):
            for e in log[lo : lo + _LOG_PER_BATCH]:
                # None: no key (an emptied compacted revision); bytes: one key; tuple: several
                # (msgpack packs a tuple as the array a list gives).
                if e is None:
                    packer.pack_array_header(0)
                elif isinstance(e, bytes):
                    packer.pack_array_header(1)
                    pack(e if position is None else position[e])
                elif len(e) <= _ITEMS_PER_YIELD:
                    pack(e if position is None else [position[k] for k in e])
                else:
                    packer.pack_array_header(len(e))
                    for keys in _stepped(e):
                        for k in keys:
                            pack(k if position is None else position[k])
            self.flush()

    def leases(self, leases: Sequence[tuple[int, int, Set[bytes]]]) -> None:
        packer = self.packer
        pack = self.pack
        packer.pack_array_header(len(leases))
        for lease_id, ttl, lease_keys in leases:
            packer.pack_array_header(3)
            pack(lease_id)
            pack(ttl)
            packer.pack_array_header(len(lease_keys))
            for batch in _sorted_batches(lease_keys):
                for key in batch:
                    pack(key)
                self.flush()
        self.flush()


def _sorted_batches(keys: Set[bytes]) -> Iterator[list[bytes]]:
    """``sorted(keys)`` as consecutive batches, without one long sort holding the GIL: a small
    list is sorted at once, a large one in runs of ``_SORT_RUN`` (yielding between runs) that
    are then merged a batch at a time."""
    if len(keys) <= _SORT_RUN:
        yield sorted(keys)
        return
    runs = []
    it = iter(keys)
    while run := sorted(islice(it, _SORT_RUN)):
        runs.append(run)
        _yield()
    merged = heapq.merge(*runs)
    while batch := list(islice(merged, _SORT_RUN)):
        yield batch
