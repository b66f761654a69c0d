"""Per-key version history: the in-memory counterpart of etcd's ``key_index.go``.

A key's life is a sequence of generations. A generation starts with the put that creates the
key, holds every later put, and ends with the tombstone that deletes it; the next put starts a
new generation (version back to 1, create_revision = that put's revision). etcd draws it so
(``t`` marks a tombstone):

    put(1); put(2); tombstone(3); put(4); tombstone(5)   on key "foo":

        generations:
            {empty}
            {4.0, 5.0(t)}
            {1.0, 2.0, 3.0(t)}

    compact(2): every generation that ended at or before 2 goes, and inside the generation
    that holds 2 only the newest version <= 2 survives (2.0 can still be read at rev 2):

            {empty}
            {4.0, 5.0(t)}
            {2.0, 3.0(t)}

    compact(4):                          compact(5):
            {empty}                              {empty}   -> the whole key is dropped
            {4.0, 5.0(t)}

We keep the generations flattened into one list of versions ordered by revision (a tombstone
closes its generation), which costs one list per key instead of one per generation. Each
version is stored as the immutable ``KeyValue`` that a range or a watch event hands out, so
reads allocate nothing; a tombstone is the DELETE event's kv itself (``version == 0``, only
``key`` and ``mod_revision`` set).

Several versions may share one ``mod_revision`` when a single write transaction touches the
key more than once (etcd's sub-revisions); they stay in the order they were written.
"""

from __future__ import annotations

from bisect import bisect_right
from operator import attrgetter
from typing import Final

from raftstore.mvcc.types import KeyValue

_MOD: Final = attrgetter("mod_revision")


def is_tombstone(kv: KeyValue) -> bool:
    return kv.version == 0


def tombstone(key: bytes, rev: int) -> KeyValue:
    """The tombstone of ``key`` at ``rev``: exactly the kv of etcd's DELETE event."""
    return KeyValue(key=key, create_revision=0, mod_revision=rev, version=0, value=b"")


class KeyIndex:
    """All kept versions of one key, ascending by ``mod_revision``. Never empty while it is
    in the store's index.

    ``epoch`` is the store's view epoch when this object was made: a ``KeyIndex`` older than
    the store's current epoch may be held by a ``SnapshotView`` and must not change; the store
    replaces it by a ``copy`` before writing (``KVStore.own_key_index``)."""

    __slots__ = ("revs", "epoch")

    def __init__(self, first: KeyValue | None = None, epoch: int = 0) -> None:
        # Created with its first version: a one-element list literal is allocated exactly,
        # where appending to an empty list reserves four slots (most keys keep one version).
        self.revs: list[KeyValue] = [first] if first is not None else []
        self.epoch = epoch

    def copy(self, epoch: int) -> KeyIndex:
        ki = KeyIndex(epoch=epoch)
        ki.revs = self.revs[:]  # exact size
        return ki

    def latest_live(self) -> KeyValue | None:
        """The key's current version, None when deleted."""
        last = self.revs[-1] if self.revs else None
        return None if last is None or is_tombstone(last) else last

    def live_at(self, rev: int) -> KeyValue | None:
        """The version visible at ``rev``: the newest with mod_revision <= rev, unless that is a
        tombstone (or there is none)."""
        revs = self.revs
        last = revs[-1]
        if last.mod_revision <= rev:  # fast path: reading at the current revision
            return None if is_tombstone(last) else last
        i = bisect_right(revs, rev, key=_MOD)
        if i == 0:
            return None
        kv = revs[i - 1]
        return None if is_tombstone(kv) else kv

    def append(self, kv: KeyValue) -> None:
        """Add a put or a tombstone at a revision >= every kept one."""
        self.revs.append(kv)

    def at(self, rev: int) -> list[KeyValue]:
        """The versions written at exactly ``rev`` (usually one), in write order."""
        revs = self.revs
        hi = bisect_right(revs, rev, key=_MOD)
        lo = hi
        while lo > 0 and revs[lo - 1].mod_revision == rev:
            lo -= 1
        return revs[lo:hi]

    def since(self, rev: int) -> list[KeyValue]:
        """The versions with mod_revision > ``rev``."""
        return self.revs[bisect_right(self.revs, rev, key=_MOD) :]

    def compact(self, at_rev: int) -> int:
        """Drop every version superseded at ``at_rev``; returns how many were dropped.

        The newest version at or below ``at_rev`` survives when it is a put (it is what a
        read at ``at_rev`` returns); when it is a tombstone it goes too, together with the
        whole generation it closed. Versions above ``at_rev`` are never touched. The caller
        drops the key when ``revs`` becomes empty."""
        revs = self.revs
        i = bisect_right(revs, at_rev, key=_MOD)
        if i == 0:
            return 0
        cut = i if is_tombstone(revs[i - 1]) else i - 1
        if cut:
            del revs[:cut]
        return cut
