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

Shared delivery (``Fanout``, ``storage.interface.SinkShare``): a watcher without a selector
whose sink has a ``share`` joins its bucket's fan-out for that share once an event went to
its sink directly; from then on the dispatcher publishes each event once to the fan-out's
channel for all its members instead of offering it to each (at a thousand watchers of one
key that was most of the dispatcher's time). A member leaves, with what was published to it
kept ahead of anything after, before it is handed anything on its own (a bookmark), when it
closes or stops, when its channel drops it (a client not keeping up), and when a publish
fails (every member leaves; the event is then offered to each as before). A left watcher
takes the revision of the last event published to it, and rejoins after its next direct
event.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Final

from storage.cacher.watch_cache import CacheEvent
from storage.errors import StorageError
from storage.interface import Object, Predicate, SinkChannel, SinkShare, WatchEvent, WatchSink

log = logging.getLogger(__name__)

INITIAL_EVENTS_END: Final = "plat.io/initial-events-end"


def bookmark_event(rv: int, *, initial_events_end: bool = False) -> WatchEvent:
    meta: Object = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return WatchEvent(type="BOOKMARK", object={"metadata": meta})


def _no_sink(event: WatchEvent) -> bool:
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


class Fanout:
    """The members of one bucket whose sinks have one share, and the channel that delivers
    to all of them at once (see the module doc). ``published`` is the last event published:
    the dispatcher meets each member of a bucket and publishes once per event."""

    __slots__ = ("channel", "members", "published", "last_rv", "_on_empty")

    def __init__(self, channel: SinkChannel, on_empty: Callable[[Fanout], None]) -> None:
        self.channel = channel
        self.members: dict[CacheWatcher, None] = {}
        self.published: CacheEvent | None = None
        self.last_rv = 0
        self._on_empty = on_empty

    def publish(self, event: CacheEvent) -> bool:
        """Deliver ``event`` to every member; False when the channel could not, after which
        no watcher is a member any more (the caller offers the event to each)."""
        self.published = event
        if self.channel.publish(event.shared):
            self.last_rv = event.rv
            return True
        for w in list(self.members):
            self.remove(w)
        return False

    def add(self, w: CacheWatcher) -> None:
        if w.fanout is None and self.channel.join(w.sink, lambda: self._left(w)):
            w.fanout = self
            self.members[w] = None

    def remove(self, w: CacheWatcher) -> None:
        """The watcher's side of leaving (see ``SinkChannel.leave``)."""
        if w.fanout is self:
            self.channel.leave(w.sink)
            self._left(w)

    def _left(self, w: CacheWatcher) -> None:
        if w.fanout is not self:
            return
        w.fanout = None
        if self.last_rv > w.last_rv:
            w.last_rv = self.last_rv
        self.members.pop(w, None)
        if not self.members:
            self._on_empty(self)


class CacheWatcher:
    """Implements ``storage.interface.Watcher`` and ``DirectWatcher``."""

    __slots__ = (
        "key", "recursive", "predicate", "allow_bookmarks", "capacity", "last_rv",
        "next_bookmark", "_initial_objects", "_initial_events", "_end_bookmark", "_queue",
        "_waiter", "_closed", "_stopped", "_on_stop", "sink", "_direct", "share", "fanout",
        "wants_fanout", "__weakref__",
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
        self.sink: WatchSink = _no_sink
        # True while the consumer is idle (waiting, nothing queued) and the sink takes
        # events; only __anext__ turns it on, only a refusal (or stop) turns it off.
        self._direct = False
        # Shared delivery (see the module doc): the sink's share (None: never), the
        # fan-out this watcher is a member of, and whether the dispatcher should add it to
        # one (its last event went to its sink directly).
        self.share: SinkShare | None = None
        self.fanout: Fanout | None = None
        self.wants_fanout = False

    def attach_sink(self, sink: WatchSink) -> None:
        """Hand events to ``sink`` whenever the consumer is idle (see the module doc)."""
        self.sink = sink
        share = getattr(sink, "share", None)
        if self.predicate.everything and isinstance(share, SinkShare):
            self.share = share

    def leave_fanout(self) -> None:
        fanout = self.fanout
        if fanout is not None:
            fanout.remove(self)

    # -- dispatcher side (synchronous, never blocks) ----------------------------------------

    def offer(self, event: CacheEvent) -> bool:
        """Queue ``event`` if it concerns this watcher; False when the buffer overflowed and
        the watcher was closed (the caller counts it and forgets the watcher)."""
        if self._closed:
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
        if self.fanout is not None:  # not from the dispatcher, which publishes instead
            self.leave_fanout()
        if self._direct:
            if self.sink(out):
                self.last_rv = event.rv
                self.wants_fanout = self.share is not None
                return True
            self._direct = False
        self.wants_fanout = False
        if len(self._queue) >= self.capacity:
            self.close()
            return False
        self._queue.append(out)
        self.last_rv = event.rv
        self._wake()
        return True

    def offer_bookmark(self, rv: int) -> None:
        self.leave_fanout()  # its last_rv is then that of the last event published to it
        if self._closed or rv <= self.last_rv:
            return
        self.last_rv = rv
        ev = bookmark_event(rv)
        self.wants_fanout = False
        if self._direct:
            if self.sink(ev):
                return
            self._direct = False
        if len(self._queue) < self.capacity:
            self._queue.append(ev)
            self._wake()

    def close(self) -> None:
        """No more input: the iterator ends after the queued events."""
        self.leave_fanout()
        self.wants_fanout = False
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
        self.leave_fanout()
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
            if self.sink is not _no_sink:
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
