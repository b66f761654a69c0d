"""etcd's Watch service: many watches multiplexed on one bidirectional stream.

Threads and ordering. The store calls a watcher's callback in the applying (raft) thread,
with the state lock held, once per committed transaction. The callback only filters and
hands the events to the stream's event loop with ``call_soon_threadsafe``; the loop turns
them into responses and appends them to the stream's outgoing queue. Because the loop runs
callbacks in the order they were scheduled:

- a watch's "created" response is queued (synchronously, right after registering under the
  lock) before any of its events;
- a progress response reads the revision under the lock and then queues itself with
  ``call_soon``, i.e. after every event of every revision up to it: no event at or below a
  progress revision can follow it on the stream.

Slow consumers. Each watch may have at most ``MAX_PENDING`` event responses queued and not
yet written to the client. When one more arrives the watch falls behind, as an etcd watcher
whose channel is full becomes a victim: it queues nothing more and remembers the revision of
the first event it skipped. Once the client has taken every response queued for it, the watch
catches up from the store's history (or, if that history was compacted meanwhile, ends with
the compacted response, as etcd's do). Writers never block, memory stays bounded, and no event
is dropped. A member that replays thousands of log entries after a partition heals so sends
its watches everything they missed, as etcd does, where it used to cancel them.

Progress. A progress response claims that every event up to its revision was sent, so no
watch may be behind when one is queued: a WatchProgressRequest that arrives then is answered
once the stream's watches have caught up (etcd 3.5's deferred progress), and progress_notify
skips a watch that is behind (etcd notifies only synced watchers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import grpc

from raftstore import metrics
from raftstore.api.common import Api, streaming
from raftstore.api.convert import event_to_pb
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.errors import GRPC_OVERHEAD_BYTES, MAX_REQUEST_BYTES
from raftstore.mvcc.types import CompactedError, Event, EventType

log = logging.getLogger(__name__)

MAX_PENDING: Final = 1024  # event responses queued per watch before it falls behind
HISTORY_BATCH_REVS: Final = 1000  # etcd's watchBatchMaxRevs
# etcd fragments at its server's maxRequestBytes, which is MaxRequestBytes plus
# grpcOverheadBytes (512 KiB): 2 MiB by default, not 1.5 MiB.
FRAGMENT_BYTES: Final = MAX_REQUEST_BYTES + GRPC_OVERHEAD_BYTES
PROGRESS_INTERVAL: float = 600.0  # etcd's progressReportInterval (tests lower it)

DUPLICATE_ID_REASON: Final = "mvcc: duplicate watch ID provided on the WatchStream"
EMPTY_RANGE_REASON: Final = "mvcc: watcher range is empty"

_Create = pb.WatchCreateRequest



class _Mailbox:
    """Calls handed from the raft thread to one event loop, in order, with one loop wake-up
    per burst instead of one per call (100 watchers of one key made 100 wake-ups per write).

    Ordering: while the mailbox is non-empty a drain is scheduled on the loop, so anything the
    loop schedules later with ``call_soon`` runs after every call posted before it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.calls: list[tuple[Callable[..., Any], tuple[object, ...]]] = []

    def post(self, fn: object, args: tuple[object, ...]) -> None:
        with self.lock:
            self.calls.append((fn, args))  # type: ignore[arg-type]
            if len(self.calls) > 1:
                return
        try:
            self.loop.call_soon_threadsafe(self.drain)
        except RuntimeError:
            pass  # the loop is closed: its streams are gone

    def drain(self) -> None:
        with self.lock:
            calls, self.calls = self.calls, []
        for fn, args in calls:
            try:
                fn(*args)
            except Exception:  # one stream's failure must not drop other streams' events
                log.exception("watch delivery failed")


_MAILBOXES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Mailbox] = (
    weakref.WeakKeyDictionary()
)
_MAILBOXES_LOCK: Final = threading.Lock()


def _mailbox(loop: asyncio.AbstractEventLoop) -> _Mailbox:
    box = _MAILBOXES.get(loop)
    if box is None:
        with _MAILBOXES_LOCK:
            box = _MAILBOXES.get(loop)
            if box is None:
                box = _MAILBOXES[loop] = _Mailbox(loop)
    return box


@dataclass(slots=True, eq=False)
class _Watch:
    id: int
    key: bytes
    end: bytes | None
    prev_kv: bool
    no_put: bool
    no_delete: bool
    progress_notify: bool
    fragment: bool
    store_id: int = -1
    # guarded by the stream's lock: event responses queued; whether the watch fell behind,
    # and the revision it resumes from (the first one it skipped)
    pending: int = 0
    behind: bool = False
    resume_rev: int = 0
    canceled: bool = False
    sent_since_tick: bool = False


