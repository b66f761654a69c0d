from __future__ import annotations

from raftstore.mvcc.kvstore import KVStore
from raftstore.mvcc.types import KeyValue, RangeOptions


def put(s: KVStore, key: bytes, value: bytes, lease: int = 0) -> int:
    t = s.write()
    t.put(key, value, lease)
    return t.end()


def delete(s: KVStore, key: bytes, end: bytes | None = None) -> int:
    t = s.write()
    t.delete_range(key, end)
    return t.end()


def get(s: KVStore, key: bytes, rev: int = 0) -> KeyValue | None:
    r = s.range(key, None, RangeOptions(rev=rev))
    return r.kvs[0] if r.kvs else None


def keys(s: KVStore, key: bytes, end: bytes | None, rev: int = 0, limit: int = 0) -> list[bytes]:
    return [kv.key for kv in s.range(key, end, RangeOptions(rev=rev, limit=limit)).kvs]
