from __future__ import annotations

import msgpack
import pytest

from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.types import RangeOptions

from .helpers import delete, get, keys, put


def build() -> KVStore:
    s = KVStore()
    s.lessor.grant(5, 30, now=0.0)
    s.lessor.grant(9, 1, now=0.0)
    for i in range(50):
        put(s, b"k%02d" % (i % 17), b"v%d" % i, lease=5 if i % 4 == 0 else 0)
        if i % 6 == 0:
            delete(s, b"k%02d" % (i % 5))
    t = s.write()
    t.put(b"multi", b"1")
    t.put(b"multi", b"2")
    t.put(b"k03", b"x")
    t.end()
    s.compact(30)
    put(s, b"after", b"1", lease=9)
    return s


def test_snapshot_is_deterministic_and_round_trips_byte_identical() -> None:
    a, b = build(), build()
    snap = a.snapshot()
    assert snap == b.snapshot()
    c = KVStore()
    c.restore(snap)
    assert c.snapshot() == snap
    assert (c.rev, c.compact_rev) == (a.rev, a.compact_rev)
    assert c.hash_kv(0) == a.hash_kv(0)
    for rev in range(a.compact_rev, a.rev + 1):
        ra = a.range(b"\0", b"\0", RangeOptions(rev=rev))
        rc = c.range(b"\0", b"\0", RangeOptions(rev=rev))
        assert ra == rc
    _, ha = a.watch(b"\0", b"\0", a.compact_rev, lambda e: None)
    _, hc = c.watch(b"\0", b"\0", c.compact_rev, lambda e: None)
    assert ha == hc
    assert c.lessor.leases() == [5, 9]
    assert c.lessor.time_to_live(9, 0.0)[2] == [b"after"]
    # Both keep evolving identically.
    for s in (a, c):
        put(s, b"k01", b"new")
        delete(s, b"after")
        s.compact(s.rev - 1)
    assert a.snapshot() == c.snapshot()


def test_snapshot_is_plain_msgpack() -> None:
    s = build()
    state = msgpack.unpackb(s.snapshot(), raw=False)
    assert state["rev"] == s.rev
    assert state["compact_rev"] == 30
    assert [lid for lid, _, _ in state["leases"]] == [5, 9]


def test_restore_replaces_state() -> None:
    s = KVStore()
    put(s, b"old", b"1")
    s.lessor.grant(1, 10, now=0.0)
    s.restore(KVStore().snapshot())
    assert s.rev == 1
    assert get(s, b"old") is None
    assert s.lessor.leases() == []
    assert keys(s, b"\0", b"\0") == []


def test_restore_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        KVStore().restore(msgpack.packb({"format": 99}))


def test_restored_lease_deadline_is_now_plus_ttl() -> None:
    import time

    s = build()
    c = KVStore()
    c.restore(s.snapshot())
    ttl, remaining, _ = c.lessor.time_to_live(5, time.monotonic())
    assert ttl == 30 and 29 <= remaining <= 30
