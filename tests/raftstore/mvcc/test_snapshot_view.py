"""``KVStore.snapshot_view`` / ``SnapshotView.write``: same bytes as a one-shot msgpack of the
state at capture time, isolation from later changes (copy-on-write key indexes), restore, and
chunked writing that lets other threads run."""

from __future__ import annotations

import io
import random
import threading
from typing import Any

import msgpack
import pytest

from raftstore.mvcc import snapshot as snapshot_mod
from raftstore.mvcc.key_index import as_key_value, versions
from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.snapshot import SnapshotView

from .helpers import delete, get, put
from .test_snapshot import build


def reference_snapshot(s: KVStore) -> bytes:
    """The snapshot format as one ``msgpack.packb`` of the whole state (the encoder that
    ``SnapshotView.write`` replaces), read straight from the live store."""
    index = s.index
    state: dict[str, Any] = {
        "format": 1,
        "rev": s.rev,
        "compact_rev": s.compact_rev,
        "kvs": [
            [k, [[kv.mod_revision, kv.create_revision, kv.version, kv.value, kv.lease]
                 for kv in map(as_key_value, versions(index[k]))]]
            for k in s.keys
        ],
        "log_start": s.log_start,
        "log": [[] if e is None else [e] if isinstance(e, bytes) else list(e) for e in s.log],
        "leases": s.lessor.dump(),
    }
    data: bytes = msgpack.packb(state, use_bin_type=True)
    return data


def written(view: SnapshotView) -> bytes:
    buf = io.BytesIO()
    view.write(buf)
    return buf.getvalue()


