"""``SnapshotView.write_delta`` and ``KVStore.restore`` of a full snapshot followed by deltas:
the chain restores exactly the state at the last capture (same deterministic snapshot bytes),
a delta that does not follow is refused, and a compaction ends a chain."""

from __future__ import annotations

import io
import random

import msgpack
import pytest

from raftstore.mvcc import snapshot as snapshot_mod
from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.snapshot import SnapshotView

from .helpers import delete, get, put


def full(view: SnapshotView) -> bytes:
    buf = io.BytesIO()
    view.write(buf)
    return buf.getvalue()


def delta(view: SnapshotView, base_rev: int) -> bytes:
    assert view.can_follow(base_rev)
    buf = io.BytesIO()
    view.write_delta(buf, base_rev)
    return buf.getvalue()


def random_step(s: KVStore, rnd: random.Random, step: int, keys: list[bytes],
                compact: bool) -> None:
    r = rnd.random()
    if r < 0.08:
        s.lessor.grant(max(s.lessor.leases(), default=0) + 1, 60, now=0.0)
    elif r < 0.12 and s.lessor.leases():
        s.lessor.revoke(rnd.choice(s.lessor.leases()))
    elif compact and r < 0.15 and s.rev > s.compact_rev + 1:
        s.compact(rnd.randrange(s.compact_rev + 1, s.rev + 1))
    else:
        t = s.write()
        for _ in range(rnd.randint(1, 4)):
            k = rnd.choice(keys)
            if rnd.random() < 0.7:
                leases = s.lessor.leases()
                lease = rnd.choice(leases) if leases and rnd.random() < 0.4 else 0
                t.put(k, b"v%d" % step, lease)
            else:
                t.delete_range(k, rnd.choice([None, k + b"\0", b"\0"]))
        if rnd.random() < 0.1:
            t.abort()
        else:
            t.end()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("small_batches", [False, True])
