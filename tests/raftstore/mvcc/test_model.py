"""Randomised check of KVStore against a naive model that copies the whole state at every
revision: ranges at every readable revision, watch history and live events, compaction,
snapshot/restore."""

from __future__ import annotations

import random

import pytest

from raftstore.mvcc.keyrange import in_range
from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.types import Event, EventType, KeyValue, RangeOptions

KEYS = [b"a", b"ab", b"b", b"ba", b"c", b"d", b"e"]


class Model:
    def __init__(self) -> None:
        self.states: dict[int, dict[bytes, KeyValue]] = {1: {}}
        self.events: list[Event] = []
        self.rev = 1

    def txn(self, ops: list[tuple[str, bytes, bytes | None]]) -> None:
        cur = dict(self.states[self.rev])
        before = self.states[self.rev]
        rev = self.rev + 1
        evs: list[Event] = []
        for op, key, arg in ops:
            if op == "put":
                assert arg is not None
                prev = cur.get(key)
                kv = KeyValue(
                    key=key,
                    create_revision=prev.create_revision if prev else rev,
                    mod_revision=rev,
                    version=prev.version + 1 if prev else 1,
                    value=arg,
                )
                cur[key] = kv
                evs.append(Event(type=EventType.PUT, kv=kv, prev_kv=before.get(key)))
            else:
                for k in sorted(k for k in cur if in_range(k, key, arg)):
                    del cur[k]
                    tomb = KeyValue(key=k, create_revision=0, mod_revision=rev, version=0,
                                    value=b"")
                    evs.append(Event(type=EventType.DELETE, kv=tomb, prev_kv=before.get(k)))
        if evs:
            self.rev = rev
            self.states[rev] = cur
            self.events.extend(evs)

    def range(self, key: bytes, end: bytes | None, rev: int) -> list[KeyValue]:
        st = self.states[rev]
        return [st[k] for k in sorted(st) if in_range(k, key, end)]


def random_range(rnd: random.Random) -> tuple[bytes, bytes | None]:
    key = rnd.choice(KEYS)
    return key, rnd.choice([None, b"\0", rnd.choice(KEYS), key + b"\0"])


@pytest.mark.parametrize("seed", range(8))
def test_against_model(seed: int) -> None:
    rnd = random.Random(seed)
    s = KVStore()
    m = Model()
    live: list[Event] = []
    s.watch(b"\0", b"\0", 0, live.extend)
    for step in range(300):
        ops: list[tuple[str, bytes, bytes | None]] = []
        used: set[bytes] = set()
        for _ in range(rnd.choice([1, 1, 1, 2, 3])):
            key = rnd.choice(KEYS)
            if key in used:  # like etcd's API: one change per key per txn
                continue
            used.add(key)
            if rnd.random() < 0.7:
                ops.append(("put", key, b"v%d" % step))
            else:
                ops.append(("del", key, rnd.choice([None, None, key + b"\0"])))
        # Range deletes may hit keys put earlier in the same txn; the model handles it.
        t = s.write()
        for op, key, arg in ops:
            if op == "put":
                assert arg is not None
                t.put(key, arg)
            else:
                t.delete_range(key, arg)
        t.end()
        m.txn(ops)
        assert s.rev == m.rev
        if rnd.random() < 0.05 and s.rev > s.compact_rev + 1:
            s.compact(rnd.randrange(s.compact_rev + 1, s.rev + 1))
        if rnd.random() < 0.05:
            other = KVStore()
            other.restore(s.snapshot())
            assert other.snapshot() == s.snapshot()
            assert other.hash_kv(0) == s.hash_kv(0)
            other.watchers = s.watchers
            s = other
        if step % 10 == 0:
            for _ in range(20):
                key, end = random_range(rnd)
                rev = rnd.randrange(max(s.compact_rev, 1), s.rev + 1)
                r = s.range(key, end, RangeOptions(rev=rev))
                want = m.range(key, end, rev)
                assert r.kvs == want, (key, end, rev)
                assert r.count == len(want)
            start = rnd.randrange(s.compact_rev + 1, s.rev + 2)
            key, end = random_range(rnd)
            _, hist = s.watch(key, end, start, lambda e: None)
            want_ev = [e for e in m.events
                       if e.kv.mod_revision >= start and in_range(e.kv.key, key, end)]
            assert hist == want_ev
    assert live == m.events
