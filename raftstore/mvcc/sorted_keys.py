"""A sorted set of byte keys with O(sqrt n) insertion and O(log n + k) range iteration.

The keys live in a list of sorted chunks (each at most ``2 * _LOAD`` long) plus the list of
each chunk's maximum, the layout of the well-known "sorted list of lists": inserting moves at
most one chunk's worth of pointers instead of the whole keyspace, and a range locates its first
chunk by bisecting the maxima. Invariants: chunks are non-empty, every key of chunk ``i`` is
smaller than every key of chunk ``i + 1``, ``_maxes[i] == _chunks[i][-1]``.

``share`` hands out the chunks to a snapshot view without copying the keys: chunks are then
copy-on-write (``_owned[i]`` is False while chunk ``i`` may be held by a view, and the chunk is
replaced by a copy before its first change).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Final

_LOAD: Final = 512


class SortedKeys:
    __slots__ = ("_chunks", "_maxes", "_len", "_owned")

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        self._chunks: list[list[bytes]] = []
        self._maxes: list[bytes] = []
        self._len = 0
        self._owned: list[bool] = []
        self.reset(keys)

    def reset(self, keys: Iterable[bytes]) -> None:
        """Replace the contents with ``keys``, which must be sorted and distinct."""
        flat = list(keys)
        self._chunks = [flat[i : i + _LOAD] for i in range(0, len(flat), _LOAD)]
        self._maxes = [c[-1] for c in self._chunks]
        self._len = len(flat)
        self._owned = [True] * len(self._chunks)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            yield from chunk

    def chunks(self) -> list[list[bytes]]:
        """The keys, ascending, as a list of chunks valid until the next change."""
        return self._chunks[:]

    def share(self) -> list[list[bytes]]:
        """The keys, ascending, as a list of chunks that later changes leave alone (O(number
        of chunks): every chunk becomes copy-on-write)."""
        self._owned = [False] * len(self._chunks)
        return self._chunks[:]

    def _own(self, i: int) -> list[bytes]:
        """Chunk ``i``, ready to be changed."""
        chunk = self._chunks[i]
        if not self._owned[i]:
            chunk = self._chunks[i] = chunk[:]
            self._owned[i] = True
        return chunk

    def add(self, key: bytes) -> None:
        """Insert ``key``, which must not be present."""
        maxes = self._maxes
        if not maxes:
            self._chunks.append([key])
            self._owned.append(True)
            maxes.append(key)
            self._len = 1
            return
        i = bisect_left(maxes, key)
        if i == len(maxes):
            # Past the largest key: the common case for increasing keys, an append.
            i -= 1
            chunk = self._own(i)
            chunk.append(key)
            maxes[i] = key
        else:
            chunk = self._own(i)
            insort(chunk, key)
        self._len += 1
        if len(chunk) > 2 * _LOAD:
            self._chunks[i : i + 1] = [chunk[:_LOAD], chunk[_LOAD:]]
            self._owned[i : i + 1] = [True, True]
            maxes[i : i + 1] = [chunk[_LOAD - 1], chunk[-1]]

    def remove(self, key: bytes) -> None:
        """Remove ``key``, which must be present."""
        i = bisect_left(self._maxes, key)
        chunk = self._chunks[i]
        j = bisect_left(chunk, key)
        if j == len(chunk) or chunk[j] != key:
            raise KeyError(key)
        chunk = self._own(i)
        del chunk[j]
        self._len -= 1
        if not chunk:
            del self._chunks[i]
            del self._owned[i]
            del self._maxes[i]
        else:
            self._maxes[i] = chunk[-1]

    def irange(self, lo: bytes, hi: bytes | None) -> Iterator[bytes]:
        """Keys k with lo <= k < hi (``hi`` None: unbounded), ascending."""
        chunks = self._chunks
        i = bisect_left(self._maxes, lo)
        if i == len(chunks):
            return
        j = bisect_left(chunks[i], lo)
        while i < len(chunks):
            chunk = chunks[i]
            if hi is not None and chunk[-1] >= hi:
                yield from islice(chunk, j, bisect_left(chunk, hi, j))
                return
            yield from islice(chunk, j, None)
            i += 1
            j = 0
