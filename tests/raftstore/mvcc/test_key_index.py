from __future__ import annotations

import gc
import random

from raftstore.mvcc.key_index import (
    SMALL,
    Entry,
    KeyValues,
    Version,
    appended,
    as_key_value,
    at,
    compacted,
    from_versions,
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
    assert list(at(entry, 7)) == [v] and list(at(entry, 8)) == []
    assert list(since(entry, 6)) == [v] and list(since(entry, 7)) == []
    assert compacted(entry, 100) is v  # a live put survives any compaction
    assert compacted(tombstone(b"foo", 8), 8) is None
    assert without_last(entry) is None
    two = appended(entry, kv(8, 2, 7))
    assert two == (v, kv(8, 2, 7)) and without_last(two) == v


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
    assert list(at(entry, 1)) == []
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
    it holds more than SMALL versions is the only exception)."""
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
    for _ in range(SMALL):  # one key written often: a list
        txn = store.write()
        txn.put(b"/k/01999", b"z")
        txn.end()
    # A tuple is untracked by a collection that finds its items untracked, so a tuple of new
    # versions may take two (a young one, then the next, before the oldest generation).
    gc.collect()
    gc.collect()
    tracked = [k for k, e in store.index.items() if gc.is_tracked(e)]
    assert tracked == [b"/k/01999"] and isinstance(store.index[b"/k/01999"], list)
    assert len(versions(store.index[b"/k/01999"])) == SMALL + 1
    assert not any(gc.is_tracked(v) for e in store.index.values() for v in versions(e))
    # A range still hands out KeyValues.
    rr = store.range(b"/k/00000", None, RangeOptions())
    assert rr.kvs == [KeyValue(key=b"/k/00000", create_revision=2, mod_revision=2002,
                               version=2, value=b"y")]
    # Compaction leaves the often written key one version, untracked.
    store.compact(store.rev)
    gc.collect()
    gc.collect()
    assert not any(gc.is_tracked(e) for e in store.index.values())


def _reference_compacted(vs: list[Version], at_rev: int) -> list[Version]:
    """What compaction keeps, computed on a plain list (the rule in ``compacted``)."""
    below = [v for v in vs if v[2] <= at_rev]
    if not below:
        return vs
    cut = len(below) if below[-1][3] == 0 else len(below) - 1
    return vs[cut:]


def test_every_form_of_entry_answers_as_its_list_of_versions() -> None:
    """One version, a tuple of up to SMALL, a list of more: each read, append, abort and
    compaction gives what the same function gives on the plain list of versions, and the
    entry changes form as its length crosses SMALL."""
    rng = random.Random(7)
    for _ in range(300):
        vs: list[Version] = []
        rev, ver, create = 0, 0, 0
        entry: Entry | None = None
        for _ in range(rng.randrange(1, 2 * SMALL + 3)):
            rev += rng.choice((0, 1, 1, 2)) if vs else 1
            if ver and rng.random() < 0.2:
                v, ver = tombstone(b"foo", rev), 0
            else:
                if ver == 0:
                    create = rev
                ver += 1
                v = kv(rev, ver, create)
            vs.append(v)
            entry = appended(entry, v)
            n = len(vs)
            assert list(versions(entry)) == vs
            assert entry.__class__ is (list if n > SMALL else tuple)
            assert (entry is v) if n == 1 else (len(entry) == n)
        assert entry is not None
        assert from_versions(vs) == (entry if isinstance(entry, list) or len(vs) == 1
                                     else tuple(vs))
        for r in range(rev + 2):
            live = [v for v in vs if v[2] <= r]
            expect = live[-1] if live and live[-1][3] else None
            assert live_at(entry, r) == expect
            assert list(at(entry, r)) == [v for v in vs if v[2] == r]
            assert list(since(entry, r)) == [v for v in vs if v[2] > r]
            left = compacted(from_versions(list(vs)), r)  # type: ignore[arg-type]
            kept = _reference_compacted(vs, r)
            assert (list(versions(left)) if left is not None else []) == kept
            assert left is None or left.__class__ is (list if len(kept) > SMALL else tuple)
        back = without_last(from_versions(list(vs)))  # type: ignore[arg-type]
        assert (list(versions(back)) if back is not None else []) == vs[:-1]


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
