"""A durable Raft journal for pysyncobj.

pysyncobj 0.3.17's own FileJournal writes through mmap and never syncs, and keeps term and vote
in a pickled side file. This journal replaces it (see replication.py for how it is plugged in):

* entries are appended to ``<path>`` as records ``[len u32][crc32 u32][idx u64][term u64][cmd]``;
  ``add`` only buffers, ``sync`` writes the buffer and fdatasyncs once (group commit: every
  entry appended since the last sync shares one fdatasync); ``durable_index`` is the index of
  the last entry known to be on disk;
* the file is grown ahead of the records by ``_GROW`` bytes of written zeros at a time, as
  etcd preallocates its WAL segments: an fdatasync of records written over zeros already on
  disk has no file size or block allocation to commit, only the data (on ext4 here, 30% less
  CPU per sync and a lower tail than appending, see docs/benchmarks.md). Reading stops at
  the first record that does not check; a tail of zeros after it is that space, not damage;
* term, vote and commit index live in ``<path>.meta`` as msgpack, replaced atomically (write a
  temporary file, fsync it, rename, fsync the directory). Term and vote are stored
  synchronously, because Raft forbids sending a vote before they are durable;
* a torn or corrupt tail (a crash in the middle of a write) is detected by length and CRC at
  start-up and cut off: those entries were never acknowledged, since nothing was sent and
  nothing applied before the sync that would have covered them;
* the meta file also records ``synced``, an index every entry up to which was fdatasynced
  when the file was written (stored at most once a second, and lowered at once when the log
  is cut below it). A damaged record at or below that index is damage to entries that were
  on disk, not a torn write, and the journal refuses to load (``JournalError``) instead of
  dropping them and everything after them, as etcd refuses a WAL with a CRC mismatch;
* ``deleteEntriesTo`` (after a snapshot) rewrites the remaining entries into a new file and
  renames it over the old one, fsyncing file and directory, which also makes the snapshot
  file's rename (same directory) durable.

The ordering rule that makes acknowledged writes survive a machine crash lives in
replication.py: the journal is synced before any message leaves the member and before any
entry is applied.
"""

from __future__ import annotations

import logging
import os
import queue
import struct
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any, Final

import msgpack
from pysyncobj.journal import Journal

from raftstore import metrics

log = logging.getLogger("raftstore.journal")

# What a member does when its journal cannot be written: stop at once, as etcd stops on a
# WAL write error. Acknowledgements wait for the journal; going on after a failed write would
# acknowledge entries that are not on this disk (what a full disk did). Tests replace it.
EX_IOERR: Final = 74


def _stop_member(what: str, exc: BaseException) -> None:
    log.critical("raft journal: %s failed (%s); this member stops, since everything it "
                 "acknowledges must be on its disk", what, exc)
    logging.shutdown()
    os._exit(EX_IOERR)


on_fatal: Callable[[str, BaseException], None] = _stop_member


class JournalError(Exception):
    """The journal on disk cannot be used as it is (the member refuses to start)."""

# A dead prefix (entries a snapshot covers) is rewritten away once it is this large.
_DEAD_PREFIX: Final = 64 << 20
_SLOW_SYNC: Final = 0.1  # seconds; etcd warns at 1 s, we want to see smaller stalls too
_HEADER: Final = struct.Struct("<IIQQ")  # payload length, crc32 of the rest, idx, term
# The journal file is grown this much ahead of its records (written zeros; see the module doc).
_GROW: Final = 4 << 20
_ZEROS: Final = bytes(1 << 20)

Entry = tuple[bytes, int, int]  # (command, idx, term) as pysyncobj stores them


class CrcWriter:
    """Writes through to ``f`` and keeps the CRC-32 of everything written (a snapshot's
    trailer: a snapshot damaged on disk is refused instead of served)."""

    def __init__(self, f: Any) -> None:
        self._f = f
        self.crc = 0

    def write(self, data: bytes) -> int:
        self.crc = zlib.crc32(data, self.crc)
        return int(self._f.write(data))


