"""The embedded backend: raftstore's MVCC state machine in this process, no network hop.

``open_embedded(data_dir)`` gives an ``Etcd3Store`` (the same storage semantics as over gRPC)
whose ``KVClient`` is ``LocalKVClient``: reads go straight to the state machine, writes go
through ``CommandLog``.

Durability (``CommandLog``): a write is an etcd command (raftstore/applier.py's msgpack
envelope) appended to ``<data_dir>/journal`` (raftstore/journal.py: length, CRC, index) and
fdatasynced *before* it is applied and acknowledged. Writes that arrive while a sync is in
flight share the next one (group commit). Once the journal holds ``SNAPSHOT_ENTRIES``
commands and is as big as the last snapshot (or 256 MiB), the state is
captured (a cheap copy-on-write view), written to ``<data_dir>/snapshot`` in a thread
(temporary file, fsync, rename, fsync of the directory), and the journal entries it covers are
dropped. Start-up loads the snapshot and replays the journal entries after its index; a torn
journal tail (crash mid-write) was never acknowledged and is cut off, but damage to entries
that the journal had recorded as synced refuses the start (``JournalError``). What survives:
every acknowledged write, across a process kill and a machine crash (with ``fsync=True``).

Threads: everything runs on the event loop's thread except the fdatasync and the snapshot
write. Applying a command calls the MVCC watchers' callbacks synchronously (loop thread,
state lock held): ``LocalWatch`` only queues the events and wakes its reader.
"""

from __future__ import annotations

import asyncio
import collections
import fcntl
import logging
import os
import struct
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Final, cast

from raftstore.api.convert import event_to_pb
from raftstore.api.lease import new_lease_id
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.server import LEASE_CHECK_INTERVAL, MAX_REVOKES_PER_CHECK
from raftstore.applier import (
    EtcdStateMachine,
    encode_compact,
    encode_lease_grant,
    encode_lease_revoke,
    encode_txn,
    is_txn_readonly,
)
from raftstore.errors import COMPACTED as ETCD_COMPACTED
from raftstore.errors import FUTURE_REV as ETCD_FUTURE_REV
from raftstore.errors import MAX_REQUEST_BYTES, REQUEST_TOO_LARGE, EtcdError
from raftstore.journal import CrcWriter, DurableJournal, JournalError, fsync_dir
from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.types import (
    CompactedError,
    Event,
    FutureRevError,
    KeyValue,
    MVCCError,
    RangeOptions,
)
from storage.etcd3.kvclient import (
    COMPACTED,
    FUTURE,
    OTHER,
    TOO_LARGE_REQUEST,
    UNAVAILABLE,
    KVError,
    RangeReply,
)
from storage.etcd3.store import Etcd3Store

log = logging.getLogger(__name__)

SNAPSHOT_ENTRIES: Final = 10_000  # at least this many commands between snapshots
SNAPSHOT_BYTES: Final = 256 * 1024 * 1024  # a journal this big always gets a snapshot
MAX_PENDING: Final = 10_000  # queued responses per watch before it is cancelled as slow
_SNAP_MAGIC: Final = b"PLATSNP1"  # no trailer (written before 2026-11-23)
_SNAP_MAGIC_CRC: Final = b"PLATSNP2"  # with a CRC-32 trailer of every byte before it
_SNAP_HEAD: Final = struct.Struct("<8sQ")  # magic, journal index covered
_SNAP_TRAILER: Final = struct.Struct("<I")


def _kv_error(exc: BaseException) -> KVError:
    if isinstance(exc, CompactedError):
        return KVError(COMPACTED, "mvcc: required revision has been compacted",
                       compact_revision=exc.compact_revision)
    if isinstance(exc, FutureRevError):
        return KVError(FUTURE, "mvcc: required revision is a future revision")
    if isinstance(exc, EtcdError):
        if exc.spec == ETCD_COMPACTED:
            return KVError(COMPACTED, exc.message)
        if exc.spec == ETCD_FUTURE_REV:
            return KVError(FUTURE, exc.message)
        return KVError(OTHER, exc.message)
    return KVError(OTHER, str(exc))


