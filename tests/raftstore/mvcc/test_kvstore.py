from __future__ import annotations

import pytest

from raftstore.mvcc.key_index import versions
from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.types import CompactedError, FutureRevError, KeyValue, RangeOptions

from .helpers import delete, get, keys, put


def test_empty_store_starts_at_revision_1() -> None:
    s = KVStore()
    assert s.rev == 1
    assert s.compact_rev == -1  # etcd's compactMainRev before any compaction
    r = s.range(b"a", None, RangeOptions())
    assert r.kvs == [] and r.count == 0 and r.rev == 1


def test_put_assigns_revisions_and_versions() -> None:
    s = KVStore()
    assert put(s, b"a", b"1") == 2
    assert put(s, b"a", b"2") == 3
    assert put(s, b"b", b"x") == 4
    assert get(s, b"a") == KeyValue(
        key=b"a", create_revision=2, mod_revision=3, version=2, value=b"2"
    )
    assert get(s, b"b") == KeyValue(
        key=b"b", create_revision=4, mod_revision=4, version=1, value=b"x"
    )


def test_delete_then_reput_starts_a_new_generation() -> None:
    s = KVStore()
    put(s, b"a", b"1")  # 2
    put(s, b"a", b"2")  # 3
    assert delete(s, b"a") == 4
    assert get(s, b"a") is None
    assert put(s, b"a", b"3") == 5
    assert get(s, b"a") == KeyValue(
        key=b"a", create_revision=5, mod_revision=5, version=1, value=b"3"
    )


def test_delete_of_missing_key_does_not_bump_revision() -> None:
    s = KVStore()
    put(s, b"a", b"1")
    assert delete(s, b"zz") == 2
    assert delete(s, b"b", b"c") == 2
    assert s.rev == 2
    delete(s, b"a")
    assert delete(s, b"a") == 3  # already a tombstone


def test_range_at_past_revisions() -> None:
    s = KVStore()
    put(s, b"a", b"1")  # 2
    put(s, b"b", b"1")  # 3
    put(s, b"a", b"2")  # 4
    delete(s, b"b")  # 5
    assert keys(s, b"a", b"\0", rev=1) == []
    assert keys(s, b"a", b"\0", rev=2) == [b"a"]
    assert keys(s, b"a", b"\0", rev=3) == [b"a", b"b"]
    assert get(s, b"a", rev=3).value == b"1"  # type: ignore[union-attr]
    assert get(s, b"a", rev=4).value == b"2"  # type: ignore[union-attr]
    assert keys(s, b"a", b"\0", rev=5) == [b"a"]
    r = s.range(b"a", b"\0", RangeOptions(rev=3))
    assert r.rev == 5  # etcd: the header revision is the current one
    with pytest.raises(FutureRevError):
        s.range(b"a", None, RangeOptions(rev=6))


def test_limit_and_count() -> None:
    s = KVStore()
    for i in range(10):
        put(s, b"k%02d" % i, b"v")
    put(s, b"l", b"v")
    r = s.range(b"k", b"l", RangeOptions(limit=3))
    assert [kv.key for kv in r.kvs] == [b"k00", b"k01", b"k02"]
    assert r.count == 10
    r = s.range(b"k", b"l", RangeOptions(count_only=True))
    assert r.kvs == [] and r.count == 10
    r = s.range(b"k", b"l", RangeOptions(limit=100))
    assert len(r.kvs) == 10 and r.count == 10
    r = s.range(b"k05", None, RangeOptions(count_only=True))
    assert r.kvs == [] and r.count == 1


def test_range_end_semantics() -> None:
    s = KVStore()
    for k in (b"a", b"ab", b"b", b"c", b"\xff"):
        put(s, k, b"v")
    assert keys(s, b"a", None) == [b"a"]
    assert keys(s, b"ab", None) == [b"ab"]
    assert keys(s, b"a", b"b") == [b"a", b"ab"]
    assert keys(s, b"b", b"\0") == [b"b", b"c", b"\xff"]
    assert keys(s, b"\0", b"\0") == [b"a", b"ab", b"b", b"c", b"\xff"]
    assert keys(s, b"b", b"b") == []
    assert keys(s, b"c", b"b") == []
    assert keys(s, b"zz", None) == []


def test_prefix_range_with_many_keys() -> None:
    s = KVStore()
    for i in range(3000):
        put(s, b"/registry/pods/ns%d/p%04d" % (i % 3, i), b"v")
    got = keys(s, b"/registry/pods/ns1/", b"/registry/pods/ns10")
    assert len(got) == 1000
    assert got == sorted(got)
    assert all(k.startswith(b"/registry/pods/ns1/") for k in got)


