from __future__ import annotations

import pytest

from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.types import CompactedError, Event, EventType, KeyValue

from .helpers import delete, put


class Sink:
    def __init__(self) -> None:
        self.batches: list[list[Event]] = []

    def __call__(self, evs: list[Event]) -> None:
        self.batches.append(evs)

    @property
    def events(self) -> list[Event]:
        return [e for b in self.batches for e in b]


def test_history_then_live_without_gaps_or_duplicates() -> None:
    s = KVStore()
    put(s, b"a", b"1")  # 2
    put(s, b"b", b"1")  # 3
    put(s, b"a", b"2")  # 4
    sink = Sink()
    wid, hist = s.watch(b"a", b"\0", 3, sink)
    assert wid == 1
    assert [(e.kv.key, e.kv.mod_revision) for e in hist] == [(b"b", 3), (b"a", 4)]
    assert hist[1].prev_kv is not None and hist[1].prev_kv.value == b"1"
    assert hist[0].prev_kv is None
    delete(s, b"a")  # 5
    put(s, b"zz", b"1")  # 6
    assert [(e.type, e.kv.key, e.kv.mod_revision) for e in sink.events] == [
        (EventType.DELETE, b"a", 5), (EventType.PUT, b"zz", 6)
    ]
    d = sink.events[0]
    assert d.kv == KeyValue(key=b"a", create_revision=0, mod_revision=5, version=0, value=b"")
    assert d.prev_kv is not None and d.prev_kv.value == b"2"
    s.cancel_watch(wid)
    s.cancel_watch(wid)
    s.cancel_watch(999)
    put(s, b"a", b"9")
    assert len(sink.events) == 2


def test_one_txn_is_one_callback_in_operation_order() -> None:
    s = KVStore()
    put(s, b"c", b"0")
    sink = Sink()
    s.watch(b"a", b"\0", 0, sink)
    t = s.write()
    t.put(b"b", b"1")
    t.put(b"a", b"1")
    t.delete_range(b"c", None)
    t.end()
    assert len(sink.batches) == 1
    assert [(e.type, e.kv.key) for e in sink.batches[0]] == [
        (EventType.PUT, b"b"), (EventType.PUT, b"a"), (EventType.DELETE, b"c")
    ]
    _, hist = s.watch(b"a", b"\0", 3, lambda e: None)
    assert [(e.type, e.kv.key) for e in hist] == [(e.type, e.kv.key) for e in sink.batches[0]]
    assert hist == sink.batches[0]


def test_watch_filters_single_key_and_range() -> None:
    s = KVStore()
    one, rng = Sink(), Sink()
    s.watch(b"a", None, 0, one)
    s.watch(b"a", b"b", 0, rng)
    for k in (b"a", b"ab", b"b", b"a"):
        put(s, k, b"v")
    assert [e.kv.key for e in one.events] == [b"a", b"a"]
    assert [e.kv.key for e in rng.events] == [b"a", b"ab", b"a"]


def test_watch_from_future_revision() -> None:
    s = KVStore()
    sink = Sink()
    _, hist = s.watch(b"a", None, 4, sink)
    assert hist == []
    put(s, b"a", b"1")  # 2
    put(s, b"a", b"2")  # 3
    put(s, b"a", b"3")  # 4
    assert [e.kv.mod_revision for e in sink.events] == [4]


def test_watch_compacted_revision() -> None:
    s = KVStore()
    put(s, b"a", b"1")  # 2
    put(s, b"b", b"1")  # 3
    delete(s, b"b")  # 4
    put(s, b"a", b"2")  # 5
    put(s, b"c", b"1")  # 6
    s.compact(5)
    with pytest.raises(CompactedError) as e:
        s.watch(b"a", b"\0", 4, lambda evs: None)
    assert e.value.compact_revision == 5
    # Exactly at compact_rev is allowed (etcd: minRev < compactRev is compacted): the put
    # that survived at 5 arrives without its compacted prev_kv.
    _, hist = s.watch(b"a", b"\0", 5, lambda evs: None)
    assert [(e.kv.key, e.kv.mod_revision, e.prev_kv) for e in hist] == [
        (b"a", 5, None), (b"c", 6, None)
    ]
    _, hist = s.watch(b"a", b"\0", 0, lambda evs: None)
    assert hist == []


def test_compaction_at_a_delete_drops_that_event() -> None:
    s = KVStore()
    put(s, b"a", b"1")  # 2
    delete(s, b"a")  # 3
    put(s, b"b", b"1")  # 4
    s.compact(3)
    _, hist = s.watch(b"\0", b"\0", 3, lambda evs: None)
    assert [(e.kv.key, e.kv.mod_revision) for e in hist] == [(b"b", 4)]