class CommandLog:
    """Journal-then-apply with group commit and periodic snapshots (see module doc)."""

    def __init__(self, data_dir: str, state: EtcdStateMachine, *, fsync: bool = True,
                 snapshot_entries: int = SNAPSHOT_ENTRIES) -> None:
        created = not os.path.isdir(data_dir)
        os.makedirs(data_dir, exist_ok=True)
        self._dir = data_dir
        self._state = state
        self._fsync = fsync
        self._snapshot_entries = snapshot_entries
        self._lock_fd = os.open(os.path.join(data_dir, "LOCK"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_fd)
            raise RuntimeError(f"data directory {data_dir} is in use by another process") from None
        try:
            self._open(data_dir, created)
        except BaseException:
            os.close(self._lock_fd)  # releases the lock: the directory is not in use
            raise
        self._pending: list[tuple[bytes, asyncio.Future[object]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._snapshotting: asyncio.Task[None] | None = None
        self._truncate_to = 0
        self._broken: str = ""
        self._closed = False
        self._marked = time.monotonic()
        self._mark_timer: asyncio.TimerHandle | None = None

    # -- start-up ---------------------------------------------------------------------

    def _open(self, data_dir: str, created: bool) -> None:
        self._snap_path = os.path.join(data_dir, "snapshot")
        self._index = self._load_snapshot()
        self._snap_index = self._index
        self._snap_bytes = self._snapshot_size()
        journal_path = os.path.join(data_dir, "journal")
        fresh = not os.path.exists(journal_path)
        self._journal = DurableJournal(journal_path, fsync=self._fsync)
        if self._fsync and (fresh or created):
            # A synced file is only durable once its directory entry is.
            fsync_dir(data_dir)
            if created:
                fsync_dir(os.path.dirname(os.path.abspath(data_dir)))
        try:
            self._replay()
        except BaseException:
            self._journal._destroy()  # its file and pipes: the caller may try again
            raise

    def _load_snapshot(self) -> int:
        """The snapshot's state and the journal index it covers (0: none). A snapshot that
        is cut short or damaged (its CRC-32 trailer; snapshots written before 2026-11-23
        have none) refuses the start with the file's name, rather than serving wrong data."""
        try:
            with open(self._snap_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return 0
        except IsADirectoryError:
            raise JournalError(f"{self._snap_path} is a directory, not a snapshot") from None
        if len(data) < _SNAP_HEAD.size:
            raise JournalError(f"{self._snap_path}: cut short ({len(data)} bytes): restore "
                               "the data directory from a backup")
        magic, index = _SNAP_HEAD.unpack_from(data, 0)
        end = len(data)
        if magic == _SNAP_MAGIC_CRC:
            end -= _SNAP_TRAILER.size
            if end < _SNAP_HEAD.size or \
                    _SNAP_TRAILER.unpack_from(data, end)[0] != zlib.crc32(data[:end]):
                raise JournalError(f"{self._snap_path}: checksum mismatch (damaged or cut "
                                   "short): restore the data directory from a backup")
        elif magic != _SNAP_MAGIC:
            raise JournalError(f"{self._snap_path}: not a snapshot of this store")
        try:
            self._state.restore(data[_SNAP_HEAD.size:end])
        except Exception as e:  # noqa: BLE001 - any failure to read it is damage
            raise JournalError(f"{self._snap_path}: cannot be loaded ({e}): restore the "
                               "data directory from a backup") from None
        return int(index)

    def _snapshot_size(self) -> int:
        try:
            return os.path.getsize(self._snap_path)
        except FileNotFoundError:
            return 0

    def _replay(self) -> None:
        replayed = 0
        covered = 0
        for command, idx, _term in self._journal[:]:
            if idx <= self._index:
                # covered by the snapshot: the journal's dead prefix, or a crash before the
                # journal was cut
                covered += 1
                continue
            if idx != self._index + 1:
                # entries between the snapshot (or the previous entry) and this one are
                # nowhere: a missing snapshot behind a compacted journal, or lost records
                what = (f"{self._snap_path} is missing" if not os.path.exists(self._snap_path)
                        else f"entries {self._index + 1} to {idx - 1} are missing")
                raise JournalError(
                    f"{what} but the journal goes on at entry {idx}; restore the data "
                    "directory from a backup rather than start without those writes")
            self._state.apply(command)
            self._index = idx
            replayed += 1
        if covered:
            self._journal.deleteEntriesTo(covered)
        if replayed:
            log.info("embedded store: replayed %d journal entries (index %d)", replayed,
                     self._index)

    # -- proposals --------------------------------------------------------------------

    async def propose(self, command: bytes) -> object:
        if self._broken:
            raise KVError(UNAVAILABLE, self._broken)
        if self._closed:
            raise KVError(UNAVAILABLE, "embedded store is closed")
        fut: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._pending.append((command, fut))
        self._kick()
        return await asyncio.shield(fut)

    def _kick(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._pending or self._truncate_to:
            if self._truncate_to:
                await self._truncate()
            if not self._pending:
                break
            batch, self._pending = self._pending, []
            for command, _ in batch:
                self._index += 1
                self._journal.add(command, self._index, 1)
            try:
                await asyncio.to_thread(self._journal.sync)
            except OSError as exc:
                # (The journal stops the process on a write or sync error, as a raftstore
                # member stops: journal.on_fatal. Where that is replaced, as in tests, the
                # journal's state on disk is unknown: refuse every later write.)
                self._broken = f"embedded store: journal write failed: {exc}"
                log.error(self._broken)
                for _, fut in batch + self._pending:
                    if not fut.done():
                        fut.set_exception(KVError(UNAVAILABLE, self._broken))
                self._pending = []
                return
            for command, fut in batch:
                result = self._state.apply(command)
                if not fut.done():
                    fut.set_result(result)
            self._mark_soon()
            self._maybe_snapshot()

    def _mark_soon(self) -> None:
        """Record in the journal's meta file how far it is synced (a thread of the journal's
        writes it), at most once a second and at least a second after the last write, so
        that damage below that point is refused at start rather than read as a torn tail
        (raftstore/journal.py)."""
        wait = self._marked + 1.0 - time.monotonic()
        if wait <= 0:
            self._mark()
        elif self._mark_timer is None:
            self._mark_timer = asyncio.get_running_loop().call_later(wait, self._mark)

    def _mark(self) -> None:
        self._mark_timer = None
        if not self._closed:
            self._marked = time.monotonic()
            self._journal.onOneSecondTimer()

    def _maybe_snapshot(self) -> None:
        if self._snapshotting is not None and not self._snapshotting.done():
            return
        # Snapshot once the journal is both long (entries) and at least as big as the last
        # snapshot: replay stays cheap and snapshot writes stay within ~2x the write traffic
        # however large the state grows.
        if self._index - self._snap_index < self._snapshot_entries:
            return
        if self._journal.byte_size < min(self._snap_bytes, SNAPSHOT_BYTES):
            return
        writer = self._state.snapshot_writer()
        self._snapshotting = asyncio.get_running_loop().create_task(
            self._snapshot(writer, self._index)
        )

    async def _snapshot(self, writer: Callable[[BinaryIO], object], index: int) -> None:
        try:
            await asyncio.to_thread(self._write_snapshot, writer, index)
        except OSError:
            log.exception("embedded store: snapshot failed (the journal keeps everything)")
            return
        self._snap_index = index
        self._snap_bytes = self._snapshot_size()
        self._truncate_to = index
        self._kick()

    def _write_snapshot(self, writer: Callable[[BinaryIO], object], index: int) -> None:
        tmp = self._snap_path + ".tmp"
        with open(tmp, "wb") as f:
            summing = CrcWriter(f)
            summing.write(_SNAP_HEAD.pack(_SNAP_MAGIC_CRC, index))
            writer(cast("BinaryIO", summing))
            f.write(_SNAP_TRAILER.pack(summing.crc))
            f.flush()
            if self._fsync:
                os.fsync(f.fileno())
        os.replace(tmp, self._snap_path)
        if self._fsync:
            fsync_dir(self._dir)

    async def _truncate(self) -> None:
        upto, self._truncate_to = self._truncate_to, 0
        n = 0
        for _command, idx, _term in self._journal[:]:
            if idx > upto:
                break
            n += 1
        if n:
            await asyncio.to_thread(self._journal.deleteEntriesTo, n)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._mark_timer is not None:
            self._mark_timer.cancel()  # _destroy below stores the mark anyway
            self._mark_timer = None
        # A finishing snapshot starts one more flush (the journal cut): wait until idle.
        while True:
            tasks = (self._flusher, self._snapshotting)
            busy = [t for t in tasks if t is not None and not t.done()]
            if not busy:
                break
            await asyncio.gather(*busy, return_exceptions=True)
        self._journal._destroy()
        os.close(self._lock_fd)


class LocalWatch:
    """``KVWatch`` over the MVCC watchable store (events arrive in the applying call)."""

    def __init__(self, state: EtcdStateMachine, req: pb.WatchCreateRequest) -> None:
        self._state = state
        self._prev_kv = req.prev_kv
        self._queue: collections.deque[pb.WatchResponse] = collections.deque()
        self._wake = asyncio.Event()
        self._closed = False
        self._wid = -1
        self.created_revision = 0
        try:
            self._wid, history, rev = state.watch(
                req.key or b"\0", req.range_end or None, req.start_revision,
                self._on_events, self._on_compacted,
            )
        except CompactedError as exc:
            self.created_revision = state.revision
            self._on_compacted(exc.compact_revision)
            return
        self.created_revision = rev
        for i in range(0, len(history), 1000):
            self._push(self._events_resp(history[i:i + 1000]))

    def _events_resp(self, events: list[Event]) -> pb.WatchResponse:
        resp = pb.WatchResponse(events=[event_to_pb(e, prev_kv=self._prev_kv) for e in events])
        resp.header.revision = events[-1].kv.mod_revision
        return resp

    def _push(self, resp: pb.WatchResponse) -> None:
        self._queue.append(resp)
        self._wake.set()

    def _on_events(self, events: list[Event]) -> None:
        if self._closed:
            return
        if len(self._queue) >= MAX_PENDING:
            # Never block the writer, never drop silently: end this watch (the client
            # re-watches from its last revision).
            self._cancel_store_watch()
            resp = pb.WatchResponse(canceled=True, cancel_reason="slow consumer")
            resp.header.revision = events[-1].kv.mod_revision
            self._push(resp)
            return
        self._push(self._events_resp(events))

    def _on_compacted(self, compact_rev: int) -> None:
        resp = pb.WatchResponse(canceled=True, compact_revision=compact_rev)
        resp.header.revision = self._state.store.rev
        self._cancel_store_watch()
        self._push(resp)

    def _cancel_store_watch(self) -> None:
        if self._wid >= 0:
            self._state.cancel_watch(self._wid)
            self._wid = -1

    def __aiter__(self) -> AsyncIterator[pb.WatchResponse]:
        return self._responses()

    async def _responses(self) -> AsyncIterator[pb.WatchResponse]:
        while not self._closed:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            resp = self._queue.popleft()
            yield resp
            if resp.canceled:
                self.close()
                return

    async def request_progress(self) -> None:
        if self._closed:
            return
        # Every event at or below the current revision is already queued (applies run on
        # this thread), so the progress response is ordered after them.
        resp = pb.WatchResponse()
        resp.header.revision = self._state.revision
        self._push(resp)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._cancel_store_watch()
        self._wake.set()


@dataclass(frozen=True, slots=True)
class LocalHeader:
    revision: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalRange:
    """``RangeReply`` in process."""

    kvs: list[KeyValue]
    more: bool
    count: int
    header: LocalHeader


class LocalKVClient:
    """``KVClient`` over an in-process ``EtcdStateMachine`` and its ``CommandLog``."""

    def __init__(self, state: EtcdStateMachine, commands: CommandLog) -> None:
        self.state = state
        self.commands = commands
        self._expiry: asyncio.Task[None] | None = None

    async def _propose(self, command: bytes) -> Any:
        if len(command) > MAX_REQUEST_BYTES:
            # The same limit as over gRPC (etcd's --max-request-bytes), so backends agree.
            raise KVError(TOO_LARGE_REQUEST, REQUEST_TOO_LARGE.message)
        result = await self.commands.propose(command)
        if isinstance(result, BaseException):
            raise _kv_error(result)
        return result

    async def range(self, req: pb.RangeRequest) -> RangeReply:
        if req.sort_order or req.sort_target or req.keys_only or req.min_mod_revision \
                or req.max_mod_revision or req.min_create_revision or req.max_create_revision:
            try:
                return self.state.range(req)  # the general path (the store never asks it)
            except MVCCError as exc:
                raise _kv_error(exc) from None
        # The store's ranges, without building protobuf messages: MVCC KeyValues have the
        # attributes the store reads (etcd's Range: one extra key tells whether more remain).
        limit = req.limit
        opts = RangeOptions(limit=limit + 1 if limit > 0 else 0, rev=max(req.revision, 0),
                            count_only=req.count_only)
        try:
            with self.state.lock:
                rr = self.state.store.range(req.key, req.range_end or None, opts)
        except MVCCError as exc:
            raise _kv_error(exc) from None
        kvs = rr.kvs
        more = 0 < limit < len(kvs)
        if more:
            kvs = kvs[:limit]
        return LocalRange(kvs=kvs, more=more, count=rr.count, header=LocalHeader(rr.rev))

    async def txn(self, req: pb.TxnRequest) -> pb.TxnResponse:
        if is_txn_readonly(req):
            try:
                return self.state.txn_readonly(req)
            except MVCCError as exc:
                raise _kv_error(exc) from None
        resp: pb.TxnResponse = await self._propose(encode_txn(req))
        return resp

    async def compact(self, revision: int) -> None:
        await self._propose(encode_compact(pb.CompactionRequest(revision=revision)))

    async def compacted_revision(self) -> int:
        return self.state.read(lambda s: s.compact_rev)

    async def watch(self, req: pb.WatchCreateRequest) -> LocalWatch:
        return LocalWatch(self.state, req)

    async def progress_supported(self) -> bool:
        return True  # applies and progress responses run on one thread, in order

    async def lease_grant(self, ttl: int) -> int:
        lease_id = new_lease_id()
        await self._propose(encode_lease_grant(pb.LeaseGrantRequest(ID=lease_id, TTL=ttl)))
        if self._expiry is None:
            self.start_lease_expiry()
        return lease_id

    def start_lease_expiry(self) -> None:
        """Revoke expired leases (and so delete their keys), as raftstore's leader does;
        this process is the embedded store's only member."""
        if self._expiry is None or self._expiry.done():
            self._expiry = asyncio.get_running_loop().create_task(self._expire_leases())

    async def _expire_leases(self) -> None:
        while True:
            await asyncio.sleep(LEASE_CHECK_INTERVAL)
            try:
                expired = self.state.read(lambda s: s.lessor.expired(self.state.now()))
                for lease_id in expired[:MAX_REVOKES_PER_CHECK]:
                    # a lease revoked meanwhile answers "not found": harmless
                    await self.commands.propose(
                        encode_lease_revoke(pb.LeaseRevokeRequest(ID=lease_id)))
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep expiring leases
                log.exception("embedded store: lease expiry failed")

    async def close(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        await self.commands.close()


async def open_embedded(
    data_dir: str,
    *,
    fsync: bool = True,
    snapshot_entries: int = SNAPSHOT_ENTRIES,
    too_large_wait: float = 3.0,
) -> Etcd3Store:
    """The embedded store persisted under ``data_dir`` (created if missing). Loading a large
    snapshot and journal runs in a thread so the loop stays responsive."""
    state = EtcdStateMachine(KVStore())
    commands = await asyncio.to_thread(
        CommandLog, data_dir, state, fsync=fsync, snapshot_entries=snapshot_entries
    )
    client = LocalKVClient(state, commands)
    if state.read(lambda s: s.lessor.leases()):
        client.start_lease_expiry()  # leases restored from the journal or snapshot
    return Etcd3Store(client, too_large_wait=too_large_wait)
