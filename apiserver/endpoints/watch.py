"""Watch (upstream ``handlers/watch.go``): a chunked stream of JSON documents, one
``{"type": ..., "object": ...}`` per event followed by a newline, each written (and so sent)
as it arrives. The stream ends when the store ends it, when ``timeoutSeconds`` passes, or
when the client goes away; the store's stream is stopped in every case.

Two ways out, one order. The handler's task iterates the store's stream and writes through
aiohttp (initial events, errors, and every event while the client is slow). While that
iterator is idle and the connection accepts data, the store hands live events straight to
this watch's ``_Direct`` from its dispatcher (``DirectWatchStream``): the frame (encoded
once per event for all watchers) is appended to the connection's pending bytes and one
callback per loop turn writes each connection's pending bytes in one ``transport.write``.
That saves, per watcher and event, a task switch and the generator, response and HTTP
writer layers, and under load it sends several events in one TLS record. The pending bytes
are always written before anything the iterator writes, so every watcher sees its events in
order; once a flush finds the connection paused (full) or closing, it refuses direct
events, which then queue in the store's watcher for the iterator, whose writes wait for the
client (and a client that never reads is closed by the store as before); the iterator's
next write turns the direct way back on if the connection has room again.

aiohttp does not cancel a handler when its client disconnects, so one reaper per loop checks
the transports of all watches once per ``_IDLE_CHECK`` seconds and stops the streams of those
gone, and a timer stops the stream at ``timeoutSeconds``; either ends the handler's loop,
which itself awaits nothing but the next event and the write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from apiserver.endpoints import serializers
from apiserver.endpoints.fieldvalidation import warning_header
from apiserver.endpoints.negotiation import JSON, TABLE
from apiserver.endpoints.params import list_options
from apiserver.endpoints.response import transform_watch_object
from apiserver.filters.responseheaders import stamp
from apiserver.registry.interface import DirectWatchStream
from apiserver.status import APIError

if TYPE_CHECKING:
    from aiohttp.base_protocol import BaseProtocol

    from apiserver.endpoints.response import Scope
    from apiserver.registry.interface import Object, WatchStream

log = logging.getLogger(__name__)

_IDLE_CHECK: Final = 1.0
# After a direct flush, the next waits this many times as long as it took (see _Flusher).
# 1,000 watchers, 100 writes/s, embedded, 4 alternated runs on a quiet machine: delivery
# p99 97-128 ms at 1.0, 71-100 ms at 0.25, 93-96 ms at 0 (which costs the most CPU).
_PACE: Final = 0.25
# Connections written per callback of a flush round: the requests that make the events wait
# for a slice, not a round (1,000 watchers, 100 writes/s, embedded: PUT p99 79 ms at 100,
# 24-38 ms at 25).
_SLICE: Final = 25
_OBJECT_EVENTS: Final = frozenset(("ADDED", "MODIFIED", "DELETED"))


class _LastFrame:
    """The most recent plain frame. Every watcher of an event gets the same (read-only)
    object from the registry, and the watchers of one event run one after the other on the
    loop, so a single remembered frame encodes each event once instead of once per watcher.
    Holding the object keeps the identity test sound. ``chunk`` is ``data`` in HTTP chunked
    framing (made when a direct write first asks for it)."""

    __slots__ = ("type", "obj", "media", "data", "chunk")

    def __init__(self) -> None:
        self.type = ""
        self.obj: object = None
        self.media = ""
        self.data = b""
        self.chunk = b""


_LAST: Final = _LastFrame()


def _plain(type_: str, obj: object, media: str) -> _LastFrame:
    last = _LAST
    if last.obj is not obj or last.type != type_ or last.media != media:
        data = serializers.encode_watch_event(type_, obj, media)
        last.type, last.obj, last.media, last.data, last.chunk = type_, obj, media, data, b""
    return last


def _frame(scope: Scope, type_: str, obj: Any, first: bool) -> bytes:
    media = scope.output.media_type
    if not scope.output.convert and type_ != "ERROR":
        return _plain(type_, obj, media).data
    if scope.output.convert == TABLE and type_ == "BOOKMARK":
        rv = (obj.get("metadata") or {}).get("resourceVersion", "")
        obj = {"kind": TABLE, "apiVersion": scope.output.convert_api_version,
               "metadata": {"resourceVersion": rv}, "columnDefinitions": None, "rows": None}
    elif type_ != "ERROR":
        obj = transform_watch_object(scope, obj, first=first)
    return serializers.encode_watch_event(type_, obj, media)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


class _Flusher:
    """Writes the pending bytes of the direct watches of one loop in rounds: a round takes
    the connections with bytes pending when it starts and writes them ``_SLICE`` per
    callback, so that a request (the write that makes the next event, say) waits for a
    slice rather than for a write to every watcher. Connections given bytes during a round
    wait for the next.

    After a round it waits a quarter of the CPU time the round took (``_PACE``) before the
    next: a round that reaches a thousand connections takes milliseconds, starting the next
    one at once would leave the loop less for the requests that make the events, and the
    events arriving meanwhile cost hardly more written together than one alone (a TLS
    record and a send per connection either way). An idle server flushes at once."""

    __slots__ = ("_loop", "_dirty", "_round", "_scheduled", "_not_before", "_spent",
                 "_last_chunks", "_last_joined")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._dirty: list[_Direct] = []  # for the next round
        self._round: list[_Direct] = []  # the rest of the current round, reversed
        self._scheduled = False  # a round is under way or scheduled
        self._not_before = 0.0
        self._spent = 0.0  # CPU time of the current round so far
        # The chunks of the last connection written with several, and their join: the
        # watchers of one key mostly have the same events pending, so the next connection
        # usually writes the same bytes (compared chunk by chunk, by identity first).
        self._last_chunks: list[bytes] = []
        self._last_joined = b""

    def joined(self, chunks: list[bytes]) -> bytes:
        """``b"".join(chunks)``, shared with the connection written before when its chunks
        were the same."""
        if chunks != self._last_chunks:
            self._last_chunks = chunks.copy()
            self._last_joined = b"".join(chunks)
        return self._last_joined

    def add(self, out: _Direct) -> None:
        self._dirty.append(out)
        if not self._scheduled:
            self._schedule()

    def _schedule(self) -> None:
        self._scheduled = True
        loop = self._loop
        delay = self._not_before - loop.time()
        if delay > 0:
            loop.call_later(delay, self._flush)
        else:
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        # CPU time, not wall time: a round preempted by another process did not cost the
        # loop the time it spent waiting for a core.
        start = time.thread_time()
        batch = self._round
        if not batch:
            batch, self._dirty = self._dirty, []
            batch.reverse()
        for _ in range(min(len(batch), _SLICE)):
            out = batch.pop()
            try:
                out.flush()
            except Exception:  # one broken connection never holds up the others
                log.exception("watch: direct write failed")
        self._round = batch
        self._spent += time.thread_time() - start
        if batch:  # the rest of this round, after whatever else is ready
            self._loop.call_soon(self._flush)
            return
        self._not_before = self._loop.time() + self._spent * _PACE
        self._spent = 0.0
        self._scheduled = False
        if self._dirty:
            self._schedule()


class _Reaper:
    """Stops the store's stream of every watch whose client went away, checked for all the
    watches of one loop at once every ``_IDLE_CHECK`` seconds (aiohttp does not cancel a
    handler when its client disconnects). One timer per loop instead of a task per watch:
    a thousand sleeping tasks each waking once a second cost more than their checks."""

    __slots__ = ("_loop", "_watches", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._watches: dict[WatchStream, web.Request] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, stream: WatchStream, request: web.Request) -> None:
        self._watches[stream] = request
        if self._timer is None:
            self._timer = self._loop.call_later(_IDLE_CHECK, self._check)

    def remove(self, stream: WatchStream) -> None:
        self._watches.pop(stream, None)

    def _check(self) -> None:
        self._timer = None
        gone = [s for s, request in self._watches.items() if _gone(request)]
        for stream in gone:
            del self._watches[stream]
            stream.stop()
        if self._watches:
            self._timer = self._loop.call_later(_IDLE_CHECK, self._check)


class _PerLoop:
    __slots__ = ("flusher", "reaper")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.flusher = _Flusher(loop)
        self.reaper = _Reaper(loop)


_PER_LOOP: Final[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _PerLoop]] = (
    weakref.WeakKeyDictionary())


def _per_loop(loop: asyncio.AbstractEventLoop) -> _PerLoop:
    state = _PER_LOOP.get(loop)
    if state is None:
        state = _PER_LOOP[loop] = _PerLoop(loop)
    return state


class _Direct:
    """One watch's direct way out (see the module doc) and its Table ``first`` state, which
    both ways share."""

    __slots__ = ("_scope", "_media", "_transport", "_protocol", "_flusher", "_pending",
                 "_open", "_taking", "first")

    def __init__(self, scope: Scope, transport: asyncio.Transport, protocol: BaseProtocol,
                 flusher: _Flusher) -> None:
        self._scope = scope
        # Plain output: the frame of an event is the same for every such watcher.
        self._media = None if scope.output.convert else scope.output.media_type
        self._transport = transport
        self._protocol = protocol
        self._flusher = flusher
        # Chunks to write, a few at most (see _Flusher). A list, not bytes grown by each
        # event: the chunks are the same objects for every watcher of an event, so the
        # dispatcher's work per watcher is an append instead of a copy of what is pending.
        self._pending: list[bytes] = []
        self._open = True
        # Whether push takes events: off once closed, and from a flush that found the client
        # gone or not reading fast enough until the handler's own write went through (the
        # store's dispatcher calls push for every watcher of every event, so it tests one
        # attribute, and the flush tests the connection once per round instead).
        self._taking = True
        self.first = True

    def push(self, type_: str, obj: Object) -> bool:
        """The store's sink: take one event, or refuse it (closed, client gone or not
        reading fast enough, or a frame that fails: the iterator then meets the failure)."""
        if not self._taking:
            return False
        last = _LAST
        if last.obj is obj and last.type == type_ and last.chunk and last.media == self._media:
            # the other watchers of this event already framed it; plain output, where the
            # Table's ``first`` plays no part
            chunk = last.chunk
        else:
            encoded = self._encode(type_, obj)
            if encoded is None:
                return False
            chunk = encoded
            if type_ in _OBJECT_EVENTS:
                self.first = False
        pending = self._pending
        if not pending:
            self._flusher.add(self)
        pending.append(chunk)
        return True

    def _encode(self, type_: str, obj: Object) -> bytes | None:
        try:
            if self._media is not None:
                last = _plain(type_, obj, self._media)
                if not last.chunk:
                    last.chunk = _chunk(last.data)
                return last.chunk
            return _chunk(_frame(self._scope, type_, obj, self.first))
        except Exception:
            return None

    def flush(self) -> None:
        """Write what is pending (before anything else is written to this response). A
        client gone, or one whose connection is now paused for flow control, gets no more
        direct events until the handler has written one through aiohttp (``resume``): they
        queue in the store's watcher, so a client that stops reading is closed as without
        the direct way, holding at most what one round gave it."""
        pending = self._pending
        if pending:
            data = pending[0] if len(pending) == 1 else self._flusher.joined(pending)
            pending.clear()
            transport = self._transport
            if transport.is_closing():
                self._taking = False
                return
            transport.write(data)
            if self._protocol.writing_paused:
                self._taking = False

    def resume(self) -> None:
        """The handler wrote an event through aiohttp: direct events are welcome again if
        the connection is open and not paused."""
        self._taking = (self._open and not self._protocol.writing_paused
                        and not self._transport.is_closing())

    def close(self) -> None:
        """No more direct events; what is pending is written now."""
        self._open = False
        self._taking = False
        self.flush()


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def handle(scope: Scope) -> web.StreamResponse:
    request = scope.request
    opts = list_options(request.query, watch=True, name=scope.info.name)
    stream = await scope.store.watch(scope.ctx, opts)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + opts.timeout_seconds if opts.timeout_seconds > 0 else None
    resp = web.StreamResponse(status=200)
    media = scope.output.media_type
    # upstream: JSON streams keep their type, others say ;stream=watch
    resp.headers["Content-Type"] = media if media == JSON else f"{media};stream=watch"
    resp.enable_chunked_encoding()
    for w in scope.warnings:
        resp.headers.add("Warning", warning_header(w))
    # A timer and the loop's reaper, not a per-event wait: they stop the store's stream at
    # the deadline or when the client is gone, which ends the loop below. Creating a task
    # and a wait per event cost more than the rest of the delivery at a thousand watchers.
    shared = _per_loop(loop)
    timer = loop.call_at(deadline, stream.stop) if deadline is not None else None
    shared.reaper.add(stream, request)
    out: _Direct | None = None
    try:
        stamp(request, resp)
        await resp.prepare(request)
        transport = request.transport
        if transport is not None:
            out = _Direct(scope, transport, request.protocol, shared.flusher)
            if isinstance(stream, DirectWatchStream):
                # after prepare: the headers are written, direct frames may follow
                stream.attach_sink(out.push)
        first = True
        try:
            async for item in stream:
                if out is not None:
                    out.flush()  # direct events came before this one
                    first = out.first
                await resp.write(_frame(scope, item.type, item.object, first))
                if out is not None:
                    out.resume()
                if item.type in _OBJECT_EVENTS:
                    first = False
                    if out is not None:
                        out.first = False
        except APIError as err:
            # Headers are sent: a failure now can only be an ERROR event (upstream).
            if out is not None:
                out.flush()
            await resp.write(serializers.encode_watch_event("ERROR", err.body(),
                                                            scope.output.media_type))
    except (ConnectionResetError, ConnectionError):
        pass
    except Exception:
        # An event that cannot be written (it failed to encode): the response has begun, so
        # no error response can follow; the stream ends here, as upstream's watch server
        # ends it after logging "unable to encode watch object".
        log.exception("watch of %s ended: unable to encode watch object", request.path)
    finally:
        if timer is not None:
            timer.cancel()
        shared.reaper.remove(stream)
        stream.stop()
        if out is not None:
            out.close()
    with contextlib.suppress(ConnectionResetError, ConnectionError, RuntimeError):
        await resp.write_eof()
    return resp