def test_compaction_errors_and_read_at_compact_rev() -> None:
    s = KVStore()
    for i in range(5):
        put(s, b"a", b"%d" % i)  # revs 2..6
    with pytest.raises(FutureRevError):
        s.compact(7)
    s.compact(4)
    assert s.compact_rev == 4
    with pytest.raises(CompactedError) as e:
        s.compact(4)
    assert e.value.compact_revision == 4
    with pytest.raises(CompactedError):
        s.compact(3)
    with pytest.raises(CompactedError) as e:
        s.range(b"a", None, RangeOptions(rev=3))
    assert e.value.compact_revision == 4
    assert get(s, b"a", rev=4).value == b"2"  # type: ignore[union-attr]
    assert get(s, b"a", rev=5).value == b"3"  # type: ignore[union-attr]
    assert get(s, b"a").value == b"4"  # type: ignore[union-attr]
    r = s.range(b"a", None, RangeOptions(rev=0))
    assert r.kvs[0].version == 5


def test_compaction_frees_versions_and_dead_keys() -> None:
    s = KVStore()
    for i in range(100):
        put(s, b"k%03d" % i, b"v0")
    for i in range(100):
        put(s, b"k%03d" % i, b"v1")
    for i in range(50):
        delete(s, b"k%03d" % i)
    assert s.version_count() == 250
    s.compact(s.rev)
    assert s.version_count() == 50
    assert len(s.index) == 50
    assert len(s.keys) == 50
    assert keys(s, b"k", b"l") == [b"k%03d" % i for i in range(50, 100)]
    # Compacting again with nothing new to drop is a no-op.
    put(s, b"x", b"1")
    s.compact(s.rev)
    assert s.version_count() == 51


def test_compaction_keeps_versions_above_rev() -> None:
    s = KVStore()
    put(s, b"a", b"1")  # 2
    put(s, b"a", b"2")  # 3
    delete(s, b"a")  # 4
    put(s, b"a", b"3")  # 5
    put(s, b"b", b"1")  # 6
    delete(s, b"b")  # 7
    s.compact(3)
    assert [v[2] for v in versions(s.index[b"a"])] == [3, 4, 5]
    s.compact(4)
    assert [v[2] for v in versions(s.index[b"a"])] == [5]
    assert get(s, b"a", rev=4) is None
    s.compact(6)
    assert [v[2] for v in versions(s.index[b"b"])] == [6, 7]
    s.compact(7)
    assert b"b" not in s.index
    assert keys(s, b"\0", b"\0") == [b"a"]


def test_hash_kv_equal_on_same_history_and_errors() -> None:
    def build() -> KVStore:
        s = KVStore()
        for i in range(20):
            put(s, b"k%d" % (i % 7), b"v%d" % i)
            if i % 5 == 0:
                delete(s, b"k%d" % (i % 3))
        s.compact(10)
        return s

    a, b = build(), build()
    assert a.hash_kv(0) == b.hash_kv(0)
    assert a.hash_kv(15) == b.hash_kv(15)
    assert a.hash_kv(0)[1:] == (10, a.rev)
    assert a.hash_kv(15)[0] != a.hash_kv(0)[0]
    put(b, b"extra", b"1")
    assert a.hash_kv(0)[0] != b.hash_kv(0)[0]
    assert a.hash_kv(a.rev)[0] == b.hash_kv(a.rev)[0]
    with pytest.raises(CompactedError):
        a.hash_kv(10)
    with pytest.raises(FutureRevError):
        a.hash_kv(a.rev + 1)


def test_compaction_dropping_most_keys_rebuilds_key_order() -> None:
    s = KVStore()
    for i in range(1500):
        put(s, b"k%04d" % i, b"v")
    t = s.write()
    t.delete_range(b"k0000", b"k1000")
    t.end()
    s.compact(s.rev)
    assert len(s.keys) == len(s.index) == 500
    assert keys(s, b"k", b"l") == [b"k%04d" % i for i in range(1000, 1500)]
    put(s, b"k0001", b"again")
    assert keys(s, b"k0000", b"k1001") == [b"k0001", b"k1000"]


def test_compact_zero_and_hash_before_any_compaction_as_etcd() -> None:
    """etcd 3.4 (checked against a real one): compactMainRev starts at -1, so HashKV reports
    compact_revision -1, Compact(0) succeeds (and makes it 0), Compact(-1) is compacted."""
    s = KVStore()
    assert s.hash_kv(0)[1] == -1
    assert s.hash_kv(-1)[1] == -1
    with pytest.raises(CompactedError) as e:
        s.compact(-1)
    assert e.value.compact_revision == -1
    s.compact(0)
    assert s.compact_rev == 0 and s.hash_kv(0)[1] == 0
    with pytest.raises(CompactedError):
        s.compact(0)
    put(s, b"a", b"1")
    s.compact(2)
    with pytest.raises(CompactedError):
        s.compact(2)
    assert s.hash_kv(0)[1] == 2
    restored = KVStore()
    restored.restore(KVStore().snapshot())
    assert restored.compact_rev == -1
