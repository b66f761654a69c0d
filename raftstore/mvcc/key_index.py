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

We keep the generations flattened into one sequence of versions ordered by revision (a
tombstone closes its generation).

**Made for the cyclic garbage collector.** A store holds millions of versions, and every
object the collector tracks is walked by each full collection, which stops every thread of
the member (measured: 0.42-0.45 s of CPU for 580,000 tracked objects, three per key, in a
member loaded with 100,000 keys). So nothing here is a tracked object per key:

* a version is a plain tuple ``(key, create_revision, mod_revision, version, value,
  lease)`` (``Version``) of bytes and ints, which the collector stops tracking the first
  time it sees it (CPython untracks exact tuples of untracked items; a class instance, a
  named tuple included, stays tracked for life);
* a key's entry in the store's index (``Entry``) is its one version itself when it has one
  (most keys); a tuple of its versions when it has two to ``SMALL`` (a key written again,
  or deleted, since the last compaction): a plain tuple of untracked tuples, which the
  collector stops tracking too, at the latest in the second collection that sees it; and a
  list of versions (one tracked object) only beyond that, so that a key written many times
  between compactions is appended to, not copied. A delete of 60,000 keys used to leave
  60,000 lists (a version and its tombstone each) for the next full collection to walk:
  0.2 s pauses of a member under load (docs/benchmarks.md, sixteenth session).

A tombstone is ``(key, 0, rev, 0, b"", 0)``: ``version == 0``, only ``key`` and
``mod_revision`` set, exactly the kv of etcd's DELETE event. The store hands versions out as
``KeyValue`` (``as_key_value``), which has the same fields in the same order.

Several versions may share one ``mod_revision`` when a single write transaction touches the
key more than once (etcd's sub-revisions); they stay in the order they were written.

A list entry is changed in place only by the store that owns it (``KVStore.own_versions``:
a snapshot view may share it, copy-on-write); a tuple entry (one version, or several) is
immutable and replaced. A single version and a tuple of versions are both exact tuples:
the first item of a version is its key (bytes), that of a tuple of versions a version.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any, Final, TypeAlias, overload

from raftstore.mvcc.types import KeyValue

# (key, create_revision, mod_revision, version, value, lease), KeyValue's field order.
Version: TypeAlias = tuple[bytes, int, int, int, bytes, int]
# One version alone; a tuple of two to SMALL versions; or a list of more; versions ascending by
# mod_revision.
Entry: TypeAlias = Version | tuple[Version, ...] | list[Version]

# The most versions an entry keeps in a tuple; a key with more is a list (appended to in
# place rather than copied on every write).
SMALL: Final = 8

KEY: Final = 0
CREATE: Final = 1
MOD: Final = 2
VERSION: Final = 3
VALUE: Final = 4
LEASE: Final = 5

_MOD: Final = itemgetter(MOD)
_new_tuple: Final = tuple.__new__


def as_key_value(v: Version) -> KeyValue:
    """The ``KeyValue`` a range or an event hands out (a new object: the stored tuple stays
    untracked)."""
    return _new_tuple(KeyValue, v)


class KeyValues(Sequence[KeyValue]):
    """Stored versions seen as ``KeyValue``s, each built when it is read: what a delete of
    many keys returns, of which the caller mostly needs only the count (building 52,000
    ``KeyValue``s took a third of such a delete)."""

    __slots__ = ("_versions",)

    def __init__(self, vs: list[Version]) -> None:
        self._versions = vs

    def __len__(self) -> int:
        return len(self._versions)

    @overload
    def __getitem__(self, i: int) -> KeyValue: ...

    @overload
    def __getitem__(self, i: slice) -> list[KeyValue]: ...

    def __getitem__(self, i: int | slice) -> KeyValue | list[KeyValue]:
        if isinstance(i, slice):
            return [_new_tuple(KeyValue, v) for v in self._versions[i]]
        return _new_tuple(KeyValue, self._versions[i])

    def __iter__(self) -> Iterator[KeyValue]:
        for v in self._versions:
            yield _new_tuple(KeyValue, v)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeyValues):
            return self._versions == other._versions
        return list(self) == other if isinstance(other, list) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


def tombstone(key: bytes, rev: int) -> Version:
    """The tombstone of ``key`` at ``rev``: exactly the kv of etcd's DELETE event."""
    return (key, 0, rev, 0, b"", 0)


def is_tombstone(v: Version) -> bool:
    return v[VERSION] == 0


def _multi(entry: Entry) -> bool:
    """Whether ``entry`` holds several versions (a tuple of them or a list)."""
    return entry.__class__ is list or entry[0].__class__ is tuple


def versions(entry: Entry) -> Sequence[Version]:
    """The entry's versions, ascending by mod_revision."""
    return entry if _multi(entry) else (entry,)  # type: ignore[return-value]


