from __future__ import annotations

import pytest

from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.kvstore_txn import TxnClosedError
from raftstore.mvcc.types import EventType, FutureRevError, LeaseNotFoundError, RangeOptions

from .helpers import get, keys, put


def test_one_revision_per_txn_and_read_your_writes() -> None:
    s = KVStore()
    put(s, b"a", b"0")  # 2
    t = s.write()
    assert t.range(b"a", None, RangeOptions()).kvs[0].value == b"0"
    prev = t.put(b"a", b"1")
    assert prev is not None and prev.value == b"0"
    t.put(b"b", b"1")
    r = t.range(b"a", b"\0", RangeOptions())
    assert [(kv.key, kv.value, kv.mod_revision) for kv in r.kvs] == [
        (b"a", b"1", 3), (b"b", b"1", 3)
    ]
    assert r.rev == 3
    # Outside the txn nothing is visible yet.
    assert get(s, b"a").value == b"0"  # type: ignore[union-attr]
    assert keys(s, b"b", None) == []
    deleted = t.delete_range(b"a", b"c")
    assert [kv.key for kv in deleted] == [b"a", b"b"]
    assert t.range(b"a", b"\0", RangeOptions()).count == 0
    # History inside the txn still works; the txn's own revision is not "future".
    assert t.range(b"a", None, RangeOptions(rev=2)).kvs[0].value == b"0"
    with pytest.raises(FutureRevError):
        t.range(b"a", None, RangeOptions(rev=4))
    assert t.end() == 3
    assert s.rev == 3
    assert keys(s, b"\0", b"\0") == []
    assert get(s, b"a", rev=2).value == b"0"  # type: ignore[union-attr]


def test_same_key_twice_in_one_txn() -> None:
    s = KVStore()
    t = s.write()
    t.put(b"a", b"1")
    t.put(b"a", b"2")
    assert t.end() == 2
    kv = get(s, b"a")
    assert kv is not None
    assert (kv.value, kv.version, kv.create_revision, kv.mod_revision) == (b"2", 2, 2, 2)
    _, hist = s.watch(b"a", None, 1, lambda evs: None)
    assert [(e.type, e.kv.value, e.kv.version) for e in hist] == [
        (EventType.PUT, b"1", 1), (EventType.PUT, b"2", 2)
    ]


def test_empty_txn_and_read_only_txn_do_not_bump() -> None:
    s = KVStore()
    assert s.write().end() == 1
    t = s.write()
    t.range(b"a", None, RangeOptions())
    t.delete_range(b"a", b"z")
    assert t.end() == 1


def test_put_with_unknown_lease_raises_and_changes_nothing() -> None:
    s = KVStore()
    t = s.write()
    with pytest.raises(LeaseNotFoundError):
        t.put(b"a", b"1", lease=42)
    assert t.end() == 1
    assert get(s, b"a") is None


def test_abort_undoes_everything() -> None:
    s = KVStore()
    s.lessor.grant(7, 10, now=0.0)
    put(s, b"a", b"0", lease=7)
    before = s.snapshot()
    t = s.write()
    t.put(b"a", b"1")  # detaches from lease 7
    t.put(b"new", b"1", lease=7)
    t.delete_range(b"a", None)
    t.abort()
    assert s.rev == 2
    assert s.snapshot() == before
    assert s.lessor.time_to_live(7, 0.0)[2] == [b"a"]
    with pytest.raises(TxnClosedError):
        t.end()


def test_put_returns_prev_and_delete_returns_last_versions() -> None:
    s = KVStore()
    t = s.write()
    assert t.put(b"a", b"1") is None
    t.end()
    t = s.write()
    prev = t.put(b"a", b"2")
    assert prev is not None and prev.value == b"1" and prev.mod_revision == 2
    t.end()
    t = s.write()
    (d,) = t.delete_range(b"a", None)
    assert d.value == b"2" and d.version == 2
    t.end()
