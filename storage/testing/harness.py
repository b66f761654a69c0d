"""What a conformance case gets: the store under test, a way to compact the history under
it, and a key prefix of its own (so cases can share one cluster)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from storage.interface import Interface, Object, Watcher, WatchEvent

EVENT_TIMEOUT: Final = 15.0  # a guard against hangs, never an assertion on timing


@dataclass(slots=True, kw_only=True)
class Harness:
    store: Interface
    # compact the history of the store under ``store`` up to a revision (for a cache: the
    # store it caches).
    compact: Callable[[int], Awaitable[None]]
    prefix: str = field(default_factory=lambda: f"/registry/conf{uuid.uuid4().hex[:12]}")
    watchers: list[Watcher] = field(default_factory=list)

    def key(self, ns: str, name: str) -> str:
        return f"{self.prefix}/{ns}/{name}"

    def ns_prefix(self, ns: str) -> str:
        return f"{self.prefix}/{ns}"

    async def put(self, ns: str, name: str, **fields: Any) -> Object:
        return await self.store.create(self.key(ns, name), obj(ns, name, **fields))

    def close(self) -> None:
        for w in self.watchers:
            w.stop()


def obj(ns: str, name: str, *, labels: dict[str, str] | None = None, uid: str = "",
        **fields: Any) -> Object:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid or f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    out: Object = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    out.update(fields)
    return out


def rv(o: Object) -> int:
    return int(o["metadata"]["resourceVersion"])


def name(o: Object) -> str:
    return str(o["metadata"]["name"])


class Events:
    """Reads a watcher one event at a time, with a guard timeout."""

    def __init__(self, w: Watcher) -> None:
        self.w = w
        self.it: AsyncIterator[WatchEvent] = w.__aiter__()

    async def next(self) -> WatchEvent:
        return await asyncio.wait_for(self.it.__anext__(), EVENT_TIMEOUT)

    async def next_non_bookmark(self) -> WatchEvent:
        while True:
            ev = await self.next()
            if ev.type != "BOOKMARK":
                return ev

    async def take(self, n: int) -> list[WatchEvent]:
        return [await self.next_non_bookmark() for _ in range(n)]

    async def ended(self) -> bool:
        try:
            await asyncio.wait_for(self.it.__anext__(), EVENT_TIMEOUT)
        except StopAsyncIteration:
            return True
        return False
