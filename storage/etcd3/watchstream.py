"""``GrpcWatch``: one etcd watch on its own bidirectional stream, read by a thread.

Why a thread. etcd answers a synced watcher with one ``WatchResponse`` per revision. Read with
``grpc.aio``, every response costs the event loop a full turn (a future resolved by grpc's
poller thread), so under request load an API server's loop read a watch at the rate of its
turns, not at the rate of the writes: during 700 creates/s through two API servers over a
three-member etcd, a replica's configmaps cache fell up to 1,800 revisions (2.5 s) behind the
store while ``etcdctl watch`` on the same prefix kept up, and consistent reads went to the
store meanwhile (docs/apiserver.md). raftstore merges queued events into one response, which
hid this. Here a thread blocks in gRPC's synchronous stream (the GIL is released while it
waits) and hands whatever arrived to the loop in batches: one wake-up of the loop per batch,
however many responses it holds.

Flow control stays: at most ``MAX_QUEUED`` responses wait for the consumer; then the thread
stops reading, gRPC's window fills and the store sees a slow watcher, as before.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import queue
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

import grpc

from raftstore.api.pb import rpc_pb2 as pb
from storage.etcd3.kvclient import UNAVAILABLE, KVError

log = logging.getLogger(__name__)

# Responses read ahead of the consumer before the reading thread waits for it.
MAX_QUEUED: Final = 1024
_END: Final = object()  # the stream ended (its error, if any, is in ``_error``)
_CLOSE: Final = object()  # ends the request iterator


class GrpcWatch:
    """Implements ``KVWatch``. ``stub`` is a synchronous ``WatchStub``; the stream starts at
    ``start`` and everything the consumer sees is handed to its event loop."""

    def __init__(self, stub: Any, metadata: tuple[tuple[str, str], ...],
                 endpoint: str = "") -> None:
        self.endpoint = endpoint  # host:port of the member serving it
        self.created_revision = 0
        self._stub = stub
        self._metadata = metadata
        self._requests: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._call: Any = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: collections.deque[object] = collections.deque()
        self._lock = threading.Lock()
        self._wake_pending = False
        self._space = threading.Semaphore(MAX_QUEUED)
        self._waiter: asyncio.Future[None] | None = None
        self._error: Any = None  # the stream's grpc.RpcError (a grpc.Call), if it failed
        self._closed = False
        self._first: pb.WatchResponse | None = None

    # -- the reading thread ----------------------------------------------------------------

    def _request_iter(self) -> Iterator[pb.WatchRequest]:
        while True:
            req = self._requests.get()
            if req is _CLOSE:
                return
            yield req  # type: ignore[misc]

    def _read(self) -> None:
        try:
            for resp in self._call:
                while not self._space.acquire(timeout=0.5):
                    if self._closed:
                        return
                if self._closed:
                    return
                self._post(resp)
        except grpc.RpcError as exc:
            self._error = exc
        except Exception:  # noqa: BLE001 - the consumer sees the stream end
            log.exception("watch stream reader failed")
        finally:
            self._post(_END)

    def _post(self, item: object) -> None:
        with self._lock:
            self._inbox.append(item)
            if self._wake_pending:
                return
            self._wake_pending = True
        loop = self._loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

    # -- the event loop's side -------------------------------------------------------------

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _next(self) -> object:
        """The next item of the inbox (a response or ``_END``), waiting for one."""
        while not self._inbox:
            if self._closed:
                return _END
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._inbox.popleft()
        if item is not _END:
            self._space.release()
        else:
            self._inbox.appendleft(item)  # stays at the end for later readers
        return item

    def _failure(self) -> Exception:
        """What ``start`` raises when the stream ended first: gRPC's own error (the client
        fails over on UNAVAILABLE as for any call), or UNAVAILABLE."""
        err = self._error
        if isinstance(err, grpc.Call) and isinstance(err, Exception):
            return err
        return KVError(UNAVAILABLE, "watch stream ended before the watch was created")

    async def start(self, req: pb.WatchCreateRequest) -> None:
        self._loop = asyncio.get_running_loop()
        self._requests.put(pb.WatchRequest(create_request=req))
        self._call = self._stub.Watch(self._request_iter(), metadata=self._metadata)
        self._thread = threading.Thread(target=self._read, name="etcd-watch", daemon=True)
        self._thread.start()
        first = await self._next()
        if first is _END:
            raise self._failure()
        assert isinstance(first, pb.WatchResponse)
        self.created_revision = int(first.header.revision)
        if not first.created or first.canceled:
            self._first = first  # e.g. created+canceled: hand it to the reader

    async def __aiter__(self) -> AsyncIterator[pb.WatchResponse]:
        if self._first is not None:
            first, self._first = self._first, None
            if first.canceled:
                yield first
                self.close()
                return
        while not self._closed:
            resp = await self._next()
            if resp is _END:
                err = self._error
                if isinstance(err, grpc.Call) and not self._closed \
                        and err.code() != grpc.StatusCode.CANCELLED:
                    log.info("watch stream broke: %s", err.details())
                return
            assert isinstance(resp, pb.WatchResponse)
            if resp.created:
                continue
            yield resp
            if resp.canceled:
                self.close()
                return

    async def request_progress(self) -> None:
        if not self._closed:
            self._requests.put(pb.WatchRequest(progress_request=pb.WatchProgressRequest()))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._requests.put(_CLOSE)
        if self._call is not None:
            self._call.cancel()
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