@dataclass(slots=True)
class _Item:
    resp: pb.WatchResponse | None  # None: the request reader failed with ``error``
    watch: _Watch | None = None
    counted: bool = False  # an event response counted in watch.pending
    error: BaseException | None = None


# Live event responses of one watch waiting together in a stream's queue are sent as one
# response (as etcd batches a watcher's pending revisions), up to this many events.
MAX_EVENTS_MERGED: Final = 256


@dataclass(eq=False)
class _Stream:
    api: Api
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue[_Item] = field(default_factory=asyncio.Queue)
    watches: dict[int, _Watch] = field(default_factory=dict)
    next_id: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False
    deferred_progress: bool = False  # a progress request waits for watches behind

    # -- requests (event loop) ---------------------------------------------------------

    def create(self, req: pb.WatchCreateRequest) -> None:
        key = req.key or b"\0"  # etcd: an empty key is the smallest key
        end = req.range_end or None
        filters = set(req.filters)
        if end is not None and end != b"\0" and key >= end:
            # etcd's watchStream.Watch refuses an empty range before it picks an id (so the
            # next watch still gets the id this one would have had).
            self._put(self._resp(-1, self.api.state.revision, created=True, canceled=True,
                                 cancel_reason=EMPTY_RANGE_REASON))
            return
        if req.watch_id != 0:
            wid = req.watch_id
            if wid in self.watches:
                self._put(self._resp(-1, self.api.state.revision, created=True, canceled=True,
                                     cancel_reason=DUPLICATE_ID_REASON))
                return
        else:
            while self.next_id in self.watches:
                self.next_id += 1
            wid = self.next_id
            self.next_id += 1
        w = _Watch(
            id=wid, key=key, end=end, prev_kv=req.prev_kv, no_put=_Create.NOPUT in filters,
            no_delete=_Create.NODELETE in filters, progress_notify=req.progress_notify,
            fragment=req.fragment,
        )
        self.watches[wid] = w
        try:
            w.store_id, history, rev = self.api.state.watch(
                key, end, req.start_revision,
                lambda events: self._on_events(w, events),
                lambda compact_rev: self._threadsafe(self._compacted, w, compact_rev),
            )
        except CompactedError as exc:
            rev = self.api.state.revision
            self._put(self._resp(wid, rev, created=True))
            self._compacted(w, exc.compact_revision)
            return
        metrics.WATCHERS.inc()
        self._put(self._resp(wid, rev, created=True))
        for batch in _history_batches(self._filter(w, history)):
            self._put(self._events_resp(w, batch, rev), w)

    def cancel(self, wid: int) -> None:
        w = self.watches.pop(wid, None)
        if w is None:
            return  # etcd answers nothing for an unknown id
        self._drop(w)
        self._put(self._resp(wid, self.api.state.revision, canceled=True))
        if self.deferred_progress:
            self.progress_all()  # it may have waited for this watch

    def progress_all(self) -> None:
        """WatchProgressRequest: one response with watch_id -1 (3.4: for every watch), or,
        while a watch is behind, one once they have all caught up."""
        # The revision first, then the check: a watch that fell behind on an event at or
        # below ``rev`` did so under the state lock, before ``rev`` could be read.
        rev = self.api.state.revision  # read under the lock: see the module docstring
        if self._any_behind():
            self.deferred_progress = True
            return
        self.deferred_progress = False
        self.loop.call_soon(self._put, self._resp(-1, rev))

    def progress_tick(self) -> None:
        """progress_notify: watches that sent nothing since the last tick, and are not
        behind, get an empty response carrying the current revision."""
        rev = self.api.state.revision  # before the checks, as in progress_all
        with self.lock:
            due = [w for w in self.watches.values() if w.progress_notify and not w.canceled
                   and not w.sent_since_tick and not w.behind]
        for w in self.watches.values():
            w.sent_since_tick = False
        for w in due:
            self.loop.call_soon(self._progress_one, w, rev)

    def _any_behind(self) -> bool:
        with self.lock:
            return any(w.behind for w in self.watches.values())

    def _progress_one(self, w: _Watch, rev: int) -> None:
        if not w.canceled:
            self._put(self._resp(w.id, rev), w)

    def close(self) -> None:
        self.closed = True
        for w in list(self.watches.values()):
            self._drop(w)
        self.watches.clear()

    # -- store callbacks (applying thread, state lock held: never block) ------------------

    def _on_events(self, w: _Watch, events: list[Event]) -> None:
        if w.canceled:
            return
        evs = self._filter(w, events)
        if not evs:
            return
        with self.lock:
            if w.behind:
                return  # _catch_up reads these from history
            if w.pending >= MAX_PENDING:
                # pending only falls from here, and _taken starts the catch-up at zero
                w.behind = True
                w.resume_rev = evs[0].kv.mod_revision
                return
            w.pending += 1
        self._threadsafe(self._deliver, w, evs)

    def _threadsafe(self, fn: object, *args: object) -> None:
        _mailbox(self.loop).post(fn, args)

    # -- event loop side of the callbacks ----------------------------------------------

    def _deliver(self, w: _Watch, evs: list[Event]) -> None:
        if w.canceled:
            self._taken(w)
            return
        self._put(self._events_resp(w, evs), w, counted=True)

    def _taken(self, w: _Watch) -> None:
        """One of ``w``'s counted responses left the queue (or was dropped)."""
        with self.lock:
            w.pending -= 1
            due = w.behind and w.pending == 0
        if due and not w.canceled:
            # Nothing of w's is left in the queue or the mailbox: history may follow.
            self.loop.call_soon(self._catch_up, w)

    def _catch_up(self, w: _Watch) -> None:
        """Move a watch that fell behind to a fresh store watcher that starts at the first
        revision it skipped: the history up to now is queued at once, and later events
        arrive live, as when a watch is created with a start revision."""
        if w.canceled or self.watches.get(w.id) is not w:
            return
        state = self.api.state
        # The old store watcher goes first, so no event of it can arrive once ``behind``
        # is cleared; the new one's history covers everything since ``resume_rev``.
        state.cancel_watch(w.store_id)
        w.store_id = -1
        metrics.WATCHERS.dec()
        with self.lock:
            w.behind = False
        log.info("watch %d fell behind; catching up from revision %d", w.id, w.resume_rev)
        try:
            w.store_id, history, rev = state.watch(
                w.key, w.end, w.resume_rev,
                lambda events: self._on_events(w, events),
                lambda compact_rev: self._threadsafe(self._compacted, w, compact_rev),
            )
        except CompactedError as exc:
            self._compacted(w, exc.compact_revision)
        else:
            metrics.WATCHERS.inc()
            for batch in _history_batches(self._filter(w, history)):
                self._put(self._events_resp(w, batch, rev), w)
        if self.deferred_progress:
            self.progress_all()

    def _compacted(self, w: _Watch, compact_rev: int) -> None:
        """etcd: a watch that needs compacted history (or has a negative start revision below
        the compact revision, -1 before any compaction) gets compact_revision and is canceled
        (clientv3 turns that into ErrCompacted). As etcd's sendLoop: the header carries no
        revision (the store's WatchResponse has none), and ``canceled`` is
        ``compact_revision != 0``, so after a Compact(0) the response cancels nothing on the
        client's side although the watch is gone."""
        if self.watches.get(w.id) is not w:
            return
        del self.watches[w.id]
        self._drop(w)
        self._put(self._resp(w.id, 0, canceled=compact_rev != 0, compact_revision=compact_rev))
        if self.deferred_progress:
            self.progress_all()  # it may have waited for this watch

    def _drop(self, w: _Watch) -> None:
        if w.canceled:
            return
        w.canceled = True
        if w.store_id >= 0:
            self.api.state.cancel_watch(w.store_id)
            metrics.WATCHERS.dec()

    # -- responses -----------------------------------------------------------------------

    def _filter(self, w: _Watch, events: list[Event]) -> list[Event]:
        if not (w.no_put or w.no_delete):
            return events
        return [
            ev for ev in events
            if not ((ev.type == EventType.PUT and w.no_put)
                    or (ev.type == EventType.DELETE and w.no_delete))
        ]

    def _resp(self, wid: int, rev: int, **fields: object) -> pb.WatchResponse:
        resp = pb.WatchResponse(watch_id=wid, **fields)  # type: ignore[arg-type]
        self.api.fill(resp.header, rev)
        return resp

    def _events_resp(self, w: _Watch, evs: list[Event], rev: int = 0) -> pb.WatchResponse:
        # header.revision: as etcd, the store's revision when the events were sent: for live
        # events the revision of the last one; for history, ``rev``, the revision the watch
        # caught up to (etcd's syncWatchers sends its current revision).
        resp = self._resp(w.id, rev or evs[-1].kv.mod_revision)
        resp.events.extend(event_to_pb(ev, prev_kv=w.prev_kv) for ev in evs)
        return resp

    def _put(self, resp: pb.WatchResponse, w: _Watch | None = None,
             counted: bool = False) -> None:
        if not self.closed:
            self.out.put_nowait(_Item(resp, w, counted))

    def fail(self, exc: BaseException) -> None:
        """The request reader failed: ``responses`` raises ``exc`` after what is queued."""
        self.out.put_nowait(_Item(None, error=exc))

    async def responses(self) -> AsyncIterator[pb.WatchResponse]:
        out = self.out
        while True:
            item = out.get_nowait() if out.qsize() else await out.get()
            resp = item.resp
            if resp is None:
                assert item.error is not None
                raise item.error
            w = item.watch
            if item.counted and w is not None:
                self._taken(w)
            if w is not None:
                if w.canceled:
                    continue  # nothing follows a cancel
                w.sent_since_tick = True
                if item.counted and out.qsize():
                    resp = self._merge_queued(w, resp)
            if w is not None and w.fragment and len(resp.events) > 1 \
                    and resp.ByteSize() >= FRAGMENT_BYTES:
                for part in _fragments(resp):
                    yield part
            else:
                yield resp

    def _merge_queued(self, w: _Watch, resp: pb.WatchResponse) -> pb.WatchResponse:
        """Append to ``resp`` the live event responses of ``w`` that follow it in the queue
        (nothing else between them), so a busy stream sends fewer, larger responses."""
        queue: Any = self.out._queue  # type: ignore[attr-defined]  # asyncio.Queue's deque
        merged = False
        while queue and len(resp.events) < MAX_EVENTS_MERGED:
            nxt = queue[0]
            if nxt.watch is not w or not nxt.counted or nxt.resp is None:
                break
            self.out.get_nowait()
            self._taken(w)
            if not merged:
                copy = pb.WatchResponse()
                copy.CopyFrom(resp)
                resp, merged = copy, True
            resp.events.extend(nxt.resp.events)
            resp.header.revision = nxt.resp.header.revision
        return resp


