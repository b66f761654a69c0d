from __future__ import annotations

import gc

from raftstore.mvcc.key_index import (
    Entry,
    KeyValues,
    Version,
    appended,
    as_key_value,
    at,
    compacted,
    latest_live,
    live_at,
    since,
    tombstone,
    versions,
    without_last,
)
from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.types import KeyValue, RangeOptions


def kv(rev: int, ver: int, create: int) -> Version:
    return (b"foo", create, rev, ver, b"v", 0)


def example() -> Entry:
    """The drawing in key_index.py: put 1, put 2, tombstone 3, put 4, tombstone 5."""
    entry: Entry | None = None
    for v in (kv(1, 1, 1), kv(2, 2, 1), tombstone(b"foo", 3), kv(4, 1, 4), tombstone(b"foo", 5)):
        entry = appended(entry, v)
    assert entry is not None
    return entry


def mods(entry: Entry | None) -> list[int]:
    return [] if entry is None else [v[2] for v in versions(entry)]


def test_live_at() -> None:
    entry = example()
    assert live_at(entry, 0) is None
    assert as_key_value(live_at(entry, 1)).value == b"v"  # type: ignore[arg-type]
    assert as_key_value(live_at(entry, 2)).version == 2  # type: ignore[arg-type]
    assert live_at(entry, 3) is None
    assert as_key_value(live_at(entry, 4)).create_revision == 4  # type: ignore[arg-type]
    assert live_at(entry, 5) is None
    assert latest_live(entry) is None


def test_one_version_is_the_entry_itself() -> None:
    v = kv(7, 1, 7)
    entry = appended(None, v)
    assert entry is v
    assert live_at(entry, 6) is None and live_at(entry, 7) is v and live_at(entry, 9) is v
    assert at(entry, 7) == [v] and at(entry, 8) == []
    assert list(since(entry, 6)) == [v] and list(since(entry, 7)) == []
    assert compacted(entry, 100) is v  # a live put survives any compaction
    assert compacted(tombstone(b"foo", 8), 8) is None
    assert without_last(entry) is None
    two = appended(entry, kv(8, 2, 7))
    assert isinstance(two, list) and without_last(two) == v


def test_compact_as_drawn() -> None:
    entry: Entry | None = example()
    assert entry is not None
    entry = compacted(entry, 1)
    assert mods(entry) == [1, 2, 3, 4, 5]
    assert entry is not None
    entry = compacted(entry, 2)
    assert mods(entry) == [2, 3, 4, 5]
    assert entry is not None
    entry = compacted(entry, 3)
    assert mods(entry) == [4, 5]
    assert entry is not None
    entry = compacted(entry, 4)
    assert mods(entry) == [4, 5]
    assert entry is not None
    assert compacted(entry, 5) is None


def test_compact_past_tombstone_in_one_step() -> None:
    assert mods(compacted(example(), 4)) == [4, 5]
    assert compacted(example(), 6) is None


def test_compaction_down_to_one_version_leaves_the_version_alone() -> None:
    entry = appended(appended(None, kv(1, 1, 1)), kv(2, 2, 1))
    left = compacted(entry, 2)
    assert left == kv(2, 2, 1) and not isinstance(left, list)


def test_at_and_since() -> None:
    entry: Entry | None = None
    for v in (kv(2, 1, 2), kv(2, 2, 2), kv(3, 3, 2)):
        entry = appended(entry, v)
    assert entry is not None
    assert [v[3] for v in at(entry, 2)] == [1, 2]
    assert at(entry, 1) == []
    assert [v[3] for v in since(entry, 2)] == [3]
    assert live_at(entry, 2)[3] == 2  # type: ignore[index]


def test_key_value_has_the_stored_tuple_fields() -> None:
    v = kv(3, 2, 1)
    out = as_key_value(v)
    assert isinstance(out, KeyValue)
    assert (out.key, out.create_revision, out.mod_revision, out.version, out.value,
            out.lease) == v


def test_the_store_keeps_no_object_the_collector_tracks_per_key() -> None:
    """A full collection walks every tracked object and stops every thread of a member: a
    store's versions and its keys' entries must not be among them (one list per key while
    it holds more than one version is the only exception)."""
    store = KVStore()
    for i in range(2000):
        txn = store.write()
        txn.put(b"/k/%05d" % i, b"x" * 10)
        txn.end()
    for i in range(10):  # ten keys with a second version
        txn = store.write()
        txn.put(b"/k/%05d" % i, b"y")
        txn.end()
    txn = store.write()
    txn.delete_range(b"/k/00010", b"/k/00020")  # ten tombstones
    txn.end()
    gc.collect()
    tracked = [store.index[k] for k in store.index if gc.is_tracked(store.index[k])]
    assert len(tracked) == 20 and all(isinstance(e, list) for e in tracked)
    assert not any(gc.is_tracked(v) for e in store.index.values() for v in versions(e))
    # A range still hands out KeyValues.
    rr = store.range(b"/k/00000", None, RangeOptions())
    assert rr.kvs == [KeyValue(key=b"/k/00000", create_revision=2, mod_revision=2002,
                               version=2, value=b"y")]


def test_a_delete_hands_out_key_values_only_when_read() -> None:
    store = KVStore()
    for i in range(3):
        txn = store.write()
        txn.put(b"/d/%d" % i, b"v%d" % i)
        txn.end()
    txn = store.write()
    deleted = txn.delete_range(b"/d/", b"/d0")
    txn.end()
    assert len(deleted) == 3
    assert [kv.value for kv in deleted] == [b"v0", b"v1", b"v2"]
    assert deleted[1] == KeyValue(key=b"/d/1", create_revision=3, mod_revision=3, version=1,
                                  value=b"v1")
    assert deleted[1:] == list(deleted)[1:] and deleted == list(deleted)
    assert deleted == KeyValues([tuple(kv) for kv in deleted])  # type: ignore[misc]
