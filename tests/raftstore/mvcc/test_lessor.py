from __future__ import annotations

import pytest

from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.lease import MAX_LEASE_TTL
from raftstore.mvcc.types import (
    Event,
    EventType,
    LeaseExistsError,
    LeaseNotFoundError,
    LeaseTTLTooLargeError,
)

from .helpers import delete, get, put


def test_grant_minimum_ttl_and_duplicates() -> None:
    s = KVStore()
    le = s.lessor
    assert le.grant(1, 1, now=100.0) == 2
    assert le.grant(2, 60, now=100.0) == 60
    with pytest.raises(LeaseExistsError):
        le.grant(1, 10, now=100.0)
    with pytest.raises(LeaseTTLTooLargeError):
        le.grant(3, MAX_LEASE_TTL + 1, now=100.0)
    assert le.leases() == [1, 2]
    assert le.time_to_live(1, 100.0) == (2, 2, [])


def test_revoke_deletes_attached_keys_in_one_revision() -> None:
    s = KVStore()
    le = s.lessor
    le.grant(7, 10, now=0.0)
    put(s, b"c", b"1", lease=7)
    put(s, b"a", b"1", lease=7)
    put(s, b"b", b"1")
    batches: list[list[Event]] = []
    s.watch(b"\0", b"\0", 0, batches.append)
    assert le.revoke(7) == 5
    assert s.rev == 5
    assert get(s, b"a") is None and get(s, b"c") is None
    assert get(s, b"b") is not None
    assert len(batches) == 1
    assert [(e.type, e.kv.key, e.kv.mod_revision) for e in batches[0]] == [
        (EventType.DELETE, b"a", 5), (EventType.DELETE, b"c", 5)
    ]
    assert le.leases() == []
    with pytest.raises(LeaseNotFoundError):
        le.revoke(7)
    t = s.write()
    with pytest.raises(LeaseNotFoundError):
        t.put(b"x", b"1", lease=7)
    t.end()


def test_revoke_without_keys_does_not_bump_revision() -> None:
    s = KVStore()
    s.lessor.grant(1, 10, now=0.0)
    assert s.lessor.revoke(1) == 1


def test_put_without_lease_and_delete_detach() -> None:
    s = KVStore()
    le = s.lessor
    le.grant(1, 10, now=0.0)
    le.grant(2, 10, now=0.0)
    put(s, b"a", b"1", lease=1)
    put(s, b"b", b"1", lease=1)
    put(s, b"c", b"1", lease=1)
    assert le.time_to_live(1, 0.0)[2] == [b"a", b"b", b"c"]
    put(s, b"a", b"2")  # no lease: detaches
    delete(s, b"b")
    put(s, b"c", b"2", lease=2)  # moves to lease 2
    assert le.time_to_live(1, 0.0)[2] == []
    assert le.time_to_live(2, 0.0)[2] == [b"c"]
    assert le.lease_of(b"c") == 2 and le.lease_of(b"a") == 0
    rev = s.rev
    assert le.revoke(1) == rev  # nothing attached any more
    assert get(s, b"a") is not None


def test_keepalive_ttl_expired_promote() -> None:
    s = KVStore()
    le = s.lessor
    le.grant(1, 10, now=0.0)
    le.grant(2, 5, now=0.0)
    le.grant(3, 5, now=1.0)
    assert le.time_to_live(1, 3.5) == (10, 6, [])
    assert le.time_to_live(2, 100.0)[1] == 0
    assert le.expired(4.9) == []
    assert le.expired(5.0) == [2]
    assert le.expired(7.0) == [2, 3]
    assert le.keepalive(2, 6.0) == 5
    assert le.expired(7.0) == [3]
    assert le.expired(11.5) == [3, 1, 2]  # most overdue first
    le.promote(20.0)
    assert le.expired(24.0) == []
    assert le.expired(25.0) == [2, 3]
    assert le.time_to_live(1, 20.0)[1] == 10
    for op in (lambda: le.keepalive(9, 0.0), lambda: le.time_to_live(9, 0.0)):
        with pytest.raises(LeaseNotFoundError):
            op()


def test_lease_id_zero_is_reserved() -> None:
    s = KVStore()
    with pytest.raises(LeaseNotFoundError):
        s.lessor.grant(0, 10, now=0.0)
