"""Watch streams read on an event loop of their own (``WatchLoop``), handed over in batches.

Why. etcd answers a synced watcher with one ``WatchResponse`` per revision, and gRPC lets a
stream have one read outstanding: each response costs the reading loop a turn or two (the
read's completion comes from grpc's poller thread). Read on the API server's own loop, whose
turns grow long under request load, the watches were read at the rate of its turns, not of
the writes: during 700 creates/s through two API servers over a three-member etcd, a
replica's configmaps cache fell up to 1,800 revisions (2.5 s) behind the store while
``etcdctl watch`` on the same prefix kept up, and consistent reads went to the store
meanwhile (docs/apiserver.md). raftstore merges queued events into one response, which hid
this. Here every watch of a client is read by one task each on a loop in one thread, which
does nothing else; what arrived goes to the consumer's loop with one wake-up per batch.

Flow control stays: at most ``MAX_QUEUED`` responses wait for the consumer; then that
watch's reader pauses, gRPC's window fills and the store sees a slow watcher, as before.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Final, TypeVar

import grpc

from raftstore.api.pb import rpc_pb2 as pb
from storage.etcd3.kvclient import UNAVAILABLE, KVError

log = logging.getLogger(__name__)

T = TypeVar("T")

# Responses read ahead of the consumer before that watch's reader pauses.
MAX_QUEUED: Final = 1024
_END: Final = object()  # the stream ended (its error, if any, is in ``GrpcWatch._error``)


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's, as the API server's own (its turns cost about half the default loop's)."""
    try:
        import uvloop  # noqa: PLC0415 - optional at import time
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class WatchLoop:
    """A thread running an event loop for a client's watch streams, with its channels."""

    def __init__(self) -> None:
        self.loop = _new_loop()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="etcd-watches", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the watch loop and wait for it from the caller's loop;
        UNAVAILABLE once the loop is stopping (a stopped loop would never run it)."""
        if self._stopping:
            coro.close()
            raise KVError(UNAVAILABLE, "the store client is closed")
        return await asyncio.wrap_future(self.submit(coro))

    def call(self, fn: Callable[[], object]) -> None:
        try:
            self.loop.call_soon_threadsafe(fn)
        except RuntimeError:  # stopped: nothing left to do there
            pass

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    async def stop(self, closing: list[Callable[[], Coroutine[Any, Any, None]]]) -> None:
        """Run the ``closing`` coroutines (closing channels) on the loop, then end it."""

        async def close_all() -> None:
            for close in closing:
                try:
                    await close()
                except Exception:  # noqa: BLE001 - closing the rest matters more
                    log.exception("closing a watch channel failed")
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        self._stopping = True
        await asyncio.wrap_future(self.submit(close_all()))
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self._thread.join, 10)
        _ignore_completions_for_closed_loops(asyncio.get_running_loop())


def _ignore_completions_for_closed_loops(loop: asyncio.AbstractEventLoop) -> None:
    """grpc.aio has one completion queue per process, drained on the loops that use grpc.
    A completion of a call made on the watch loop can still come out after that loop has
    closed (the channel's own shutdown work, a reconnection to a member that was down): the
    loop draining it (this one) then fails to hand it over and logs "Event loop is closed"
    with a stack trace at every such completion (seen after a store member was killed and
    restarted). Nothing waits for those completions any more, so they are dropped quietly;
    other errors are logged as before."""
    previous = loop.get_exception_handler()

    def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, RuntimeError) and str(exc) == "Event loop is closed" \
                and "CompletionQueue" in repr(context.get("handle")):
            return
        if previous is not None:
            previous(lp, context)
        else:
            lp.default_exception_handler(context)

    if getattr(previous, "_drops_closed_loop_completions", False):
        return
    handler._drops_closed_loop_completions = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)


class GrpcWatch:
    """Implements ``KVWatch``: one watch on its own bidirectional stream of ``stub`` (an aio
    ``WatchStub`` on a channel of ``wl``'s loop), consumed from the loop that calls
    ``start``."""

    def __init__(self, wl: WatchLoop, stub: Any, metadata: tuple[tuple[str, str], ...],
                 endpoint: str = "") -> None:
        self.endpoint = endpoint  # host:port of the member serving it
        self.created_revision = 0
        self._wl = wl
        self._stub = stub
        self._metadata = metadata
        self._call: Any = None  # the stream: used on the watch loop only
        self._reader: asyncio.Task[None] | None = None
        self._write_lock: asyncio.Lock | None = None  # one write at a time (grpc.aio)
        self._room: asyncio.Event | None = None  # set while the inbox has room
        self._loop: asyncio.AbstractEventLoop | None = None  # the consumer's
        self._lock = threading.Lock()  # guards the inbox, ``_paused`` and ``_wake_pending``
        self._inbox: collections.deque[object] = collections.deque()
        self._paused = False
        self._wake_pending = False
        self._waiter: asyncio.Future[None] | None = None
        self._error: Any = None  # the stream's grpc.aio.AioRpcError, if it failed
        self._closed = False
        self._first: pb.WatchResponse | None = None

    # -- on the watch loop -----------------------------------------------------------------

    async def _open(self, req: pb.WatchCreateRequest) -> pb.WatchResponse:
        self._write_lock = asyncio.Lock()
        self._room = asyncio.Event()
        self._room.set()
        self._call = self._stub.Watch(metadata=self._metadata)
        try:
            await self._call.write(pb.WatchRequest(create_request=req))
            first = await self._call.read()
        except BaseException:
            self._call.cancel()
            raise
        if first is grpc.aio.EOF:
            raise KVError(UNAVAILABLE, "watch stream ended before the watch was created")
        self._reader = asyncio.get_running_loop().create_task(self._read())
        return first  # type: ignore[no-any-return]

    async def _read(self) -> None:
        call, room = self._call, self._room
        assert room is not None
        try:
            while True:
                await room.wait()
                resp = await call.read()
                if resp is grpc.aio.EOF:
                    return
                with self._lock:
                    if len(self._inbox) + 1 >= MAX_QUEUED:
                        self._paused = True
                        room.clear()
                self._post(resp)
        except asyncio.CancelledError:
            pass
        except grpc.aio.AioRpcError as exc:
            self._error = exc
        except Exception:  # noqa: BLE001 - the consumer sees the stream end
            log.exception("watch stream reader failed")
        finally:
            self._post(_END)

    async def _write(self, req: pb.WatchRequest) -> None:
        assert self._write_lock is not None
        async with self._write_lock:
            if self._closed:
                return
            try:
                await self._call.write(req)
            except (grpc.aio.BaseError, asyncio.InvalidStateError, RuntimeError):
                pass  # the stream is ending; the reader reports it

    def _cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
        if self._reader is not None:
            self._reader.cancel()

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
            except RuntimeError:  # the consumer's loop is closed: nobody waits any more
                pass

    # -- on the consumer's loop ------------------------------------------------------------

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _next(self) -> object:
        """The next response, or ``_END`` once the stream ended or the watch was closed."""
        while True:
            with self._lock:
                if self._inbox:
                    item = self._inbox[0]
                    if item is not _END:  # _END stays, for any later call
                        self._inbox.popleft()
                    resume = self._paused and len(self._inbox) <= MAX_QUEUED // 2
                    if resume:
                        self._paused = False
                    break
            if self._closed:
                return _END
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if resume and self._room is not None:
            self._wl.call(self._room.set)
        return item

    async def start(self, req: pb.WatchCreateRequest) -> None:
        """Opens the stream; gRPC's error if that fails (the client then fails over on
        UNAVAILABLE, as for any call)."""
        self._loop = asyncio.get_running_loop()
        first = await self._wl.run(self._open(req))
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
                if err is not None and not self._closed \
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
        if self._closed:
            return
        with contextlib.suppress(KVError, RuntimeError):  # the client is closing
            await self._wl.run(
                self._write(pb.WatchRequest(progress_request=pb.WatchProgressRequest())))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wl.call(self._cancel)
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)