def test_a_chain_of_deltas_restores_the_state_of_its_last_capture(
    seed: int, small_batches: bool, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Random writes (multi-key transactions, deletes, aborts, lease grants and revokes, and
    compactions, which start a new chain with a full snapshot, as the applier does), with a
    frame captured every few steps: restoring the chain so far gives the store's state at
    the last capture, down to the bytes of its full snapshot."""
    if small_batches:
        monkeypatch.setattr(snapshot_mod, "_KEYS_PER_BATCH", 3)
        monkeypatch.setattr(snapshot_mod, "_BYTES_PER_BATCH", 8)
        monkeypatch.setattr(snapshot_mod, "_LOG_PER_BATCH", 4)
        monkeypatch.setattr(snapshot_mod, "_SORT_RUN", 2)
        monkeypatch.setattr(snapshot_mod, "_KEYS_PER_YIELD", 2)
        monkeypatch.setattr(snapshot_mod, "_ITEMS_PER_YIELD", 2)
    monkeypatch.setattr(snapshot_mod, "_KEYS_PER_YIELD", 2)
    monkeypatch.setattr(snapshot_mod, "_ITEMS_PER_YIELD", 2)
    rnd = random.Random(seed)
    s = KVStore()
    keys = [b"k%d" % i for i in range(40)]
    chain: list[bytes] = []
    base = (0, 0)  # (rev, compact_rev) of the last frame
    deltas = 0
    for step in range(600):
        random_step(s, rnd, step, keys, compact=True)
        if rnd.random() < 0.08:
            view = s.snapshot_view()
            if chain and base[1] == view.compact_rev and view.can_follow(base[0]):
                chain.append(delta(view, base[0]))
                deltas += 1
            else:
                chain = [full(view)]
            base = (view.rev, view.compact_rev)
            want = s.snapshot()
            # Later writes must not reach into what the view holds.
            random_step(s, rnd, step, keys, compact=False)
            got = KVStore()
            got.restore(chain[0], chain[1:])
            assert got.snapshot() == want
            assert got.snapshot_view().can_follow(base[0])
    assert deltas > 10


def test_a_delta_holds_only_what_changed() -> None:
    s = KVStore()
    for i in range(1000):
        put(s, b"key%04d" % i, b"x" * 100)
    view = s.snapshot_view()
    base = view.rev
    whole = full(view)
    put(s, b"key0005", b"new")
    delete(s, b"key0007")
    put(s, b"added", b"1")
    d = delta(s.snapshot_view(), base)
    assert len(d) < len(whole) // 50
    state = msgpack.unpackb(d, raw=False)
    assert state["base_rev"] == base
    assert [k for k, _ in state["kvs"]] == [b"key0005", b"key0007", b"added"]
    assert state["log"] == [[0], [1], [2]]  # positions in kvs
    got = KVStore()
    got.restore(whole, [d])
    assert got.snapshot() == s.snapshot()
    assert get(got, b"key0007") is None
    assert get(got, b"key0005", rev=base) is not None


def test_a_delta_that_does_not_follow_is_refused_and_changes_nothing() -> None:
    s = KVStore()
    put(s, b"a", b"1")
    v1 = s.snapshot_view()
    one = full(v1)
    put(s, b"b", b"2")
    v2 = s.snapshot_view()
    d2 = delta(v2, v1.rev)
    put(s, b"c", b"3")
    d3 = delta(s.snapshot_view(), v2.rev)
    target = KVStore()
    put(target, b"z", b"0")
    before = target.snapshot()
    with pytest.raises(ValueError, match="applies to revision"):
        target.restore(one, [d3])  # skips d2
    with pytest.raises(ValueError, match="applies to revision"):
        target.restore(one, [d2, d2])
    with pytest.raises(ValueError):
        target.restore(one, [b"\x93garbage"])
    assert target.snapshot() == before
    target.restore(one, [d2, d3])
    assert target.snapshot() == s.snapshot()


def test_a_compaction_ends_the_chain() -> None:
    """After a compaction past the last frame, no delta can follow it: the log that would name
    what changed is gone (``can_follow``). One that leaves the log (compacting below the last
    frame) still changes the compacted revision, which a delta must not: restore refuses."""
    s = KVStore()
    for i in range(10):
        put(s, b"k", b"%d" % i)
    v1 = s.snapshot_view()
    one = full(v1)
    s.compact(5)
    put(s, b"k", b"later")
    v2 = s.snapshot_view()
    assert v2.can_follow(v1.rev)  # the log still reaches back, but the compacted rev moved
    with pytest.raises(ValueError, match="compacted"):
        KVStore().restore(one, [delta(v2, v1.rev)])
    put(s, b"k", b"last")
    s.compact(s.rev)
    assert not s.snapshot_view().can_follow(v1.rev)


def test_a_delta_names_each_key_once() -> None:
    """A DeleteRange of many long keys: the delta holds each key once (its tombstone), and
    the log entry refers to them by position."""
    s = KVStore()
    for i in range(2000):
        put(s, b"/prefix/%0250d" % i, b"v")
    view = s.snapshot_view()
    t = s.write()
    t.delete_range(b"/prefix/", b"/prefix0")
    t.end()
    d = delta(s.snapshot_view(), view.rev)
    assert 2000 * 258 < len(d) < 2000 * 300
    got = KVStore()
    got.restore(full(view), [d])
    assert got.snapshot() == s.snapshot()


def test_the_writer_lets_go_of_the_gil_every_few_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A member's event loop and raft thread wait for the GIL whenever the snapshot writer
    holds it: between two yields it packs at most ``_KEYS_PER_YIELD`` keys' rows, and a log
    entry of many keys (a DeleteRange's) is gone through in steps, both when the delta finds
    each key's position and when it packs the positions. (With a yield per 512 keys, puts
    sent to a member writing a delta took up to 0.65 s: docs/benchmarks.md.)"""
    n = 5000
    s = KVStore()
    t = s.write()
    for i in range(n):
        t.put(b"/k/%06d" % i, b"v")  # one revision, one log entry of n keys
    t.end()
    view = s.snapshot_view()
    t = s.write()
    t.delete_range(b"/k/", b"/k0")  # again one log entry of n keys
    t.end()
    after = s.snapshot_view()

    rows = 0
    at_yield: list[int] = []  # how many keys' rows were packed at each yield
    real_since, real_versions = snapshot_mod.since, snapshot_mod.versions

    def counting_since(entry: object, rev: int) -> object:
        nonlocal rows
        rows += 1
        return real_since(entry, rev)  # type: ignore[arg-type]

    def counting_versions(entry: object) -> object:
        nonlocal rows
        rows += 1
        return real_versions(entry)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_mod, "since", counting_since)
    monkeypatch.setattr(snapshot_mod, "versions", counting_versions)
    monkeypatch.setattr(snapshot_mod, "_yield", lambda: at_yield.append(rows))

    steps = n // snapshot_mod._ITEMS_PER_YIELD
    after.write_delta(io.BytesIO(), view.rev)
    assert rows == n
    gaps = [b - a for a, b in zip(at_yield[:-1], at_yield[1:], strict=True)]
    assert max(gaps) <= snapshot_mod._KEYS_PER_YIELD
    assert at_yield.count(0) >= steps  # finding the positions of the entry's n keys
    assert at_yield.count(n) >= steps  # packing them

    rows, at_yield[:] = 0, []
    after.write(io.BytesIO())  # the whole state: the same bound
    assert rows == n
    gaps = [b - a for a, b in zip(at_yield[:-1], at_yield[1:], strict=True)]
    assert max(gaps) <= snapshot_mod._KEYS_PER_YIELD
    assert at_yield.count(n) >= 2 * steps  # the log's two entries of n keys
