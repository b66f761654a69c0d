"""One watcher of the cache (upstream ``cacher/cache_watcher.go``).

A watcher delivers, in order: the synthetic ADDED events of its initial snapshot (if any),
the window events after its starting revision (if any), the initial-events-end BOOKMARK (if
asked), then live events. Initial phases are produced lazily from shared lists, so starting a
watcher never copies objects; only live events count against the bounded buffer.

The dispatcher calls ``offer`` synchronously and never waits: a watcher whose buffer is full
is closed (it delivers what it already holds, then its iterator ends without an ERROR event),
so a slow client never blocks the reflector or the other watchers and never sees a gap.

Direct delivery (``attach_sink``, ``storage.interface.DirectWatcher``): while the consumer
waits for its next event with nothing queued, ``offer`` hands the event to the sink at once
instead of queueing it and waking the consumer's task, which at a thousand watchers of an
event saves a thousand task switches. Worked example, events 5..8 with a sink attached:

    consumer waits, queue empty      -> direct on
    offer(5): sink takes it          -> written by the sink
    offer(6): sink refuses (paused)  -> direct off; 6 queued; consumer woken
    offer(7)                         -> queued behind 6 (direct is off)
    consumer: 6, 7 from the queue; finds it empty -> direct on
    offer(8): sink takes it

So the sink never sees an event before one that is still queued, and a client that stops
reading ends up, as without a sink, with a full queue and a closed watcher.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Final

from storage.cacher.watch_cache import CacheEvent
from storage.errors import StorageError
from storage.interface import Object, Predicate, SinkTransform, WatchEvent, WatchSink

log = logging.getLogger(__name__)

INITIAL_EVENTS_END: Final = "plat.io/initial-events-end"


def bookmark_event(rv: int, *, initial_events_end: bool = False) -> WatchEvent:
    meta: Object = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return WatchEvent(type="BOOKMARK", object={"metadata": meta})


def _no_sink(type_: str, obj: Object) -> bool:
    return False


def _with_rv(obj: Object, rv: int) -> Object:
    """A shallow copy of ``obj`` whose metadata.resourceVersion is ``rv`` (shared dicts are
    never changed in place)."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta["resourceVersion"] = str(rv)
    out["metadata"] = meta
    return out


def convert(event: CacheEvent, predicate: Predicate) -> WatchEvent | None:
    """The event this predicate's watcher sees, judging old and new state as upstream: an
    object that starts matching is ADDED, one that stops matching is DELETED (its previous
    state at the event's revision)."""
    if predicate.everything:
        return event.shared
    matches = predicate.matches
    if event.type == "DELETED":
        return event.shared if matches(event.obj) else None
    cur = matches(event.obj)
    old = event.prev is not None and matches(event.prev)
    if cur:
        if old or event.type == "ADDED":
            return event.shared
        return WatchEvent(type="ADDED", object=event.obj)
    if old:
        assert event.prev is not None
        return WatchEvent(type="DELETED", object=_with_rv(event.prev, event.rv))
    return None


