"""Compaction (etcd's ``kvstore_compaction.go`` and ``index.Compact``), done synchronously.

Only keys changed after the previous compaction can hold anything to drop: compacting at
``old`` left every key with at most one version at or below ``old`` (its live one). So the
work is bounded by the writes since ``old``, found through the store's revision log, not by
the size of the keyspace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raftstore.mvcc.key_index import at, compacted

if TYPE_CHECKING:
    from raftstore.mvcc.kvstore import KVStore


def compact_store(store: KVStore, old: int, rev: int) -> None:
    """Drop what ``compact(rev)`` makes unreachable; ``old`` is the previous compact
    revision. The caller has checked ``old < rev <= store.rev``."""
    log, start = store.log, store.log_start
    touched: set[bytes] = set()
    for r in range(max(old + 1, start), rev + 1):
        entry = log[r - start]
        if entry is None:
            continue
        if isinstance(entry, bytes):
            touched.add(entry)
        else:
            touched.update(entry)

    index = store.index
    removed: list[bytes] = []
    for key in touched:
        found = index.get(key)
        if found is None:
            continue
        mine = store.own_versions(key, found)
        left = compacted(mine, rev)
        store.set_versions(key, mine, left)
        if left is None:
            removed.append(key)
    if len(removed) > 64 and len(removed) * 8 > len(store.keys):
        store.keys.reset(k for k in store.keys if k in index)
    else:
        for key in removed:
            store.keys.remove(key)

    # Trim the log to revisions >= rev. At ``rev`` itself only the keys whose version at
    # ``rev`` survived stay (a watch may start exactly at the compacted revision, as in
    # etcd, and then sees those puts, without their compacted prev_kv).
    if rev > start:
        del log[: rev - start]
        store.log_start = start = rev
    if rev >= start and log:
        entry = log[0]
        if entry is not None:
            keys = (entry,) if isinstance(entry, bytes) else entry
            kept: dict[bytes, None] = {}
            for key in reversed(keys):  # the last write of a key at ``rev`` is its survivor
                if key not in kept and (e := index.get(key)) is not None and at(e, rev):
                    kept[key] = None
            survivors = list(reversed(kept))
            log[0] = (
                None if not survivors else survivors[0] if len(survivors) == 1
                else tuple(survivors)
            )
