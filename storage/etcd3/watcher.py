"""Watch of the etcd3 store (upstream ``etcd3/watcher.go``).

Start:

* ``send_initial_events`` unset and rv ""/"0", or ``send_initial_events`` True: a consistent
  list at the latest revision R (paged, all pages at R) becomes synthetic ADDED events, then
  (when True and bookmarks are allowed) one BOOKMARK at R annotated
  ``plat.io/initial-events-end: "true"``; the etcd watch starts at R + 1.
* ``send_initial_events`` False and rv ""/"0": no initial events, from the current revision.
* rv N otherwise: every change after N (etcd watch from N + 1).

Filtering uses old and new state (prev_kv): an object that starts matching arrives as ADDED,
one that stops matching as DELETED (carrying its old state), as upstream. A compacted start
revision gives a single ERROR event (410, upstream's text). With ``allow_watch_bookmarks``
the watch asks the store for a progress notification whenever it has been idle for
``bookmark_interval`` seconds and turns each into a BOOKMARK.

The watcher pulls from the etcd stream as its consumer iterates: a slow consumer slows the
stream (gRPC flow control), and the store cancels it when it falls too far behind (raftstore,
etcd); the iteration then ends without an ERROR and the client re-watches.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Final

from raftstore.api.pb import kv_pb2
from raftstore.api.pb import rpc_pb2 as pb
from storage.errors import Code, StorageError
from storage.etcd3.common import (
    MAX_LIMIT,
    MAX_REVISION,
    decode,
    parse_rv,
    prefix_end,
    storage_error,
)
from storage.etcd3.kvclient import COMPACTED, KVError
from storage.interface import WatchEvent

if TYPE_CHECKING:
    from storage.etcd3.kvclient import KVWatch
    from storage.etcd3.store import Etcd3Store
    from storage.interface import ListOptions, Object, Predicate

log = logging.getLogger(__name__)

INITIAL_EVENTS_END: Final = "plat.io/initial-events-end"
EXPIRED_WATCH: Final = "The resourceVersion for the provided watch is too old."

_DELETE: Final = kv_pb2.Event.DELETE


def bookmark(rev: int, *, initial_events_end: bool = False) -> WatchEvent:
    meta: dict[str, object] = {"resourceVersion": str(rev)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return WatchEvent(type="BOOKMARK", object={"metadata": meta})


def error_event(err: StorageError) -> WatchEvent:
    return WatchEvent(type="ERROR", object={}, error=err)


class Etcd3Watcher:
    """Implements ``storage.interface.Watcher``."""

    def __init__(
        self,
        store: Etcd3Store,
        kvw: KVWatch | None,
        predicate: Predicate,
        *,
        initial: list[Object],
        initial_rev: int,
        end_bookmark: bool,
        bookmarks: bool,
        first_error: StorageError | None = None,
    ) -> None:
        self._store = store
        self._kvw = kvw
        self._pred = predicate
        self._initial = initial
        self._initial_rev = initial_rev
        self._end_bookmark = end_bookmark
        self._bookmarks = bookmarks
        self._first_error = first_error
        self._stopped = False
        self._active = False  # events arrived since the last tick (no progress needed)
        self._ticker: asyncio.Task[None] | None = None
        if kvw is not None and bookmarks and store.bookmark_interval > 0:
            self._ticker = asyncio.get_running_loop().create_task(self._tick(kvw))
        store.track(self)

    async def _tick(self, kvw: KVWatch) -> None:
        while not self._stopped:
            await asyncio.sleep(self._store.bookmark_interval)
            if not self._active:
                try:
                    if not await self._store.client.progress_supported():
                        return  # etcd's own periodic progress_notify still arrives
                except KVError:
                    continue
                await kvw.request_progress()
            self._active = False

    async def request_progress(self) -> None:
        """``storage.interface.ProgressRequester``: a BOOKMARK at the store's current
        revision follows soon, after every event at or below it. Raises StorageError when
        the store cannot order progress responses (old etcd): then it never promises that."""
        if self._kvw is None or self._stopped:
            return
        try:
            supported = await self._store.client.progress_supported()
        except KVError as exc:
            raise storage_error(exc) from None
        if not supported:
            raise StorageError(
                Code.INTERNAL, "watch progress requests are not supported by this etcd version"
            )
        await self._kvw.request_progress()

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._kvw is not None:
            self._kvw.close()
        if self._ticker is not None:
            self._ticker.cancel()
        self._store.untrack(self)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        try:
            if self._first_error is not None:
                yield error_event(self._first_error)
                return
            for obj in self._initial:
                if self._stopped:
                    return
                yield WatchEvent(type="ADDED", object=obj)
            self._initial = []
            last_rev = self._initial_rev
            if self._end_bookmark:
                yield bookmark(self._initial_rev, initial_events_end=True)
            if self._kvw is None:
                return
            async for resp in self._kvw:
                if self._stopped:
                    return
                if resp.canceled:
                    if resp.compact_revision:
                        yield error_event(StorageError(Code.RESOURCE_EXPIRED, EXPIRED_WATCH))
                    elif resp.cancel_reason:
                        log.info("etcd canceled a watch: %s", resp.cancel_reason)
                    return
                if not resp.events:
                    rev = int(resp.header.revision)
                    if self._bookmarks and rev >= last_rev:
                        last_rev = rev
                        yield bookmark(rev)
                    continue
                self._active = True
                for ev in resp.events:
                    try:
                        out = self._transform(ev)
                    except StorageError as err:
                        yield error_event(err)
                        return
                    last_rev = max(last_rev, int(ev.kv.mod_revision))
                    if out is not None:
                        yield out
                        if self._stopped:
                            return
        finally:
            self.stop()

    def _transform(self, ev: kv_pb2.Event) -> WatchEvent | None:
        kv = ev.kv
        rev = int(kv.mod_revision)
        everything = self._pred.everything
        has_prev = ev.HasField("prev_kv")
        if ev.type == _DELETE:
            if not has_prev:
                raise StorageError(
                    Code.INTERNAL,
                    f"etcd event received with PrevKv=nil (key={kv.key!r}, modRevision={rev}, "
                    "type=DELETE)",
                )
            old = decode(ev.prev_kv.value, rev, kv.key)
            if not everything and not self._pred.matches(old):
                return None
            return WatchEvent(type="DELETED", object=old)
        cur = decode(kv.value, rev, kv.key)
        if kv.create_revision == kv.mod_revision:
            if not everything and not self._pred.matches(cur):
                return None
            return WatchEvent(type="ADDED", object=cur)
        if everything:
            return WatchEvent(type="MODIFIED", object=cur)
        if not has_prev:
            raise StorageError(
                Code.INTERNAL,
                f"etcd event received with PrevKv=nil (key={kv.key!r}, modRevision={rev}, "
                "type=PUT)",
            )
        cur_ok = self._pred.matches(cur)
        old = decode(ev.prev_kv.value, rev, kv.key)
        old_ok = self._pred.matches(old)
        if cur_ok and old_ok:
            return WatchEvent(type="MODIFIED", object=cur)
        if cur_ok:
            return WatchEvent(type="ADDED", object=cur)
        if old_ok:
            return WatchEvent(type="DELETED", object=old)
        return None


async def _sync(
    store: Etcd3Store, key: str, recursive: bool, predicate: Predicate
) -> tuple[list[Object], int]:
    """Consistent read of the current state (paged at one revision), filtered."""
    k = key.encode()
    end = prefix_end(k) if recursive else b""
    limit = MAX_LIMIT if recursive else 0
    rev = 0
    out: list[Object] = []
    op = "list" if recursive else "get"
    while True:
        resp = await store._range(op, key, pb.RangeRequest(key=k, range_end=end, limit=limit,
                                                           revision=rev))
        if rev == 0:
            rev = int(resp.header.revision)
        for kv in resp.kvs:
            obj = decode(kv.value, kv.mod_revision, kv.key)
            if predicate.everything or predicate.matches(obj):
                out.append(obj)
        if not resp.more or not resp.kvs:
            return out, rev
        k = resp.kvs[-1].key + b"\x00"


async def start_watch(store: Etcd3Store, key: str, opts: ListOptions) -> Etcd3Watcher:
    if opts.recursive and not key.endswith("/"):
        key += "/"
    rv = parse_rv(opts.resource_version) or 0
    sie = opts.send_initial_events
    initial_events = (sie is None and rv == 0) or bool(sie)
    end_bookmark = bool(sie) and opts.allow_watch_bookmarks
    initial: list[Object] = []

    def make(kvw: KVWatch | None, start: int, err: StorageError | None = None) -> Etcd3Watcher:
        return Etcd3Watcher(
            store, kvw, opts.predicate, initial=initial, initial_rev=start,
            end_bookmark=end_bookmark and err is None, bookmarks=opts.allow_watch_bookmarks,
            first_error=err,
        )

    try:
        if initial_events:
            initial, start = await _sync(store, key, opts.recursive, opts.predicate)
            if rv > start:  # sendInitialEvents with NotOlderThan N: the state must reach N
                await store.wait_for_revision(rv)
                initial, start = await _sync(store, key, opts.recursive, opts.predicate)
        elif rv == 0:
            start = await store.current_revision()
        else:
            start = rv
        if start >= MAX_REVISION:
            await store.wait_for_revision(start)  # never reached: 504
        k = key.encode()
        req = pb.WatchCreateRequest(
            key=k, range_end=prefix_end(k) if opts.recursive else b"", start_revision=start + 1,
            prev_kv=True, progress_notify=opts.allow_watch_bookmarks,
        )
        kvw = await store.client.watch(req)
    except KVError as exc:
        if exc.kind == COMPACTED:
            return make(None, 0, StorageError(Code.RESOURCE_EXPIRED, EXPIRED_WATCH))
        raise storage_error(exc, key) from None
    if start > kvw.created_revision:
        # A version from the future: wait a little for it, then 504 (as the watch cache).
        try:
            await store.wait_for_revision(start)
        except BaseException:
            kvw.close()
            raise
    return make(kvw, start)