def _history_batches(events: list[Event]) -> list[list[Event]]:
    """Group history into responses of at most HISTORY_BATCH_REVS revisions each, never
    splitting a revision."""
    batches: list[list[Event]] = []
    cur: list[Event] = []
    revs = 0
    last = -1
    for ev in events:
        rev = ev.kv.mod_revision
        if rev != last:
            if revs == HISTORY_BATCH_REVS:
                batches.append(cur)
                cur, revs = [], 0
            revs += 1
            last = rev
        cur.append(ev)
    if cur:
        batches.append(cur)
    return batches


def _fragments(resp: pb.WatchResponse) -> list[pb.WatchResponse]:
    """etcd's sendFragments: each part (fragment=true but the last) takes events while its
    encoded size stays under FRAGMENT_BYTES, and at least one. The caller only splits a
    response of two events or more whose size is at least FRAGMENT_BYTES. Sizes are added up
    per event (a repeated field's encoding is the sum of its elements') instead of encoding
    the growing part again for every event."""
    parts: list[pb.WatchResponse] = []
    base = pb.WatchResponse(header=resp.header, watch_id=resp.watch_id, fragment=True)
    base_size = base.ByteSize()
    cur: list[Any] = []
    size = base_size
    for ev in resp.events:
        ev_size = _EVENT_TAG_BYTES + _varint_len(n := ev.ByteSize()) + n
        if cur and size + ev_size >= FRAGMENT_BYTES:
            parts.append(_part(base, cur, fragment=True))
            cur, size = [], base_size
        cur.append(ev)
        size += ev_size
    parts.append(_part(base, cur, fragment=False))
    return parts


