"""Watchers and event history (etcd's ``watchable_store.go``), minus the goroutines.

Every call into the store happens under the owner's lock, so a watcher is registered and its
history read in one step: nothing can commit in between, and the live callbacks start exactly
at the revision after the last one history covered. No gap, no duplicate, no sync loop.

History is not a second copy of the data: ``store.log`` names the keys changed at each kept
revision and the key index holds the versions, from which the events are rebuilt on demand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import structlog

from raftstore.mvcc.key_index import VERSION, Version, as_key_value, at, live_at
from raftstore.mvcc.keyrange import bounds, in_range
from raftstore.mvcc.types import Event, EventType

# Revisions a watcher is sent per call when a restore makes it catch up (after_restore), as
# etcd batches the revisions of a watcher it syncs (watchBatchMaxRevs).
RESTORE_BATCH_REVS: Final = 1000

if TYPE_CHECKING:
    from raftstore.mvcc.kvstore import KVStore

_log = structlog.get_logger(__name__)


@dataclass(slots=True, kw_only=True)
class _Watcher:
    key: bytes
    end: bytes | None
    next_rev: int  # the lowest revision this watcher has not been sent yet
    callback: Callable[[list[Event]], None]
    on_compacted: Callable[[int], None] | None
    # the range as [lo, hi) (hi None: unbounded; lo None: selects nothing), for notify
    lo: bytes | None = None
    hi: bytes | None = None


def _event(v: Version, prev: Version | None) -> Event:
    return Event(
        type=EventType.DELETE if v[VERSION] == 0 else EventType.PUT, kv=as_key_value(v),
        prev_kv=None if prev is None else as_key_value(prev),
    )


def events_at(store: KVStore, rev: int, key: bytes, end: bytes | None) -> list[Event]:
    """The events of revision ``rev`` in [key, end), in the order the transaction made
    them. ``prev_kv`` is the key as read at ``rev - 1`` (None when it did not exist or that
    version was compacted away), as etcd's watch server fills it."""
    i = rev - store.log_start
    if i < 0 or i >= len(store.log):
        return []
    entry = store.log[i]
    if entry is None:
        return []
    index = store.index
    if isinstance(entry, bytes):
        if not in_range(entry, key, end):
            return []
        e = index[entry]
        return [_event(v, live_at(e, rev - 1)) for v in at(e, rev)]
    out: list[Event] = []
    seen: dict[bytes, int] = {}  # a key written twice in one txn: n-th mention, n-th version
    for k in entry:
        if not in_range(k, key, end):
            continue
        n = seen.get(k, 0)
        seen[k] = n + 1
        e = index[k]
        written = at(e, rev)
        if n < len(written):
            out.append(_event(written[n], live_at(e, rev - 1)))
    return out


def history(store: KVStore, key: bytes, end: bytes | None, start_rev: int) -> list[Event]:
    """Every kept event in [key, end) with revision >= ``start_rev``, in revision order."""
    if bounds(key, end) is None:
        return []
    out: list[Event] = []
    for r in range(max(start_rev, store.log_start), store.rev + 1):
        out.extend(events_at(store, r, key, end))
    return out


class WatcherGroup:
    """Registered watchers by id (ids increase from 1 and are never reused)."""

    __slots__ = ("_watchers", "_next_id")

    def __init__(self) -> None:
        self._watchers: dict[int, _Watcher] = {}
        self._next_id = 1

    def __len__(self) -> int:
        return len(self._watchers)

    def add(
        self,
        key: bytes,
        end: bytes | None,
        next_rev: int,
        callback: Callable[[list[Event]], None],
        on_compacted: Callable[[int], None] | None,
    ) -> int:
        wid = self._next_id
        self._next_id += 1
        span = bounds(key, end)
        self._watchers[wid] = _Watcher(
            key=key, end=end, next_rev=next_rev, callback=callback, on_compacted=on_compacted,
            lo=span[0] if span is not None else None, hi=span[1] if span is not None else None,
        )
        return wid

    def cancel(self, wid: int) -> None:
        self._watchers.pop(wid, None)

    def _deliver(self, wid: int, w: _Watcher, events: list[Event]) -> None:
        try:
            w.callback(events)
        except Exception:
            # A failing consumer must not break the writer (every member applies the same
            # commands): drop the watcher; its client sees the watch end.
            _log.exception("mvcc.watch_callback_failed", watcher_id=wid)
            self._watchers.pop(wid, None)

    def notify(self, rev: int, events: list[Event]) -> None:
        """Hand one committed revision's events to every watcher that is due for it."""
        if len(events) == 1:
            # The common case (one key per revision), checked against each watcher's bounds
            # without building a list per watcher: an apiserver keeps one watch per resource
            # type, a hundred or more on one member.
            k = events[0].kv.key
            for wid, w in list(self._watchers.items()):
                if rev < w.next_rev:  # started in the future
                    continue
                w.next_rev = rev + 1
                lo = w.lo
                if lo is not None and lo <= k and (w.hi is None or k < w.hi):
                    self._deliver(wid, w, events)
            return
        for wid, w in list(self._watchers.items()):
            if rev < w.next_rev:  # started in the future
                continue
            w.next_rev = rev + 1
            mine = [e for e in events if in_range(e.kv.key, w.key, w.end)]
            if mine:
                self._deliver(wid, w, mine)

    def after_restore(self, store: KVStore) -> None:
        """The state jumped to ``store.rev`` (a snapshot from the leader, after this member
        fell behind its log): send each watcher what it missed, in calls of at most
        ``RESTORE_BATCH_REVS`` revisions, or report compaction when the restored state no
        longer holds it. One call per revision made a member that caught up on thousands of
        revisions cancel its watches as slow consumers (the gRPC stream counts each call as
        a response waiting to be sent, and stops at 1,024) before it sent one event, where
        etcd sends them all."""
        for wid, w in list(self._watchers.items()):
            if w.next_rev > store.rev:
                continue
            if w.next_rev < store.compact_rev:
                self._watchers.pop(wid, None)
                if w.on_compacted is not None:
                    w.on_compacted(store.compact_rev)
                continue
            batch: list[Event] = []
            revs = 0
            for r in range(w.next_rev, store.rev + 1):
                evs = events_at(store, r, w.key, w.end)
                if not evs:
                    continue
                batch.extend(evs)
                revs += 1
                if revs == RESTORE_BATCH_REVS:
                    self._deliver(wid, w, batch)
                    batch, revs = [], 0
                    if wid not in self._watchers:
                        break
            if batch and wid in self._watchers:
                self._deliver(wid, w, batch)
            w.next_rev = store.rev + 1