class CacheWatcher:
    """Implements ``storage.interface.Watcher`` and ``DirectWatcher``."""

    __slots__ = (
        "key", "recursive", "predicate", "allow_bookmarks", "capacity", "last_rv",
        "next_bookmark", "deadline", "min_rv", "_initial_objects", "_initial_events",
        "_end_bookmark", "_queue", "_waiter", "_closed", "_stopped", "_on_stop", "_sink",
        "_transform", "_direct", "__weakref__",
    )

    def __init__(
        self,
        *,
        key: str,
        recursive: bool,
        predicate: Predicate,
        allow_bookmarks: bool,
        capacity: int,
        start_rv: int,
        initial_objects: list[Object] | None = None,
        initial_events: list[CacheEvent] | None = None,
        end_bookmark_rv: int | None = None,
        on_stop: Callable[[CacheWatcher], None] | None = None,
    ) -> None:
        self.key = key
        self.recursive = recursive
        self.predicate = predicate
        self.allow_bookmarks = allow_bookmarks
        self.capacity = capacity
        # The revision of the last event or bookmark queued for the client: a bookmark is
        # only worth sending above it.
        self.last_rv = start_rv
        self.next_bookmark = 0.0
        self.deadline = 0.0  # time.monotonic() when the caller ends the watch; 0: unknown
        self.min_rv = 0  # events at or below it are not this watcher's (a future start)
        # Both lists are taken over and consumed from their end, hence reversed here.
        if initial_objects is not None:
            initial_objects.reverse()
        if initial_events is not None:
            initial_events.reverse()
        self._initial_objects = initial_objects
        self._initial_events = initial_events
        self._end_bookmark = end_bookmark_rv
        self._queue: deque[WatchEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False  # no more input; deliver what is queued, then end
        self._stopped = False  # end now
        self._on_stop = on_stop
        self._sink: WatchSink = _no_sink
        self._transform: SinkTransform | None = None
        # True while the consumer is idle (waiting, nothing queued) and the sink takes
        # events; only __anext__ turns it on, only a refusal (or stop) turns it off.
        self._direct = False

    def attach_sink(self, sink: WatchSink, transform: SinkTransform | None = None) -> None:
        """Hand events to ``sink`` whenever the consumer is idle (see the module doc), their
        objects first passed through ``transform`` (``storage.interface.SinkTransform``)."""
        self._sink = sink
        self._transform = transform

    def _hand(self, event: WatchEvent) -> bool:
        """Give ``event`` to the sink; False when refused (or its transform failed).
        ``Cacher._dispatch`` does the same inline for a watcher without a selector."""
        obj = event.object
        transform = self._transform
        if transform is not None:
            try:
                obj = transform(event.type, obj)
            except Exception:  # the iterator meets (and reports) the same failure
                return False
        return self._sink(event.type, obj)

    # -- dispatcher side (synchronous, never blocks) ----------------------------------------

    def offer(self, event: CacheEvent) -> bool:
        """Queue ``event`` if it concerns this watcher; False when the buffer overflowed and
        the watcher was closed (the caller counts it and forgets the watcher)."""
        if self._closed or event.rv <= self.min_rv:
            return True
        if self.predicate.everything:
            out = event.shared
        else:
            try:
                converted = convert(event, self.predicate)
            except Exception:  # a broken predicate ends this watch, never the dispatcher
                log.exception("watch predicate failed; closing the watcher",
                              extra={"key": self.key})
                self.close()
                return True
            if converted is None:
                return True
            out = converted
        if self._direct:
            if self._hand(out):
                self.last_rv = event.rv
                return True
            self._direct = False
        if len(self._queue) >= self.capacity:
            self.close()
            return False
        self._queue.append(out)
        self.last_rv = event.rv
        self._wake()
        return True

    def offer_bookmark(self, rv: int) -> None:
        if self._closed or rv <= self.last_rv:
            return
        self.last_rv = rv
        ev = bookmark_event(rv)
        if self._direct:
            if self._hand(ev):
                return
            self._direct = False
        if len(self._queue) < self.capacity:
            self._queue.append(ev)
            self._wake()

    def close(self) -> None:
        """No more input: the iterator ends after the queued events."""
        if not self._closed:
            self._closed = True
            self._wake()
            if self._on_stop is not None:
                self._on_stop(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # -- consumer side -----------------------------------------------------------------------

    def stop(self) -> None:
        self._stopped = True
        self._direct = False
        self._queue.clear()
        self._initial_objects = None
        self._initial_events = None
        self.close()
        self._wake()

    def __aiter__(self) -> CacheWatcher:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._stopped:
                raise StopAsyncIteration
            ev = self._next_initial()
            if ev is not None:
                return ev
            if self._queue:
                ev = self._queue.popleft()
                if ev.type == "ERROR":
                    self._stopped = True
                return ev
            if self._closed:
                self._stopped = True
                raise StopAsyncIteration
            # Idle: everything returned so far has been handled by the consumer (it asked
            # for the next one), so the sink may take the next events in order.
            if self._sink is not _no_sink:
                self._direct = True
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None

    def _next_initial(self) -> WatchEvent | None:
        objs = self._initial_objects
        if objs is not None:
            pred = self.predicate
            while objs:
                obj = objs.pop()
                if pred.everything or pred.matches(obj):
                    return WatchEvent(type="ADDED", object=obj)
            self._initial_objects = None
        events = self._initial_events
        if events is not None:
            while events:
                out = convert(events.pop(), self.predicate)
                if out is not None:
                    return out
            self._initial_events = None
        if self._end_bookmark is not None:
            rv, self._end_bookmark = self._end_bookmark, None
            return bookmark_event(rv, initial_events_end=True)
        return None


class ErrorWatcher:
    """A watcher whose only event is one ERROR (e.g. 410 for a revision below the window)."""

    __slots__ = ("_error", "_done")

    def __init__(self, error: StorageError) -> None:
        self._error = error
        self._done = False

    def stop(self) -> None:
        self._done = True

    def __aiter__(self) -> ErrorWatcher:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._done:
            raise StopAsyncIteration
        self._done = True
        return WatchEvent(type="ERROR", object={}, error=self._error)
