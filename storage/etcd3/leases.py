"""Leases for keys written with a TTL (events, ``--event-ttl``), shared between writes as
upstream's etcd3 lease manager shares them: one lease serves every write of a short window,
so a burst of events costs one LeaseGrant, not one each.

A lease granted at ``t`` for ``ttl + reuse`` seconds is reused by a write at ``now`` asking
for ``ttl`` while it outlives ``now + ttl`` (the key lives at least as long as asked) and
expires before ``now + ttl + reuse`` (at most ``reuse`` longer), for at most
``MAX_OBJECTS`` writes. ``reuse`` is 5% of the TTL, at most 60 s (upstream's defaults).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Final

REUSE_SECONDS: Final = 60
REUSE_PERCENT: Final = 0.05
MAX_OBJECTS: Final = 1000


class LeaseManager:
    def __init__(self, grant: Callable[[int], Awaitable[int]], *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._grant = grant
        self._clock = clock
        self._lock = asyncio.Lock()
        self._lease_id = 0
        self._expires = 0.0
        self._ttl = 0
        self._attached = 0

    @staticmethod
    def reuse_seconds(ttl: int) -> int:
        return min(int(REUSE_PERCENT * ttl), REUSE_SECONDS)

    async def lease_for(self, ttl: int) -> int:
        """A lease id living at least ``ttl`` seconds from now. Raises what ``grant``
        raises (KVError)."""
        async with self._lock:
            now = self._clock()
            reuse = self.reuse_seconds(ttl)
            self._attached += 1
            if (self._lease_id and now + ttl < self._expires <= now + ttl + reuse
                    and self._attached <= MAX_OBJECTS):
                return self._lease_id
            lease_id = await self._grant(ttl + reuse)
            self._lease_id, self._expires, self._attached = lease_id, now + ttl + reuse, 1
            return lease_id