class _Disposer:
    """Frees, on a thread of its own, what the raft thread lets go of after a snapshot.

    Measured on a leader under load (100 MB of state): dropping the 10,000-15,000 entries a
    snapshot covers took the raft thread 11-27 ms (their deallocation), and a rewrite of the
    journal 71-131 ms, 53-97 ms of it in closing the old, replaced file (the file system frees
    its blocks then). The raft thread waiting, the whole cluster waited: no append, no
    commit, no answer. Here an old file descriptor is closed (``os.close`` releases the GIL)
    and a list of dropped entries is emptied from its end in small steps, yielding the GIL
    between them, so that no step holds it for long."""

    _STEP: Final = 256

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[int | list[Any] | threading.Event] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def close_fd(self, fd: int) -> None:
        self._put(fd)

    def drop(self, items: list[Any]) -> None:
        """Take the only other reference to ``items`` and free them here."""
        if items:
            self._put(items)

    def _put(self, item: int | list[Any] | threading.Event) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="journal-disposer",
                                                daemon=True)
                self._thread.start()
        self._queue.put(item)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if isinstance(item, threading.Event):
                item.set()
            elif isinstance(item, int):
                try:
                    os.close(item)
                except OSError:
                    pass
            else:
                while item:
                    del item[-self._STEP:]
                    time.sleep(0)  # release the GIL between steps
            del item

    def wait(self, timeout: float = 10.0) -> bool:
        """(Tests) Wait until everything handed over so far is freed."""
        done = threading.Event()
        self._put(done)
        return done.wait(timeout)


disposer = _Disposer()


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encode(command: bytes, idx: int, term: int) -> bytes:
    body = struct.pack("<QQ", idx, term) + command
    crc = zlib.crc32(body)
    return struct.pack("<II", len(command), crc) + body