def _part(base: pb.WatchResponse, events: list[Any], fragment: bool) -> pb.WatchResponse:
    part = pb.WatchResponse()
    part.CopyFrom(base)
    part.fragment = fragment
    part.events.extend(events)
    return part


def _varint_len(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


# WatchResponse.events is field 11: a one-byte tag (11 << 3 | 2 < 128) before each event's
# length and bytes.
_EVENT_TAG_BYTES: Final = 1


class WatchService(rpc_pb2_grpc.WatchServicer):
    def __init__(self, api: Api) -> None:
        self.api = api

    @streaming("Watch")
    async def Watch(
        self,
        request_iterator: AsyncIterator[pb.WatchRequest],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[pb.WatchResponse]:
        stream = _Stream(self.api, asyncio.get_running_loop())

        async def read_requests() -> None:
            try:
                async for req in request_iterator:
                    kind = req.WhichOneof("request_union")
                    if kind == "create_request":
                        stream.create(req.create_request)
                    elif kind == "cancel_request":
                        stream.cancel(req.cancel_request.watch_id)
                    elif kind == "progress_request":
                        stream.progress_all()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - handed to the response side
                stream.fail(exc)
            # A half-close does not end the stream (etcd keeps sending until the client
            # cancels the RPC).

        async def tick() -> None:
            while True:
                await asyncio.sleep(PROGRESS_INTERVAL)
                stream.progress_tick()

        # The reader hands its failure to the response queue (stream.fail), so sending a
        # response needs no task and no wait of its own.
        reader = asyncio.create_task(read_requests())
        ticker = asyncio.create_task(tick())
        try:
            async for resp in stream.responses():
                yield resp
        finally:
            stream.close()
            for task in (reader, ticker):
                task.cancel()
            for task in (reader, ticker):
                with contextlib.suppress(BaseException):
                    await task