def latest(entry: Entry) -> Version:
    last: Any = entry[-1]  # a version's last item is its lease (an int)
    return last if last.__class__ is tuple else entry  # type: ignore[return-value]


def latest_live(entry: Entry) -> Version | None:
    """The key's current version, None when deleted."""
    last: Any = entry[-1]
    if last.__class__ is not tuple:
        last = entry
    return None if last[VERSION] == 0 else last


def live_at(entry: Entry, rev: int) -> Version | None:
    """The version visible at ``rev``: the newest with mod_revision <= rev, unless that is a
    tombstone (or there is none)."""
    last: Any = entry[-1]
    if last.__class__ is not tuple:
        v: Version = entry  # type: ignore[assignment]
        return v if v[MOD] <= rev and v[VERSION] else None
    if last[MOD] <= rev:  # fast path: reading at the current revision
        return last if last[VERSION] else None
    revs: Sequence[Version] = entry  # type: ignore[assignment]
    i = bisect_right(revs, rev, key=_MOD)
    if i == 0:
        return None
    v = revs[i - 1]
    return v if v[VERSION] else None


def grown(entry: Entry, v: Version) -> Entry:
    """A new entry: ``entry``, which is not a list, with ``v`` added at a revision >= every
    kept one (a tuple while it holds at most SMALL versions, then a list)."""
    if entry[0].__class__ is not tuple:
        return (entry, v)  # type: ignore[return-value]
    if len(entry) < SMALL:
        return entry + (v,)  # type: ignore[operator]
    return [*entry, v]


def appended(entry: Entry | None, v: Version) -> Entry:
    """A new entry: ``entry`` (None: the key has none) with ``v`` added at a revision >= every
    kept one. Only for an entry the caller may change (see the module's doc): a list entry is
    changed in place and returned."""
    if entry is None:
        return v
    if entry.__class__ is list:
        entry.append(v)
        return entry
    return grown(entry, v)


def from_versions(vs: Sequence[Version]) -> Entry | None:
    """The entry holding ``vs`` (ascending; a list the entry may keep), None when empty."""
    n = len(vs)
    if n == 0:
        return None
    if n == 1:
        return vs[0]
    if n <= SMALL:
        return tuple(vs)
    return vs if vs.__class__ is list else list(vs)


def without_last(entry: Entry) -> Entry | None:
    """``entry`` with its newest version taken back (a write transaction's abort); None when
    none is left. The same ownership rule as ``appended``."""
    if not _multi(entry):
        return None
    if entry.__class__ is list:
        revs: list[Version] = entry
        revs.pop()
        return revs[0] if len(revs) == 1 else revs
    return from_versions(entry[:-1])  # type: ignore[arg-type]


def at(entry: Entry, rev: int) -> Sequence[Version]:
    """The versions written at exactly ``rev`` (usually one), in write order."""
    if not _multi(entry):
        v: Version = entry  # type: ignore[assignment]
        return (v,) if v[MOD] == rev else ()
    revs: Sequence[Version] = entry  # type: ignore[assignment]
    hi = bisect_right(revs, rev, key=_MOD)
    lo = hi
    while lo > 0 and revs[lo - 1][MOD] == rev:
        lo -= 1
    return revs[lo:hi]


def since(entry: Entry, rev: int) -> Sequence[Version]:
    """The versions with mod_revision > ``rev``."""
    if not _multi(entry):
        v: Version = entry  # type: ignore[assignment]
        return (v,) if v[MOD] > rev else ()
    revs: Sequence[Version] = entry  # type: ignore[assignment]
    return revs[bisect_right(revs, rev, key=_MOD) :]


def compacted(entry: Entry, at_rev: int) -> Entry | None:
    """``entry`` without every version superseded at ``at_rev``; None when nothing is left
    (the caller drops the key). The same ownership rule as ``appended``; a list that keeps at
    most SMALL versions becomes a tuple.

    The newest version at or below ``at_rev`` survives when it is a put (it is what a read at
    ``at_rev`` returns); when it is a tombstone it goes too, together with the whole
    generation it closed. Versions above ``at_rev`` are never touched."""
    if not _multi(entry):
        v: Version = entry  # type: ignore[assignment]
        return None if v[MOD] <= at_rev and v[VERSION] == 0 else entry
    revs: Sequence[Version] = entry  # type: ignore[assignment]
    i = bisect_right(revs, at_rev, key=_MOD)
    if i == 0:
        return entry
    cut = i if revs[i - 1][VERSION] == 0 else i - 1
    if not cut:
        return entry
    if revs.__class__ is list and len(revs) - cut > SMALL:
        del revs[:cut]
        return entry
    return from_versions(revs[cut:])