class DurableJournal(Journal):  # type: ignore[misc]
    """pysyncobj ``Journal`` with fdatasync-on-demand and a msgpack meta file."""

    def __init__(self, path: str, *, fsync: bool = True) -> None:
        self._path = path
        self._meta_path = path + ".meta"
        self._dir = os.path.dirname(os.path.abspath(path))
        self._fsync = fsync
        self._entries: list[Entry] = []
        self._ends: list[int] = []  # file offset after each entry
        self._pending = bytearray()
        self._needs_sync = False  # written to the file, not yet fdatasynced (under _io_lock)
        self._meta: dict[str, Any] = self._load_meta()
        self._meta_dirty = False
        # The ``synced`` mark as written in the meta file (under _meta_lock).
        mark = self._meta.get("synced")
        self._synced_on_disk = mark if isinstance(mark, int) else 0
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._alloc_end = 0  # the file's size: records, then zeros (under _io_lock)
        self._grow_failed = False  # the last attempt to grow it failed (a full disk)
        try:
            self._size = self._load_entries()
        except JournalError:
            os.close(self._fd)
            raise
        # File offset of the first entry held: entries a snapshot covers stay in the file (a
        # dead prefix) until it is large, see deleteEntriesTo.
        self._start = 0
        # _buf_lock guards the buffer (_pending, _last_idx, _size); _io_lock every write to the
        # files (the meta thread's and the raft thread's), so that a truncation or a rewrite
        # never races a write of older bytes.
        self._buf_lock = threading.Lock()
        self._io_lock = threading.Lock()
        self._meta_lock = threading.Lock()  # writes of the meta file
        self._last_idx = self._entries[-1][1] if self._entries else 0
        self.durable_index = self._last_idx
        self._wanted = threading.Condition(threading.Lock())
        self._want_meta = False
        self._closing = False
        self._syncer: threading.Thread | None = None

    # -- start-up -----------------------------------------------------------------------------

    def _load_meta(self) -> dict[str, Any]:
        """Term, vote and commit hint. Missing: a new member. Unreadable: refused, since it is
        written whole (temporary file, fsync, rename), so it is damage, and starting without
        the stored vote could grant a second vote in the same term."""
        try:
            with open(self._meta_path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return {}
        try:
            meta = msgpack.unpackb(raw, raw=False)
        except (ValueError, msgpack.ExtraData, msgpack.FormatError) as e:
            meta = e
        if not isinstance(meta, dict):
            raise JournalError(
                f"{self._meta_path} is unreadable ({len(raw)} bytes); it holds this member's "
                "term and vote. Restore it, or replace the member with an empty data "
                "directory (docs/raftstore.md, \"Durability\")")
        return meta

    def _load_entries(self) -> int:
        with open(self._path, "rb") as f:
            data = f.read()
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, crc, idx, term = _HEADER.unpack_from(data, offset)
            end = offset + _HEADER.size + length
            if end > len(data):
                break
            body = data[offset + 8 : end]
            if zlib.crc32(body) != crc:
                break
            self._entries.append((bytes(data[offset + _HEADER.size : end]), idx, term))
            self._ends.append(end)
            offset = end
        last = self._entries[-1][1] if self._entries else 0
        # Space grown ahead of the records (zeros) ends the records as the file's end does.
        zero_tail = data.count(0, offset) == len(data) - offset
        if last < self._synced_on_disk:
            # Entries the meta file recorded as on disk are not all readable: damaged, cut
            # (a file shortened at a record boundary, or emptied) or missing.
            what = (f"the record at offset {offset} is damaged (bad length or CRC; "
                    f"{len(data) - offset} bytes follow)" if not zero_tail
                    else f"it ends after {len(self._entries)} entries ({offset} bytes)")
            raise JournalError(
                f"{self._path}: {what}, but every entry up to index {self._synced_on_disk} "
                f"was on disk (the last readable one is {last or 'none'}). Refusing to start "
                "rather than drop acknowledged entries: restore the data directory from a "
                "backup, or replace the member with an empty data directory "
                "(docs/raftstore.md, \"Durability\")")
        self._alloc_end = len(data)
        if not zero_tail:
            # A torn tail from a crash mid-write: never acknowledged (see module doc).
            log.warning("raft journal %s: cutting a torn tail of %d bytes after entry %d",
                        self._path, len(data) - offset, last)
            os.ftruncate(self._fd, offset)
            os.fsync(self._fd)
            self._alloc_end = offset
        elif data and self._fsync:
            # After a process kill the file may hold writes that were never synced; they
            # are counted durable from here on (durable_index), so make them so.
            os.fdatasync(self._fd)
        return offset

    # -- durability ---------------------------------------------------------------------------

    def sync(self) -> None:
        """Make every entry added so far durable (one write + one fdatasync), now."""
        with self._io_lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        """Write the buffer and fdatasync (``_io_lock`` held)."""
        with self._buf_lock:
            data = bytes(self._pending)
            offset = self._size - len(data)
            last = self._last_idx
        try:
            if data:
                if offset + len(data) > self._alloc_end:
                    self._grow(offset + len(data))
                view = memoryview(data)
                while view:  # pwrite may write less than asked
                    written = os.pwrite(self._fd, view, offset)
                    view, offset = view[written:], offset + written
                self._needs_sync = True
            if self._needs_sync and self._fsync:
                started = time.monotonic()
                os.fdatasync(self._fd)
                took = time.monotonic() - started
                metrics.JOURNAL_SYNCS.inc()
                metrics.JOURNAL_SYNC_SECONDS.observe(took)
                if took > _SLOW_SYNC:
                    log.warning("slow fdatasync of the raft journal (%.3fs)", took)
        except OSError as e:
            # Neither the buffer nor the durable index moves: nothing is acknowledged.
            on_fatal("writing entries", e)
            raise
        with self._buf_lock:
            del self._pending[:len(data)]  # what was added meanwhile stays for the next write
        self._needs_sync = False
        if last > self.durable_index:
            self.durable_index = last

    def _grow(self, end: int) -> None:
        """Write zeros from the file's end to ``_GROW`` bytes past ``end`` (``_io_lock`` held;
        the fdatasync that follows makes them durable with the records written over them).
        A disk too full for that space is not an error: the records are appended as they
        were before the file was grown ahead, and only their own write failing stops the
        member."""
        new_end = end + _GROW
        pos = self._alloc_end
        try:
            while pos < new_end:
                pos += os.pwrite(self._fd, memoryview(_ZEROS)[: new_end - pos], pos)
        except OSError as e:
            if not self._grow_failed:
                log.warning("raft journal %s: cannot grow the file ahead of its records (%s); "
                            "appending instead", self._path, e)
            self._grow_failed = True
        else:
            self._grow_failed = False
        self._alloc_end = pos

    def _store_meta_soon(self) -> None:
        """Have the journal's thread sync the entries and then store the meta file, so that
        the raft thread does not wait for those fsyncs."""
        with self._wanted:
            self._want_meta = True
            if self._syncer is None:
                self._syncer = threading.Thread(
                    target=self._sync_loop, name="journal-sync", daemon=True
                )
                self._syncer.start()
            self._wanted.notify_all()

    def _sync_loop(self) -> None:
        while True:
            with self._wanted:
                while not (self._want_meta or self._closing):
                    self._wanted.wait()
                if self._closing:
                    return
                self._want_meta = False
            try:
                self.sync()
                with self._meta_lock:
                    self._store_meta()
            except Exception:  # the next attempt or the raft thread's own sync will tell
                log.exception("storing the journal meta file failed")
                time.sleep(0.05)

    @property
    def byte_size(self) -> int:
        """Bytes of the entries held (on disk or buffered), the dead prefix not counted."""
        return self._size - self._start

    @property
    def last_index(self) -> int:
        """The index of the last entry added (durable or not)."""
        return self._last_idx

    @property
    def dirty(self) -> bool:
        """Entries were added that are not known to be durable yet."""
        return self._last_idx > self.durable_index or bool(self._pending) or self._needs_sync

    # -- pysyncobj Journal interface ----------------------------------------------------------

    def add(self, command: bytes, idx: int, term: int) -> None:
        command = bytes(command)
        record = _encode(command, idx, term)
        self._entries.append((command, idx, term))
        with self._buf_lock:
            self._pending += record
            self._size += len(record)
            self._last_idx = idx
        self._ends.append(self._size)

    def clear(self) -> None:
        self._rewrite([])

    def deleteEntriesFrom(self, entryFrom: int) -> None:  # noqa: N802 (pysyncobj's name)
        if entryFrom >= len(self._entries):
            return
        # the mark goes down (durably) before the cut, and no meta write (the journal's
        # thread) comes between them: a crash leaves a mark only too low, never past the end
        with self._meta_lock, self._io_lock, self._buf_lock:
            self._lower_synced_mark(self._entries[entryFrom - 1][1] if entryFrom > 0 else 0)
            new_size = self._ends[entryFrom - 1] if entryFrom > 0 else 0
            if entryFrom == 0:
                self._start = 0  # the dead prefix goes too
            written = self._size - len(self._pending)
            del self._entries[entryFrom:]
            del self._ends[entryFrom:]
            if new_size >= written:
                # Only buffered entries go: trim the buffer, no disk work.
                del self._pending[new_size - written :]
            else:
                self._pending.clear()
                # Cut, not zeroed: no record past the cut may be read back.
                os.ftruncate(self._fd, new_size)
                self._alloc_end = new_size
                self._needs_sync = True
            self._size = new_size
            self._last_idx = self._entries[-1][1] if self._entries else 0
            self.durable_index = min(self.durable_index, self._last_idx)

    def deleteEntriesTo(self, entryTo: int) -> None:  # noqa: N802
        """Drop the entries a snapshot covers. They leave memory at once but stay in the file
        as a dead prefix until it is larger than ``_DEAD_PREFIX`` and than what follows it:
        rewriting the file (write, fsync, rename, fsync of the directory) after every snapshot
        blocked the raft thread for about 0.1 s under load. A restart reads the dead prefix
        back and replication.py cuts the journal at the snapshot's boundary again."""
        if entryTo <= 0:
            return
        # pysyncobj asks to drop everything up to the index of a snapshot taken at its last
        # applied entry. If its log was truncated below that index while the snapshot was
        # being written (an append whose prevLogIdx lies behind this log truncates it, already
        # applied entries included), entryTo is past the end. Those entries are all covered
        # by the snapshot; keep the last one, since pysyncobj reads ``log[0]`` everywhere (its
        # own journals slice, which empties the log and fails later instead of here).
        entryTo = min(entryTo, len(self._entries) - 1)
        if entryTo <= 0:
            return
        start = self._ends[entryTo - 1]
        if start >= _DEAD_PREFIX and start > 2 * (self._size - start):
            self._rewrite(self._entries[entryTo:])
            return
        with self._buf_lock:
            # Copies of the references only: the entries are freed on the disposer's thread.
            dropped: list[Any] = self._entries[:entryTo]
            dropped.extend(self._ends[:entryTo])
            del self._entries[:entryTo]
            del self._ends[:entryTo]
            self._start = start
        disposer.drop(dropped)

    def _rewrite(self, entries: list[Entry]) -> None:
        with self._meta_lock, self._io_lock, self._buf_lock:
            self._lower_synced_mark(entries[-1][1] if entries else 0)
            self._rewrite_locked(entries)

    def _rewrite_locked(self, entries: list[Entry]) -> None:
        tmp = self._path + ".tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        ends: list[int] = []
        size = 0
        chunks = []
        for command, idx, term in entries:
            record = _encode(command, idx, term)
            chunks.append(record)
            size += len(record)
            ends.append(size)
        try:
            view = memoryview(b"".join(chunks))
            while view:  # write may write less than asked (a nearly full disk)
                view = view[os.write(fd, view):]
            if self._fsync:
                os.fsync(fd)
        except OSError as e:
            os.close(fd)
            on_fatal("rewriting the journal", e)
            raise
        os.replace(tmp, self._path)
        if self._fsync:
            fsync_dir(self._dir)
        # The old file is closed and the old entries freed on the disposer's thread: closing
        # the last descriptor of a large replaced file makes the file system free it, which
        # took tens of milliseconds of the raft thread.
        disposer.close_fd(self._fd)
        self._fd = fd
        old_entries, old_ends = self._entries, self._ends
        self._entries = list(entries)
        self._ends = ends
        disposer.drop(old_entries)
        disposer.drop(old_ends)
        self._size = size
        self._alloc_end = size
        self._start = 0
        self._pending.clear()
        self._needs_sync = False
        self._last_idx = self._entries[-1][1] if self._entries else 0
        self.durable_index = self._last_idx

    def _lower_synced_mark(self, new_last: int) -> None:
        """Before the log is cut to end at ``new_last`` (``_meta_lock`` held, and the file
        locks: lock order meta, io, buf): if the meta file's ``synced`` mark is past it,
        rewrite the mark now, so that neither the cut nor a torn write of the entries
        appended next is taken for damage. Rare: a conflict on a follower, or a snapshot
        received from the leader."""
        if self._synced_on_disk > new_last:
            self._store_meta(synced_cap=new_last)

    def __getitem__(self, item: int | slice) -> Any:
        return self._entries[item]

    def __len__(self) -> int:
        return len(self._entries)

    def _destroy(self) -> None:
        if self._fd < 0:
            return
        with self._wanted:
            self._closing = True
            self._wanted.notify_all()
        if self._syncer is not None:
            self._syncer.join(timeout=10)
        with self._io_lock, self._meta_lock:
            self._flush_locked()
            self._store_meta()
            os.close(self._fd)
            self._fd = -1

    def setRaftCommitIndex(self, raftCommitIndex: int) -> None:  # noqa: N802,N803
        if self._meta.get("commit") != raftCommitIndex:
            self._meta["commit"] = raftCommitIndex
            self._meta_dirty = True

    def getRaftCommitIndex(self) -> int:  # noqa: N802
        return int(self._meta.get("commit", 1))

    def setCurrentTerm(self, term: int, votedForNodeId: str | None) -> None:  # noqa: N802,N803
        # Raft: term and vote must be durable before any message reflecting them is sent.
        with self._meta_lock:
            self._meta["term"] = term
            self._meta["vote"] = votedForNodeId
            self._store_meta()

    def getCurrentTerm(self) -> int:  # noqa: N802
        return int(self._meta.get("term", 0))

    def set_flag(self, name: str, value: bool) -> None:
        """Store a member state flag in the meta file, durably, now."""
        with self._meta_lock:
            if bool(self._meta.get(name)) != value:
                self._meta[name] = value
                self._store_meta()

    def get_flag(self, name: str) -> bool:
        return self._meta.get(name) is True

    def getVotedForNodeId(self) -> str | None:  # noqa: N802
        vote = self._meta.get("vote")
        return vote if isinstance(vote, str) else None

    def onOneSecondTimer(self) -> None:  # noqa: N802
        if self._meta_dirty or self._last_idx > self._synced_on_disk:
            # The commit index is a hint (the leader re-sends it), stored by the journal's
            # thread right after syncing the entries, so never ahead of the entries on disk;
            # the raft thread does not wait for these fsyncs.
            self._store_meta_soon()

    def _store_meta(self, synced_cap: int | None = None) -> None:
        """Write term, vote, commit hint and synced mark durably (``_meta_lock`` held);
        ``synced_cap`` caps the mark (a cut about to happen)."""
        tmp = self._meta_path + ".tmp"
        meta = dict(self._meta)
        if isinstance(meta.get("commit"), int):
            # Never ahead of the entries on disk (the hint is replayed at start-up).
            meta["commit"] = max(1, min(meta["commit"], self.durable_index))
        # Read under _meta_lock: a cut lowers these before it takes that lock to rewrite
        # the mark, so the mark written here is never past the log's end for long.
        synced = min(self.durable_index, self._last_idx)
        if synced_cap is not None:
            synced = min(synced, synced_cap)
        meta["synced"] = synced
        data = msgpack.packb(meta, use_bin_type=True)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                if self._fsync:
                    os.fsync(f.fileno())
            os.replace(tmp, self._meta_path)
            if self._fsync:
                fsync_dir(self._dir)
        except OSError as e:
            # A term or vote not on disk must not be acted on (Raft), so the member stops.
            on_fatal("storing term and vote", e)
            raise
        self._meta_dirty = False
        self._synced_on_disk = synced
