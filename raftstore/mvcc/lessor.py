"""``LessorImpl``: leases over a ``KVStore`` (etcd's ``lease/lessor.go`` without its timers).

Replicated state is each lease's id, granted TTL and attached keys; the attachment is kept
equal to the ``lease`` field of each key's live version by the store's write transaction
(put attaches and detaches, delete detaches). Deadlines are member-local monotonic seconds,
reset on grant, keep-alive, promotion and restore.

A lease's key set may be held by a snapshot view (``capture``): it is then copied before its
next change, as the store does for lists of versions (``_Lease.epoch`` against the store's
``view_epoch``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from raftstore.mvcc.key_index import LEASE, latest_live
from raftstore.mvcc.lease import MAX_LEASE_TTL, MIN_LEASE_TTL
from raftstore.mvcc.types import LeaseExistsError, LeaseNotFoundError, LeaseTTLTooLargeError

if TYPE_CHECKING:
    from raftstore.mvcc.kvstore import KVStore


@dataclass(slots=True, kw_only=True)
class _Lease:
    ttl: int
    deadline: float
    keys: set[bytes] = field(default_factory=set)
    epoch: int = 0  # the store's view epoch when ``keys`` was made


class LessorImpl:
    """Implements ``raftstore.mvcc.lease.Lessor``. Created by ``KVStore`` as ``store.lessor``."""

    __slots__ = ("_store", "_leases")

    def __init__(self, store: KVStore) -> None:
        self._store = store
        self._leases: dict[int, _Lease] = {}

    def __contains__(self, lease_id: object) -> bool:
        return lease_id in self._leases

    def _get(self, lease_id: int) -> _Lease:
        lease = self._leases.get(lease_id)
        if lease is None:
            raise LeaseNotFoundError()
        return lease

    def grant(self, lease_id: int, ttl: int, now: float) -> int:
        """Raises LeaseExistsError, LeaseTTLTooLargeError (ttl > MAX_LEASE_TTL), and, as
        etcd does for the reserved id 0 (no lease), LeaseNotFoundError."""
        if lease_id == 0:
            raise LeaseNotFoundError()
        if lease_id in self._leases:
            raise LeaseExistsError()
        if ttl > MAX_LEASE_TTL:
            raise LeaseTTLTooLargeError()
        ttl = max(ttl, MIN_LEASE_TTL)
        self._leases[lease_id] = _Lease(ttl=ttl, deadline=now + ttl,
                                        epoch=self._store.view_epoch)
        return ttl

    def revoke(self, lease_id: int) -> int:
        lease = self._get(lease_id)
        # One write transaction, keys in sorted order: the same revision and the same event
        # order on every member.
        txn = self._store.write()
        for key in sorted(lease.keys):
            txn.delete_range(key, None)
        del self._leases[lease_id]
        return txn.end()

    def keepalive(self, lease_id: int, now: float) -> int:
        lease = self._get(lease_id)
        lease.deadline = now + lease.ttl
        return lease.ttl

    def time_to_live(self, lease_id: int, now: float) -> tuple[int, int, list[bytes]]:
        lease = self._get(lease_id)
        return lease.ttl, max(0, int(lease.deadline - now)), sorted(lease.keys)

    def leases(self) -> list[int]:
        return sorted(self._leases)

    def expired(self, now: float) -> list[int]:
        """Ids whose deadline is at or before ``now`` (etcd: remaining <= 0), most overdue
        first, ties by id."""
        due = [(lease.deadline, lid) for lid, lease in self._leases.items()
               if lease.deadline <= now]
        due.sort()
        return [lid for _, lid in due]

    def promote(self, now: float) -> None:
        for lease in self._leases.values():
            lease.deadline = now + lease.ttl

    # -- used by the store ---------------------------------------------------------------

    def _own_keys(self, lease: _Lease) -> set[bytes]:
        """``lease.keys`` ready to be changed (copied first if a view may hold it)."""
        epoch = self._store.view_epoch
        if lease.epoch != epoch:
            lease.keys = set(lease.keys)
            lease.epoch = epoch
        return lease.keys

    def attach(self, lease_id: int, key: bytes) -> None:
        self._own_keys(self._leases[lease_id]).add(key)

    def detach(self, lease_id: int, key: bytes) -> None:
        lease = self._leases.get(lease_id)
        if lease is not None and key in lease.keys:
            self._own_keys(lease).discard(key)

    def lease_of(self, key: bytes) -> int:
        """The lease the key's live version is attached to (0: none or no such key)."""
        entry = self._store.index.get(key)
        v = latest_live(entry) if entry is not None else None
        return v[LEASE] if v is not None else 0

    def dump(self) -> list[list[Any]]:
        """Replicated lease state for a snapshot: [id, ttl, sorted keys] by id."""
        return [[lid, self._leases[lid].ttl, sorted(self._leases[lid].keys)]
                for lid in sorted(self._leases)]

    def capture(self) -> list[tuple[int, int, set[bytes]]]:
        """What ``dump`` returns, as cheaply as possible for ``KVStore.snapshot_view``:
        (id, ttl, attached keys unsorted) by id, sharing each key set (the caller bumps the
        store's view epoch, so the sets are copied before they change). The snapshot writer
        sorts the keys later, outside the store's thread."""
        leases = self._leases
        return [(lid, leases[lid].ttl, leases[lid].keys) for lid in sorted(leases)]

    def load(self, leases: list[list[Any]], now: float | None = None) -> None:
        """Replace the leases with a ``dump``; deadlines restart at now + TTL."""
        t = time.monotonic() if now is None else now
        self._leases = {
            int(lid): _Lease(ttl=int(ttl), deadline=t + int(ttl), keys=set(keys),
                             epoch=self._store.view_epoch)
            for lid, ttl, keys in leases
        }
