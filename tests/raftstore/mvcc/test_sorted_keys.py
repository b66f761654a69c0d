from __future__ import annotations

import random

from raftstore.mvcc.sorted_keys import SortedKeys


def test_random_inserts_removes_and_ranges() -> None:
    rnd = random.Random(1)
    sk = SortedKeys()
    ref: set[bytes] = set()
    for _ in range(5000):
        k = b"%06d" % rnd.randrange(20000)
        if k in ref:
            if rnd.random() < 0.5:
                sk.remove(k)
                ref.discard(k)
        else:
            sk.add(k)
            ref.add(k)
    assert list(sk) == sorted(ref)
    assert len(sk) == len(ref)
    for _ in range(200):
        lo = b"%06d" % rnd.randrange(20000)
        hi = b"%06d" % rnd.randrange(20000)
        assert list(sk.irange(lo, hi)) == sorted(k for k in ref if lo <= k < hi)
        assert list(sk.irange(lo, None)) == sorted(k for k in ref if lo <= k)
    sk.reset(sorted(ref)[::2])
    assert list(sk) == sorted(ref)[::2]


def test_share_is_copy_on_write() -> None:
    rnd = random.Random(2)
    sk = SortedKeys(b"%06d" % i for i in range(0, 6000, 2))
    ref = set(sk)
    shared: list[tuple[list[list[bytes]], list[bytes]]] = []
    for step in range(6000):
        if step % 500 == 0:
            shared.append((sk.share(), sorted(ref)))
        k = b"%06d" % rnd.randrange(6000)
        if k in ref:
            sk.remove(k)
            ref.discard(k)
        else:
            sk.add(k)  # also splits chunks
            ref.add(k)
    assert list(sk) == sorted(ref)
    assert list(sk.irange(b"", None)) == sorted(ref)
    for chunks, want in shared:
        assert [k for c in chunks for k in c] == want
