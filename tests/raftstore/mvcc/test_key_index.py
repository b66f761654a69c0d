from __future__ import annotations

from raftstore.mvcc.key_index import KeyIndex, tombstone
from raftstore.mvcc.types import KeyValue


def kv(rev: int, ver: int, create: int) -> KeyValue:
    return KeyValue(key=b"foo", create_revision=create, mod_revision=rev, version=ver, value=b"v")


def example() -> KeyIndex:
    """The drawing in key_index.py: put 1, put 2, tombstone 3, put 4, tombstone 5."""
    ki = KeyIndex()
    for v in (kv(1, 1, 1), kv(2, 2, 1), tombstone(b"foo", 3), kv(4, 1, 4), tombstone(b"foo", 5)):
        ki.append(v)
    return ki


def mods(ki: KeyIndex) -> list[int]:
    return [v.mod_revision for v in ki.revs]


def test_live_at() -> None:
    ki = example()
    assert ki.live_at(0) is None
    assert ki.live_at(1).value == b"v"  # type: ignore[union-attr]
    assert ki.live_at(2).version == 2  # type: ignore[union-attr]
    assert ki.live_at(3) is None
    assert ki.live_at(4).create_revision == 4  # type: ignore[union-attr]
    assert ki.live_at(5) is None
    assert ki.latest_live() is None


def test_compact_as_drawn() -> None:
    ki = example()
    assert ki.compact(1) == 0
    assert ki.compact(2) == 1 and mods(ki) == [2, 3, 4, 5]
    assert ki.compact(3) == 2 and mods(ki) == [4, 5]
    assert ki.compact(4) == 0 and mods(ki) == [4, 5]
    assert ki.compact(5) == 2 and mods(ki) == []


def test_compact_past_tombstone_in_one_step() -> None:
    ki = example()
    ki.compact(4)
    assert mods(ki) == [4, 5]
    ki = example()
    ki.compact(6)
    assert mods(ki) == []


def test_at_and_since() -> None:
    ki = KeyIndex()
    ki.append(kv(2, 1, 2))
    ki.append(kv(2, 2, 2))
    ki.append(kv(3, 3, 2))
    assert [v.version for v in ki.at(2)] == [1, 2]
    assert ki.at(1) == []
    assert [v.version for v in ki.since(2)] == [3]
    assert ki.live_at(2).version == 2  # type: ignore[union-attr]
