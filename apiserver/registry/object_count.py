"""``apiserver_storage_objects``: a periodic count of the stored objects of every resource
(upstream's storage object count tracker, once a minute by default)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from apiserver import status
from apiserver.metrics import STORAGE_OBJECTS
from apiserver.registry.generic import GenericStore
from storage import keys
from storage.errors import StorageError

if TYPE_CHECKING:
    from apiserver.registry.interface import RESTStore

log = logging.getLogger(__name__)


class ObjectCounter:
    def __init__(self, stores: Mapping[tuple[str, str, str], RESTStore], *,
                 interval: float = 60.0) -> None:
        self._targets: dict[str, tuple[str, GenericStore]] = {}
        for (_g, _v, res), store in stores.items():
            if "/" in res or not isinstance(store, GenericStore):
                continue
            prefix = keys.resource_prefix(store.key_group, store.resource) + "/"
            label = status.qualified_resource(store.resource, store.key_group)
            self._targets.setdefault(prefix, (label, store))
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    async def update_once(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for prefix, (label, store) in self._targets.items():
            try:
                n = await store.storage.count(prefix)
            except StorageError as e:
                log.warning("counting %s failed: %s", label, e.message)
                continue
            STORAGE_OBJECTS.labels(resource=label).set(n)
            counts[label] = n
        return counts

    async def _run(self) -> None:
        while True:
            await self.update_once()
            await asyncio.sleep(self._interval)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="storage-object-count")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
