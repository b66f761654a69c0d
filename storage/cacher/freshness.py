"""``Freshness``: when the watch cache may answer a read that asks for a revision (upstream
``cacher.go`` waitUntilFreshAndBlock, ``watch_progress.go`` conditionalProgressRequester).

A read at "not older than N" waits for the cache to reach N; a consistent read (no
resourceVersion) first reads the store's current revision, then waits for the cache to reach
it. An idle prefix reaches a revision written elsewhere only through a progress notification
of the backend watch (a BOOKMARK at the store's revision, ordered after every event below it).

The store round trips are shared (``nextcall.NextCall``): every read waiting at one moment uses
one revision read and one progress request, each begun after the read arrived, which is what
makes the shared answer as good as one's own (see nextcall.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from storage.cacher.nextcall import NextCall
from storage.errors import Code, StorageError
from storage.interface import ProgressRequester

if TYPE_CHECKING:
    from storage.cacher.watch_cache import WatchCache
    from storage.interface import Interface, Watcher

# How long a read waits for the cache to reach a revision (upstream blockTimeout, 3 s).
WAIT_TIMEOUT: Final = 3.0
# A consistent read waits this long for the cache when the backend cannot be asked for a
# progress notification, then goes to the backend.
NO_PROGRESS_WAIT: Final = 0.01
# How often a waiting consistent read asks the backend for progress again.
PROGRESS_PERIOD: Final = 0.1
# Before a revision read that follows a shared one, the loop goes round this many times (at
# most GATHER_LIMIT seconds) so that reads already received share it (nextcall.py).
GATHER_TURNS: Final = 8
GATHER_LIMIT: Final = 0.005


def too_large(requested: int, current: int) -> StorageError:
    return StorageError(
        Code.TOO_LARGE_RESOURCE_VERSION,
        f"Too large resource version: {requested}, current: {current}",
        resource_version=requested,
        retry_after_seconds=1,
    )


class Freshness:
    """Waits of one cacher's reads. ``watch`` returns the backend watch of the moment (None
    while it restarts); progress is requested on it."""

    def __init__(self, cache: WatchCache, backend: Interface,
                 watch: Callable[[], Watcher | None], *,
                 wait_timeout: float = WAIT_TIMEOUT) -> None:
        self._cache = cache
        self._backend = backend
        self._watch = watch
        self._wait_timeout = wait_timeout
        self._revision = NextCall(backend.current_revision, gather_turns=GATHER_TURNS,
                                  gather_limit=GATHER_LIMIT)
        self._progress = NextCall(self._request_progress)
        self.progress_ok = True  # the last progress request's outcome

    async def close(self) -> None:
        await self._revision.close()
        await self._progress.close()

    async def reach(self, rv: int) -> bool:
        """Wait for the cache to reach ``rv``: True when it did, False when the store has
        ``rv`` but the cache cannot show it soon (the caller then reads from the store),
        TOO_LARGE_RESOURCE_VERSION when neither has it after ``wait_timeout``.

        A version taken from another resource is reached through a progress notification,
        requested as for a consistent read; a store without progress support (etcd before
        3.4.31) never gets this cache there, so such reads go to the store at once."""
        if rv <= self._cache.rv:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._wait_timeout
        if await self.wait_until(rv, patient=False, deadline=deadline):
            return True
        current = await self._revision()
        if current >= rv:
            return False
        # a version from the future: wait for it to happen
        if await self.wait_until(rv, patient=True, deadline=deadline):
            return True
        current = await self._revision()
        if current >= rv:
            return False
        raise too_large(rv, current)

    async def wait_fresh(self, *, no_progress_wait: float = NO_PROGRESS_WAIT) -> bool:
        """Wait until the cache reflects the backend's current revision (a consistent read
        from memory, upstream ConsistentListFromCache); False if it did not in time. The
        revision is read after this call began (shared with the reads waiting with it), so
        every write acknowledged before is in the cache when this returns True."""
        target = await self._revision()
        return await self.wait_until(target, patient=False, no_progress_wait=no_progress_wait)

    async def wait_until(self, target: int, *, patient: bool, deadline: float | None = None,
                         no_progress_wait: float = NO_PROGRESS_WAIT) -> bool:
        """Wait until the cache reaches ``target``; False if it did not within
        ``wait_timeout``. While waiting, a progress notification is requested every 100 ms
        (upstream's conditionalProgressRequester), so an idle prefix catches up at once; the
        request is shared by the reads waiting at the same moment (it is sent after each of
        them read its target, so its bookmark covers all). Without progress support, a
        ``patient`` wait still waits ``wait_timeout`` for events; otherwise it waits
        ``no_progress_wait`` at most (the caller then reads from the store)."""
        cache = self._cache
        if cache.rv >= target:
            return True
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = loop.time() + self._wait_timeout
        while True:
            supported = await self._progress()
            remaining = deadline - loop.time()
            if not supported:
                limit = remaining if patient else no_progress_wait
                return await cache.wait_for(target, max(min(limit, remaining), 0.0))
            if await cache.wait_for(target, min(PROGRESS_PERIOD, max(remaining, 0.0))):
                return True
            if loop.time() >= deadline:
                return False

    async def _request_progress(self) -> bool:
        """Ask the backend watch for a progress notification; False when it cannot promise
        one (no watch at the moment, or e.g. etcd before 3.4.31)."""
        bw = self._watch()
        ok = isinstance(bw, ProgressRequester)
        if ok:
            try:
                await bw.request_progress()  # type: ignore[union-attr]
            except StorageError:
                ok = False
        self.progress_ok = ok
        return ok