def test_history_matches_live_stream() -> None:
    s = KVStore()
    live = Sink()
    s.watch(b"\0", b"\0", 0, live)
    for i in range(200):
        k = b"k%d" % (i % 13)
        if i % 7 == 3:
            delete(s, k)
        else:
            put(s, k, b"v%d" % i)
    _, hist = s.watch(b"\0", b"\0", 1, lambda evs: None)
    assert hist == live.events
    revs = [e.kv.mod_revision for e in hist]
    assert revs == sorted(revs)


def test_failing_callback_drops_only_that_watcher() -> None:
    s = KVStore()

    def boom(evs: list[Event]) -> None:
        raise RuntimeError("consumer bug")

    ok = Sink()
    s.watch(b"a", None, 0, boom)
    s.watch(b"a", None, 0, ok)
    put(s, b"a", b"1")
    put(s, b"a", b"2")
    assert len(ok.events) == 2
    assert len(s.watchers) == 1


def test_watcher_survives_restore_and_gets_missed_events() -> None:
    src = KVStore()
    dst = KVStore()
    put(src, b"a", b"1")
    dst.restore(src.snapshot())
    sink = Sink()
    dst.watch(b"a", b"\0", 0, sink)
    put(src, b"a", b"2")  # 3
    put(src, b"b", b"1")  # 4
    dst.restore(src.snapshot())
    assert [(e.kv.key, e.kv.mod_revision) for e in sink.events] == [(b"a", 3), (b"b", 4)]
    assert len(sink.batches) == 1  # what it missed comes in one call
    put(dst, b"a", b"3")
    assert sink.events[-1].kv.mod_revision == 5


def test_a_long_catch_up_after_restore_comes_in_batches_of_revisions() -> None:
    """A member that installs a snapshot thousands of revisions ahead hands each watcher
    what it missed in calls of at most RESTORE_BATCH_REVS revisions (etcd's
    watchBatchMaxRevs), not one call per revision: the gRPC stream counts calls against its
    slow-consumer limit (1,024), and cancelled such watches before sending any event."""
    from raftstore.mvcc.watchable_store import RESTORE_BATCH_REVS

    src = KVStore()
    dst = KVStore()
    put(src, b"a", b"0")
    dst.restore(src.snapshot())
    sink = Sink()
    dst.watch(b"a", b"b", 0, sink)
    n = 2 * RESTORE_BATCH_REVS + 500
    for i in range(n):
        put(src, b"a%d" % i, b"x")
        put(src, b"z", b"outside the range")  # revisions without an event for the watcher
    dst.restore(src.snapshot())
    assert [len({e.kv.mod_revision for e in b}) for b in sink.batches] == [
        RESTORE_BATCH_REVS, RESTORE_BATCH_REVS, 500]
    assert [e.kv.key for e in sink.events] == [b"a%d" % i for i in range(n)]
    revs = [e.kv.mod_revision for e in sink.events]
    assert revs == sorted(revs)
    put(dst, b"a", b"live")
    assert sink.events[-1].kv.value == b"live"


def test_watcher_compacted_by_restore() -> None:
    src = KVStore()
    dst = KVStore()
    put(src, b"a", b"1")
    dst.restore(src.snapshot())
    compacted: list[int] = []
    sink = Sink()
    dst.watch(b"a", b"\0", 0, sink, on_compacted=compacted.append)
    put(src, b"a", b"2")  # 3
    put(src, b"a", b"3")  # 4
    src.compact(4)
    dst.restore(src.snapshot())
    assert compacted == [4]
    assert sink.events == []
    assert len(dst.watchers) == 0


def test_single_key_writes_reach_exactly_the_watchers_whose_range_holds_them() -> None:
    """One event per revision takes notify's fast path: each kind of range (one key, a
    prefix, everything from a key, an empty range) against keys at and around its edges."""
    s = KVStore()
    ranges = {"one": (b"/r/b", None), "prefix": (b"/r/", b"/r0"), "from": (b"/r/b", b"\0"),
              "empty": (b"/r/b", b"/r/a"), "upto": (b"/r/a", b"/r/b")}
    sinks = {name: Sink() for name in ranges}
    for name, (key, end) in ranges.items():
        s.watch(key, end, 0, sinks[name])
    for k in (b"/r/a", b"/r/b", b"/r/b\x00", b"/r0", b"/q"):
        put(s, k, b"v")
    got = {name: [e.kv.key for e in sink.events] for name, sink in sinks.items()}
    assert got == {
        "one": [b"/r/b"],
        "prefix": [b"/r/a", b"/r/b", b"/r/b\x00"],
        "from": [b"/r/b", b"/r/b\x00", b"/r0"],
        "empty": [],
        "upto": [b"/r/a"],
    }