@pytest.fixture
def tiny_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of a few items, so that small stores cross every batch boundary."""
    monkeypatch.setattr(snapshot_mod, "_KEYS_PER_BATCH", 3)
    monkeypatch.setattr(snapshot_mod, "_BYTES_PER_BATCH", 8)
    monkeypatch.setattr(snapshot_mod, "_LOG_PER_BATCH", 4)
    monkeypatch.setattr(snapshot_mod, "_SORT_RUN", 2)
    monkeypatch.setattr(snapshot_mod, "_KEYS_PER_YIELD", 2)
    monkeypatch.setattr(snapshot_mod, "_ITEMS_PER_YIELD", 2)


def big_lease_store(n: int = 300) -> KVStore:
    s = KVStore()
    s.lessor.grant(1, 60, now=0.0)
    s.lessor.grant(2, 60, now=0.0)
    s.lessor.grant(3, 60, now=0.0)  # no keys
    rnd = random.Random(7)
    order = list(range(n))
    rnd.shuffle(order)  # keys attached in random order: the writer must sort them
    for i in order:
        put(s, b"k%05d" % i, b"v" * (i % 50), lease=1 if i % 3 else 2)
    delete(s, b"k00010", b"k00020")
    return s


@pytest.mark.parametrize("small", [False, True])
def test_write_is_byte_identical_to_one_shot_msgpack(
    small: bool, request: pytest.FixtureRequest
) -> None:
    if small:
        request.getfixturevalue("tiny_batches")
    for s in (KVStore(), build(), big_lease_store()):
        want = reference_snapshot(s)
        view = s.snapshot_view()
        assert written(view) == want
        assert written(view) == want  # a view can be written again
        assert s.snapshot() == want
        assert (view.rev, view.compact_rev, len(view)) == (s.rev, s.compact_rev, len(s.index))


def test_write_emits_many_chunks(tiny_batches: None) -> None:
    s = big_lease_store()
    chunks: list[bytes] = []

    class Sink:
        def write(self, b: bytes) -> int:
            chunks.append(bytes(b))
            return len(b)

    s.snapshot_view().write(Sink())  # type: ignore[arg-type]
    assert len(chunks) > 100
    assert b"".join(chunks) == reference_snapshot(s)


def test_view_is_unaffected_by_later_changes(tiny_batches: None) -> None:
    s = build()
    s.lessor.grant(77, 100, now=0.0)
    for i in range(20):
        put(s, b"lk%02d" % i, b"x", lease=77)
    want = reference_snapshot(s)
    view = s.snapshot_view()

    put(s, b"k01", b"overwritten")  # existing key
    put(s, b"brand-new", b"1", lease=5)  # new key
    delete(s, b"k0", b"k1")  # range delete: tombstones on many keys
    t = s.write()  # an aborted txn touches key indexes too
    t.put(b"multi", b"aborted")
    t.put(b"aborted-new", b"1")
    t.delete_range(b"after", None)
    t.abort()
    s.lessor.revoke(77)  # deletes the lease's keys and the lease
    s.lessor.revoke(9)
    s.lessor.grant(123, 10, now=0.0)
    s.lessor.keepalive(5, now=50.0)
    s.compact(s.rev)  # drops tombstones, whole keys, log entries
    assert written(view) == want

    s.restore(KVStore().snapshot())  # replaces everything
    put(s, b"k01", b"again")
    assert written(view) == want


def test_many_views_against_live_store() -> None:
    """Random writes, aborts, compactions, lease grants and revokes, with views taken along
    the way: every view keeps writing the bytes of its capture."""
    rnd = random.Random(3)
    s = KVStore()
    views: list[tuple[SnapshotView, bytes]] = []
    keys = [b"k%d" % i for i in range(30)]
    next_lease = 1
    for step in range(400):
        r = rnd.random()
        if r < 0.1:
            s.lessor.grant(next_lease, 60, now=0.0)
            next_lease += 1
        elif r < 0.15 and s.lessor.leases():
            s.lessor.revoke(rnd.choice(s.lessor.leases()))
        elif r < 0.2 and s.rev > s.compact_rev + 1:
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
        if rnd.random() < 0.1:
            views.append((s.snapshot_view(), reference_snapshot(s)))
            if len(views) > 10:
                views.pop(0)
        if step % 50 == 0:
            for view, want in views:
                assert written(view) == want
    for view, want in views:
        assert written(view) == want


def test_restore_from_a_view() -> None:
    s = build()
    view = s.snapshot_view()
    h = s.hash_kv(0)
    put(s, b"k01", b"later")
    data = written(view)
    c = KVStore()
    c.restore(data)
    assert c.snapshot() == data
    assert c.hash_kv(0) == h
    assert (c.rev, c.compact_rev) == (view.rev, view.compact_rev)
    assert get(c, b"k01") != get(s, b"k01")
    assert c.lessor.leases() == [5, 9]
    # The restored store and a view of it keep working.
    put(c, b"k01", b"restored")
    h2 = c.hash_kv(0)
    v2 = c.snapshot_view()
    put(c, b"k02", b"x")
    d = KVStore()
    d.restore(written(v2))
    assert d.hash_kv(0) == h2


def test_write_in_another_thread_while_the_store_changes() -> None:
    s = KVStore()
    s.lessor.grant(1, 60, now=0.0)
    for i in range(3000):
        put(s, b"key%05d" % i, b"x" * 100, lease=1 if i % 2 else 0)
    want = reference_snapshot(s)
    view = s.snapshot_view()
    out = io.BytesIO()
    th = threading.Thread(target=view.write, args=(out,))
    th.start()
    i = 0
    while th.is_alive() or i < 500:  # the owner keeps writing, as the raft thread does
        put(s, b"key%05d" % (i % 3000), b"new", lease=1 if i % 3 else 0)
        if i % 100 == 99:
            s.compact(s.rev - 50)
        i += 1
    th.join()
    assert out.getvalue() == want


def test_other_threads_run_while_a_large_view_is_written() -> None:
    """A busy counter thread advances between the chunks of one ``write`` of 20k keys."""
    s = KVStore()
    value = b"v" * 1024
    for lo in range(0, 20_000, 500):
        t = s.write()
        for i in range(lo, lo + 500):
            t.put(b"key%06d" % i, value)
        t.end()
    view = s.snapshot_view()

    counter = 0
    stop = False
    started = threading.Event()

    def count() -> None:
        nonlocal counter
        started.set()
        while not stop:
            counter += 1

    seen: list[int] = []  # the counter as each chunk is written

    class Sink(io.BytesIO):
        def write(self, b: Any) -> int:
            seen.append(counter)
            return super().write(b)

    th = threading.Thread(target=count)
    th.start()
    started.wait()
    out = Sink()
    try:
        before = counter
        view.write(out)
        after = counter
    finally:
        stop = True
        th.join()
    assert len(seen) >= 20_000 // snapshot_mod._KEYS_PER_BATCH
    assert after > before
    assert len(set(seen)) > 1  # it ran between chunks, not only before or after the write
    assert out.getvalue() == s.snapshot()
