"""etcd's key-range conventions in one place.

A range is ``(key, end)``: ``end`` None selects ``key`` alone; ``end == b"\\0"`` selects every
key >= ``key``; otherwise the half-open interval ``[key, end)``, empty when ``end <= key``.
"""

from __future__ import annotations

from typing import Final

INFINITY: Final = b"\0"


def in_range(k: bytes, key: bytes, end: bytes | None) -> bool:
    """Whether ``k`` lies in the range ``(key, end)``."""
    if end is None:
        return k == key
    if end == INFINITY:
        return k >= key
    return key <= k < end


def bounds(key: bytes, end: bytes | None) -> tuple[bytes, bytes | None] | None:
    """The range as ``(lo, hi)`` with ``hi`` None meaning unbounded, or None when it selects
    no key at all. A single key ``k`` becomes ``[k, k + b"\\0")``: the smallest key above
    ``k`` in byte order is ``k`` followed by a zero byte."""
    if end is None:
        return key, key + b"\0"
    if end == INFINITY:
        return key, None
    if end <= key:
        return None
    return key, end
