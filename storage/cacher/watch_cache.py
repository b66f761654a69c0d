"""The in-memory state of one resource prefix (upstream ``cacher/watch_cache.go``): the
current objects in key order and a window of recent events.

Everything here is synchronous and runs on the event loop, so a reader that does not await
sees one consistent revision: the items and ``rv`` always describe the same point of the
store's history.

Window invariant: every event of this prefix with a revision greater than ``floor`` is in
``events`` (in revision order), so a watch from any revision ``>= floor`` is served exactly.
A worked example (list at 10, then writes at 12, 15, 19; max_events = 2)::

    after the list          floor=10  events=[]            watch from 9 -> 410, from 10 ok
    after 12, 15            floor=10  events=[12, 15]
    after 19 (evicts 12)    floor=12  events=[15, 19]      watch from 11 -> 410 "(12)"

A re-list (after the store compacted past us) resets the window: floor = the list revision.

Encodings: ``encoded`` keeps, next to each current object, its encoding by each encoder that
asked (upstream's cachingObject): a list of 10,000 objects is then a join of bytes
instead of 10,000 copies and encodings. An entry is dropped when its key changes, so it always
encodes the object now stored under the key.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Final, Literal

from storage.interface import Object, WatchEvent

EventType = Literal["ADDED", "MODIFIED", "DELETED"]

# The upper bound of a string range: every key under "p/" sorts below "p0" ("/" + 1 == "0").
_PREFIX_END: Final = chr(ord("/") + 1)


@dataclass(slots=True, kw_only=True)
class CacheEvent:
    """One change of one key. ``obj`` is the new state (for DELETED the last state with the
    deletion's revision), ``prev`` the state before (None for ADDED). ``shared`` is the
    WatchEvent handed to every watcher whose predicate saw no transition: one object for all
    of them, so the handler can encode it once."""

    type: EventType
    key: str
    obj: Object
    prev: Object | None
    rv: int
    received: float
    shared: WatchEvent = field(init=False)

    def __post_init__(self) -> None:
        self.shared = WatchEvent(type=self.type, object=self.obj)


@dataclass(frozen=True, slots=True)
class ItemEncoder:
    """How a reader encodes each listed object. ``ident`` names the encoding (upstream's
    runtime.Identifier): two encoders with equal idents must produce the same bytes for the
    same object, since either may be served the other's cached result."""

    ident: Hashable
    encode: Callable[[Object], bytes]


def prefix_range_end(prefix: str) -> str:
    """Exclusive upper bound of the keys under ``prefix`` (which ends with ``/``)."""
    return prefix[:-1] + _PREFIX_END


def object_rv(obj: Object) -> int:
    meta = obj.get("metadata") or {}
    try:
        return int(meta.get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


class WatchCache:
    """Items by key, a sorted key list for ranges, the event window and the revision."""

    __slots__ = (
        "_items", "_keys", "_encoded", "events", "floor", "rv", "list_rv", "history_seconds",
        "max_events", "_changed", "_clock",
    )

    def __init__(
        self,
        *,
        history_seconds: float,
        max_events: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._items: dict[str, Object] = {}
        self._keys: list[str] = []
        # encoder ident -> key -> encoding of _items[key]; dropped whenever the key changes
        self._encoded: dict[Hashable, dict[str, bytes]] = {}
        self.events: deque[CacheEvent] = deque()
        self.floor = 0
        self.rv = 0
        self.list_rv = 0
        self.history_seconds = history_seconds
        self.max_events = max(1, max_events)
        self._clock = clock
        # Replaced (after being set) on every revision advance; waiters hold the old one.
        self._changed: asyncio.Event | None = None

    # -- reads -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Object | None:
        return self._items.get(key)

    def range_keys(self, prefix: str, start: str = "") -> list[str]:
        """Keys under ``prefix`` (ending with ``/``) from ``start`` (inclusive), sorted."""
        keys = self._keys
        lo = bisect_left(keys, max(prefix, start))
        hi = bisect_left(keys, prefix_range_end(prefix), lo)
        return keys[lo:hi]

    def objects(self, keys: Iterable[str]) -> list[Object]:
        items = self._items
        return [items[k] for k in keys]

    def encoded(self, keys: list[str], encoder: ItemEncoder) -> list[bytes]:
        """The encodings of the objects at ``keys`` (all present), each made at most once per
        stored state and encoder."""
        memo = self._encoded.get(encoder.ident)
        if memo is None:
            memo = self._encoded[encoder.ident] = {}
        out: list[bytes | None] = list(map(memo.get, keys))
        if None in out:
            items = self._items
            encode = encoder.encode
            for i, k in enumerate(keys):
                if out[i] is None:
                    out[i] = memo[k] = encode(items[k])
        return out  # type: ignore[return-value]  # no None left

    def events_after(self, rv: int) -> list[CacheEvent]:
        """Events with a revision greater than ``rv`` (the caller checked ``rv >= floor``)."""
        events = self.events
        start = bisect_right(events, rv, key=_event_rv)
        return list(islice(events, start, None))

    # -- writes (the reflector only) ---------------------------------------------------------

    def replace(self, items: Iterable[tuple[str, Object]], rv: int) -> None:
        """Load a fresh list at ``rv``: the window restarts empty with floor = rv."""
        self._items = dict(items)
        self._keys = sorted(self._items)
        self._encoded = {}
        self.events.clear()
        self.floor = rv
        self.list_rv = rv
        self._advance(rv)

    def apply(self, type_: EventType, key: str, obj: Object, rv: int) -> CacheEvent | None:
        """Apply one change from the store; returns the event to dispatch, or None for an
        event the cache already reflects (a revision at or below ``rv``)."""
        if rv <= self.rv:
            return None
        items = self._items
        prev = items.get(key)
        for memo in self._encoded.values():
            memo.pop(key, None)
        if type_ == "DELETED":
            if prev is None:
                self._advance(rv)
                return None
            del items[key]
            keys = self._keys
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                del keys[i]
        else:
            if prev is None:
                type_ = "ADDED"
                keys = self._keys
                if not keys or keys[-1] < key:
                    keys.append(key)
                else:
                    keys.insert(bisect_left(keys, key), key)
            else:
                type_ = "MODIFIED"
            items[key] = obj
        event = CacheEvent(type=type_, key=key, obj=obj, prev=prev, rv=rv, received=self._clock())
        self._append(event)
        self._advance(rv)
        return event

    def progress(self, rv: int) -> bool:
        """The store reported that nothing under the prefix changed up to ``rv``."""
        if rv <= self.rv:
            return False
        self._advance(rv)
        return True

    def _append(self, event: CacheEvent) -> None:
        events = self.events
        events.append(event)
        horizon = event.received - self.history_seconds
        # Evict past the count bound always, past the time bound only when old enough: a
        # client reconnecting within history_seconds resumes without a 410.
        while events and (len(events) > self.max_events or events[0].received < horizon):
            self.floor = events.popleft().rv

    def _advance(self, rv: int) -> None:
        self.rv = max(self.rv, rv)
        changed = self._changed
        if changed is not None:
            self._changed = None
            changed.set()

    # -- waiting for a revision --------------------------------------------------------------

    async def wait_for(self, rv: int, timeout: float) -> bool:
        """Wait until ``self.rv >= rv``; False on timeout."""
        if self.rv >= rv:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.rv < rv:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            if self._changed is None:
                self._changed = asyncio.Event()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return self.rv >= rv
        return True


def _event_rv(event: CacheEvent) -> int:
    return event.rv
